package vae

import (
	"context"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// The golden data of shared/golden/sd15 (README §3, §4.5, §4.6, §7):
// stable-diffusion.cpp's VAE on the random-weight sd15-rand checkpoint.

var (
	klMu     sync.Mutex
	klModels = map[string]*KL{}
)

// klModel binds the VAE of the sd15-rand checkpoint variant ("f16" or
// "f32"), once per test binary.
func klModel(t testing.TB, variant string) *KL {
	t.Helper()
	klMu.Lock()
	defer klMu.Unlock()
	if k := klModels[variant]; k != nil {
		return k
	}
	f, err := checkpoint.Open(sdtest.SD15(t, variant))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := checkpoint.SD1Components(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	k, err := NewKL(c.VAE.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: VAE bound in %v, %d MiB packed", variant, time.Since(start).Round(time.Millisecond), k.WeightBytes()>>20)
	klModels[variant] = k
	return k
}

func sd15Golden(t testing.TB, name string) string {
	return filepath.Join(filepath.Dir(shared.Path(t, "golden/sd15/manifest.json")), name)
}

// nmse is Σ(a−b)²/Σa² (a the reference).
func nmse(ref, got []float32) float64 {
	var se, s2 float64
	for i := range ref {
		d := float64(ref[i]) - float64(got[i])
		se += d * d
		s2 += float64(ref[i]) * float64(ref[i])
	}
	return se / s2
}

// goldenLatent reads t2i_euler's final latent and divides it by the scale
// factor (README §4.6: the decoder's input).
func goldenLatent(t testing.TB) []float32 {
	z := readF32(t, sd15Golden(t, "t2i_euler.final_latent.f32"))
	if len(z) != KLLatentChannels*32*32 {
		t.Fatalf("final latent has %d values, want 4·32·32", len(z))
	}
	for i := range z {
		z[i] /= KLScaleFactor
	}
	return z
}

// TestKLDecodeGolden decodes t2i_euler's final latent with the F16 and the
// F32 checkpoint: against the decoded image (after (x+1)/2 and the clamp)
// max abs ≤ 0.02, against the PNG PSNR ≥ 50 dB (README §7).
func TestKLDecodeGolden(t *testing.T) {
	z := goldenLatent(t)
	wantImg := readF32(t, sd15Golden(t, "t2i_euler.decoded_image.f32"))
	want8, h, w := rgb8(readPNG(t, sd15Golden(t, "t2i_euler.png")))
	if h != 256 || w != 256 {
		t.Fatalf("golden PNG is %dx%d", w, h)
	}
	for _, variant := range []string{"f16", "f32"} {
		t.Run(variant, func(t *testing.T) {
			k := klModel(t, variant)
			var peak int64
			start := time.Now()
			img, err := k.Decode(context.Background(), testPool, z, 32, 32, KLDecodeOptions{Peak: &peak})
			if err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			if len(img) != 3*256*256 {
				t.Fatalf("decoded %d values", len(img))
			}
			scaled := make([]float32, len(img))
			for i, v := range img {
				scaled[i] = min(max((v+1)*0.5, 0), 1)
			}
			d := maxAbs(scaled, wantImg)
			e := nmse(wantImg, scaled)
			got8 := KLBytes(img)
			p := psnr(got8, want8)
			maxLSB := 0
			for i := range got8 {
				maxLSB = max(maxLSB, int(math.Abs(float64(int(got8[i])-int(want8[i])))))
			}
			t.Logf("decode 256² in %v (peak %d MiB): decoded_image max abs %.3g, NMSE %.3g; PNG PSNR %.2f dB, max %d levels",
				el.Round(time.Millisecond), peak>>20, d, e, p, maxLSB)
			if d > 0.02 {
				t.Errorf("decoded image max abs diff %g > 0.02", d)
			}
			if p < 50 {
				t.Errorf("PNG PSNR %.2f dB < 50", p)
			}
		})
	}
}

// TestKLEncodeGolden encodes i2i_astronaut_s060's init image and draws the
// posterior with sd.cpp's noise (Philox call 0 for seed 42, README §4.5:
// the same numbers as the initial noise, stored as noise.f32): the result
// against init_latent.f32, which holds that sample times 0.18215.
func TestKLEncodeGolden(t *testing.T) {
	in8, h, w := rgb8(readPNG(t, sd15Golden(t, "i2i_astronaut_s060.init.png")))
	want := readF32(t, sd15Golden(t, "i2i_astronaut_s060.init_latent.f32"))
	noise := readF32(t, sd15Golden(t, "i2i_astronaut_s060.noise.f32"))
	ph := make([]float32, len(noise))
	rng.NewPhilox(42).Randn(ph)
	for i := range ph {
		if math.Float32bits(ph[i]) != math.Float32bits(noise[i]) {
			t.Fatalf("Philox call 0 of seed 42 differs from noise.f32 at %d: %g, want %g", i, ph[i], noise[i])
		}
	}
	for _, variant := range []string{"f16", "f32"} {
		t.Run(variant, func(t *testing.T) {
			k := klModel(t, variant)
			start := time.Now()
			mean, logvar, err := k.Encode(context.Background(), testPool, KLImage(in8), h, w)
			if err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			if len(mean) != 4*(h/8)*(w/8) || len(logvar) != len(mean) {
				t.Fatalf("mean %d, logvar %d values", len(mean), len(logvar))
			}
			z, err := KLSample(mean, logvar, ph)
			if err != nil {
				t.Fatal(err)
			}
			e := nmse(want, z)
			var d, ref float64
			for i := range z {
				d = max(d, math.Abs(float64(z[i]-want[i])))
				ref = max(ref, math.Abs(float64(want[i])))
			}
			scaledMean := make([]float32, len(mean))
			for i, v := range mean {
				scaledMean[i] = v * KLScaleFactor
			}
			t.Logf("encode %dx%d in %v: init latent NMSE %.3g, max abs %.3g (of %.3g); the mean alone: NMSE %.3g",
				w, h, el.Round(time.Millisecond), e, d, ref, nmse(want, scaledMean))
			if e > 1e-4 {
				t.Errorf("init latent NMSE %.3g > 1e-4", e)
			}
		})
	}
}
