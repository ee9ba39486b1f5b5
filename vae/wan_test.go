package vae

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/synth"
	"github.com/glassbox-ai/glassbox/tensor"
)

// wanVAEFile is the golden VAE weights (README §1: wan-vae-s2001-F32,
// 507,591,252 bytes), written once into the test cache folder.
func wanVAEFile(t testing.TB) string {
	t.Helper()
	sdtest.SkipGeneric(t, "the Wan VAE")
	dir, err := sdtest.Dir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "wan-vae-s2001-F32.safetensors")
	if fi, err := os.Stat(path); err == nil && fi.Size() == 507591252 {
		return path
	}
	t.Logf("generating %s", path)
	if err := synth.WriteWanFile(context.Background(), path, "vae", 2001, tensor.F32); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	wanOnce sync.Once
	wanVAE  *WanVAE
	wanErr  error
)

func wanModel(t testing.TB) *WanVAE {
	t.Helper()
	path := wanVAEFile(t)
	wanOnce.Do(func() {
		f, err := checkpoint.Open(path)
		if err != nil {
			wanErr = err
			return
		}
		defer f.Close()
		wanVAE, wanErr = NewWanVAE(f)
	})
	if wanErr != nil {
		t.Fatal(wanErr)
	}
	return wanVAE
}

func wanGolden(t testing.TB, name string) []float32 {
	return readF32(t, shared.Path(t, "golden/wan/"+name))
}

// wanDecodeAll decodes z and returns the video [3][F][H][W] as the goldens
// store it, checking that frames arrive in order.
func wanDecodeAll(t testing.TB, v *WanVAE, z []float32, tt, h, w int, peak *int64) []float32 {
	t.Helper()
	nf, plane := WanFrames(tt), WanScale*h*WanScale*w
	out := make([]float32, 3*nf*plane)
	next := 0
	err := v.DecodeFrames(context.Background(), testPool, z, tt, h, w, peak, func(f int, rgb []float32) error {
		if f != next || len(rgb) != 3*plane {
			t.Fatalf("frame %d of %d values, want frame %d of %d", f, len(rgb), next, 3*plane)
		}
		next++
		for c := range 3 {
			copy(out[(c*nf+f)*plane:(c*nf+f+1)*plane], rgb[c*plane:(c+1)*plane])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != nf {
		t.Fatalf("%d frames, want %d", next, nf)
	}
	return out
}

// wanCompare checks got against want within README §4's tolerances.
func wanCompare(t testing.TB, name string, got, want []float32, maxAbs, relL2 float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	var md, se, s2 float64
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		md = max(md, d)
		se += d * d
		s2 += float64(want[i]) * float64(want[i])
	}
	rel := math.Sqrt(se / s2)
	t.Logf("%s: max |Δ| %.3g, rel L2 %.3g", name, md, rel)
	if md > maxAbs || rel > relL2 || math.IsNaN(rel) {
		t.Errorf("%s: max |Δ| %.3g (limit %g), rel L2 %.3g (limit %g)", name, md, maxAbs, rel, relL2)
	}
}

// TestWanDecodeGolden decodes vae.latent [16,3,8,8] frame by frame: the
// emitted frames, stacked, against vae.decode_raw and, clamped, against
// vae.decode (README §3b; tolerances §4: max 3e-5, rel L2 1e-5).
func TestWanDecodeGolden(t *testing.T) {
	v := wanModel(t)
	z := wanGolden(t, "vae.latent.f32")
	got := wanDecodeAll(t, v, z, 3, 8, 8, nil)
	wanCompare(t, "decode_raw", got, wanGolden(t, "vae.decode_raw.f32"), 3e-5, 1e-5)
	WanClamp(got)
	wanCompare(t, "decode", got, wanGolden(t, "vae.decode.f32"), 3e-5, 1e-5)
}

// TestWanDecodeT2VTiny decodes the tiny text-to-video run's final latent
// [16,5,8,8] (5 latent frames: every cache full) to its 17 frames, clamped,
// against t2v_tiny.video with the VAE tolerances (README §4: decoding the
// stored final latent alone).
func TestWanDecodeT2VTiny(t *testing.T) {
	v := wanModel(t)
	got := wanDecodeAll(t, v, wanGolden(t, "t2v_tiny.final_latent.f32"), 5, 8, 8, nil)
	WanClamp(got)
	wanCompare(t, "t2v_tiny.video", got, wanGolden(t, "t2v_tiny.video.f32"), 3e-5, 1e-5)
}

// TestWanEncodeGolden encodes vae.decode [3,9,64,64] to the normalised mu
// against vae.encode_mu [16,3,8,8] (README §3b; §4: max 2e-5, rel L2 1e-5).
func TestWanEncodeGolden(t *testing.T) {
	f, err := checkpoint.Open(wanVAEFile(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, err := NewWanEncoder(f)
	if err != nil {
		t.Fatal(err)
	}
	mu, err := e.Encode(context.Background(), testPool, wanGolden(t, "vae.decode.f32"), 9, 64, 64)
	if err != nil {
		t.Fatal(err)
	}
	wanCompare(t, "encode_mu", mu, wanGolden(t, "vae.encode_mu.f32"), 2e-5, 1e-5)
}

// TestWanDecodeF16: the same VAE written in F16 (synth --type f16) binds
// (weights widened to float32) and decodes the golden latent close to the
// F32 file's output: the weights' binary16 rounding (relative 2^-11) moves
// it by about 1e-3 (rel L2), far from the 1.37 of another weight seed.
func TestWanDecodeF16(t *testing.T) {
	sdtest.SkipGeneric(t, "the Wan VAE")
	dir, err := sdtest.Dir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "wan-vae-s2001-F16.safetensors")
	if fi, err := os.Stat(path); err != nil || fi.Size() != 253806118 {
		if err := synth.WriteWanFile(context.Background(), path, "vae", 2001, tensor.F16); err != nil {
			t.Fatal(err)
		}
	}
	f, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v16, err := NewWanVAE(f)
	if err != nil {
		t.Fatal(err)
	}
	z := wanGolden(t, "vae.latent.f32")
	got := wanDecodeAll(t, v16, z, 3, 8, 8, nil)
	wanCompare(t, "F16 weights vs decode_raw", got, wanGolden(t, "vae.decode_raw.f32"), 0.01, 3e-3)
}
