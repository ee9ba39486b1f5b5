package vae

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/tensor"
)

// The golden data of shared/golden/sd15 (README §3, §4.5, §4.6, §7):
// stable-diffusion.cpp's VAE on the random-weight sd15-rand checkpoint.

var (
	klMu     sync.Mutex
	klModels = map[string]*KL{}
)

// klVariants are the checkpoint variants the golden tests run: both, but
// only F16 on the plain-Go conv kernels (about 20 times slower).
func klVariants() []string {
	if conv.Kernel() == "generic" {
		return []string{"f16"}
	}
	return []string{"f16", "f32"}
}

func skipGeneric(t *testing.T) {
	if conv.Kernel() == "generic" {
		t.Skip("generic conv kernels: too slow for this size; the golden decode checks them")
	}
}

// klModel binds the VAE of the sd15-rand checkpoint variant ("f16" or
// "f32"), once per test binary.
func klModel(t testing.TB, variant string) *KL {
	t.Helper()
	klMu.Lock()
	defer klMu.Unlock()
	if k := klModels[variant]; k != nil {
		return k
	}
	sdtest.SkipGeneric(t, "the sd15-rand VAE")
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
	for _, variant := range klVariants() {
		t.Run(variant, func(t *testing.T) {
			k := klModel(t, variant)
			var peak int64
			start := time.Now()
			img, err := k.Decode(context.Background(), testPool, z, 32, 32, KLDecodeOptions{Peak: &peak})
			if err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			if variant == "f16" {
				untiledGolden.Do(func() { untiledGolden.img = img })
			}
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
	for _, variant := range klVariants() {
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

func TestPackedBytes(t *testing.T) {
	for _, s := range [][3]int{{512, 512, 3}, {4096, 512, 1}, {512, 4096, 1}, {3, 128, 3}, {8, 8, 1}, {96, 7, 3}, {1040, 512, 1}, {4, 4, 1}} {
		c, err := conv.NewConv(make([]float32, s[0]*s[1]*s[2]*s[2]), nil, s[0], s[1], s[2], 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := packedBytes(s[0], s[1], s[2]); got != c.Bytes() {
			t.Errorf("%v: packedBytes %d, conv holds %d", s, got, c.Bytes())
		}
	}
}

// randLatent is a deterministic latent with the golden latent's spread.
func randLatent(h, w int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	z := make([]float32, KLLatentChannels*h*w)
	for i := range z {
		z[i] = float32(r.NormFloat64() * 40)
	}
	return z
}

// TestKLDecodePlan checks the measured peak of decodes against the plan,
// byte for byte: the meter counts every arena at its high-water mark and
// the allocations outside them, the plan derives the same from the shapes.
func TestKLDecodePlan(t *testing.T) {
	k := klModel(t, "f16")
	cases := []struct{ h, w, tile, overlap int }{
		{8, 12, 0, 0},
		{5, 3, 0, 0},
		{12, 20, 12, 4},
	}
	for _, c := range cases {
		var peak int64
		if _, err := k.Decode(context.Background(), testPool, randLatent(c.h, c.w, 1), c.h, c.w, KLDecodeOptions{Tile: c.tile, Overlap: c.overlap, Peak: &peak}); err != nil {
			t.Fatal(err)
		}
		p, err := PlanKLDecode(c.h, c.w, c.tile, c.overlap)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: measured %d bytes", p, peak)
		if peak != p.Total {
			t.Errorf("%dx%d tile %d: measured peak %d bytes, plan %d", c.w, c.h, c.tile, peak, p.Total)
		}
		if got := KLDecodeBytes(c.h, c.w, p); got != p.Total {
			t.Errorf("KLDecodeBytes %d, plan %d", got, p.Total)
		}
	}
	// What the plan says of the sizes the engine decodes.
	for _, n := range []int{32, 64, 128} {
		whole, _ := PlanKLDecode(n, n, 0, 0)
		tiled, _ := PlanKLDecode(n, n, 32, 0)
		t.Logf("%d px: %v = %d MiB; %v = %d MiB", Scale*n, whole, whole.Total>>20, tiled, tiled.Total>>20)
		if n > 32 && tiled.Total >= whole.Total {
			t.Errorf("%d px: tiles of 256 px need %d bytes, untiled %d", Scale*n, tiled.Total, whole.Total)
		}
	}
	if p, err := ChooseKLTile(64, 64, 0, 600<<20); err != nil || p.Tile == 0 || p.Total > 600<<20 {
		t.Errorf("ChooseKLTile(512 px, 600 MiB) = %v, %v", p, err)
	}
	if _, err := ChooseKLTile(64, 64, 0, 32<<20); err == nil {
		t.Error("a 32 MiB budget for 512 px accepted: the latent-resolution part alone needs more")
	}
}

// untiledGolden is the F16 checkpoint's untiled decode of the golden
// latent, shared by the tests that compare with it.
var untiledGolden struct {
	sync.Once
	img []float32
	err error
}

func goldenDecode(t *testing.T, k *KL) []float32 {
	untiledGolden.Do(func() {
		untiledGolden.img, untiledGolden.err = k.Decode(context.Background(), testPool, goldenLatent(t), 32, 32, KLDecodeOptions{})
	})
	if untiledGolden.err != nil {
		t.Fatal(untiledGolden.err)
	}
	return untiledGolden.img
}

// TestKLTiledDecode decodes the golden latent in 4 tiles of 160 px (32 px
// overlap) and compares with the untiled decode and the golden PNG. Each
// tile's GroupNorms see only that tile, as in sd.cpp's --vae-tiling, so
// the difference is larger than rounding but far below a wrong decode
// (README §5: 25 dB for 1 step instead of 4).
func TestKLTiledDecode(t *testing.T) {
	skipGeneric(t)
	k := klModel(t, "f16")
	want8, _, _ := rgb8(readPNG(t, sd15Golden(t, "t2i_euler.png")))
	whole := goldenDecode(t, k)
	var peak int64
	tiled, err := k.Decode(context.Background(), testPool, goldenLatent(t), 32, 32, KLDecodeOptions{Tile: 20, Overlap: 4, Peak: &peak})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := PlanKLDecode(32, 32, 20, 4)
	if p.Tiles != 4 || peak != p.Total {
		t.Errorf("%v: measured peak %d, plan %d", p, peak, p.Total)
	}
	w8, t8 := KLBytes(whole), KLBytes(tiled)
	pw, pt := psnr(t8, w8), psnr(t8, want8)
	t.Logf("tiled vs untiled: PSNR %.2f dB, NMSE %.3g; tiled vs golden PNG: PSNR %.2f dB (untiled %.2f dB)", pw, nmse(whole, tiled), pt, psnr(w8, want8))
	if pw < 30 || pt < 30 {
		t.Errorf("tiled decode PSNR %.2f dB against untiled, %.2f dB against the golden PNG: want ≥ 30", pw, pt)
	}
}

// override is a Source with some tensors replaced, added or removed.
type override struct {
	checkpoint.Source
	set  map[string]*checkpoint.Tensor
	drop string
}

func (o override) Tensor(name string) (*checkpoint.Tensor, bool) {
	if name == o.drop {
		return nil, false
	}
	if t, ok := o.set[name]; ok {
		return t, true
	}
	return o.Source.Tensor(name)
}

func (o override) Names() []string {
	var out []string
	for _, n := range o.Source.Names() {
		if n != o.drop {
			out = append(out, n)
		}
	}
	for n := range o.set {
		if _, ok := o.Source.Tensor(n); !ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func TestNewKLErrors(t *testing.T) {
	f, err := checkpoint.Open(sdtest.SD15(t, "f16"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := checkpoint.SD1Components(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := c.VAE.Source
	f16 := func(shape ...int) *checkpoint.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return &checkpoint.Tensor{DType: tensor.F16, Shape: shape, Data: make([]byte, 2*n)}
	}
	cases := []struct {
		name  string
		src   checkpoint.Source
		is    error
		wants []string
	}{
		{"shape", override{Source: src, set: map[string]*checkpoint.Tensor{"decoder.mid.block_1.conv1.weight": f16(512, 256, 3, 3)}},
			checkpoint.ErrShape, []string{"load", `"decoder.mid.block_1.conv1.weight"`, "[512 256 3 3]", "[512 512 3 3]"}},
		{"attention", override{Source: src, set: map[string]*checkpoint.Tensor{"encoder.mid.attn_1.q.weight": f16(512, 512, 3, 3)}},
			checkpoint.ErrShape, []string{"load", `"encoder.mid.attn_1.q.weight"`, "[512 512 3 3]", "[512 512 1 1]"}},
		{"missing", override{Source: src, drop: "quant_conv.bias"},
			checkpoint.ErrMissing, []string{"load", `"quant_conv.bias"`, "missing"}},
		{"extra", override{Source: src, set: map[string]*checkpoint.Tensor{"decoder.up.4.block.0.conv1.weight": f16(128, 128, 3, 3)}},
			nil, []string{"load", "decoder.up.4.block.0.conv1.weight", "another VAE architecture"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewKL(c.src)
			if err == nil {
				t.Fatal("accepted")
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("%v: not %v", err, c.is)
			}
			if s, ok := pipeline.StageOf(err); !ok || s != pipeline.StageLoad {
				t.Errorf("%v: stage %q, want load", err, s)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
	// A [512, 512] linear projection (other converters' layout) is taken.
	lin := f16(512, 512)
	if _, err := NewKL(override{Source: src, set: map[string]*checkpoint.Tensor{"decoder.mid.attn_1.v.weight": lin}}); err != nil {
		t.Errorf("[512 512] attention projection refused: %v", err)
	}
}

func TestKLBadInput(t *testing.T) {
	k := klModel(t, "f16")
	ctx := context.Background()
	z := randLatent(4, 4, 2)
	nan := slices.Clone(z)
	nan[17] = float32(math.NaN())
	for _, c := range []struct {
		name string
		err  func() error
		want string
	}{
		{"short latent", func() error { _, err := k.Decode(ctx, nil, z[:60], 4, 4, KLDecodeOptions{}); return err }, "60 values"},
		{"zero size", func() error { _, err := k.Decode(ctx, nil, nil, 0, 4, KLDecodeOptions{}); return err }, "[4 0 4]"},
		{"NaN", func() error { _, err := k.Decode(ctx, nil, nan, 4, 4, KLDecodeOptions{}); return err }, "1 NaN"},
		{"tile", func() error { _, err := k.Decode(ctx, nil, z, 4, 4, KLDecodeOptions{Tile: 3, Overlap: 4}); return err }, "overlap"},
		{"odd image", func() error { _, _, err := k.Encode(ctx, nil, make([]float32, 3*20*16), 20, 16); return err }, "multiples of 8"},
		{"short image", func() error { _, _, err := k.Encode(ctx, nil, make([]float32, 10), 16, 16); return err }, "10 values"},
		{"sample", func() error { _, err := KLSample(z, z[:3], z); return err }, "logvar 3"},
	} {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestKLCancel cancels a decode and an encode from their first progress
// report: they stop before the next convolution with context.Canceled.
func TestKLCancel(t *testing.T) {
	k := klModel(t, "f16")
	for _, stage := range []pipeline.Stage{pipeline.StageDecode, pipeline.StageEncode} {
		ctx, cancel := context.WithCancel(context.Background())
		reports := 0
		ctx = pipeline.WithTrace(ctx, &pipeline.Trace{Progress: func(s pipeline.Stage, done, total int64) {
			reports++
			cancel()
		}})
		var err error
		if stage == pipeline.StageDecode {
			_, err = k.Decode(ctx, testPool, randLatent(16, 16, 3), 16, 16, KLDecodeOptions{})
		} else {
			_, _, err = k.Encode(ctx, testPool, make([]float32, 3*128*128), 128, 128)
		}
		if !errors.Is(err, context.Canceled) || reports != 1 {
			t.Errorf("%s: %v after %d reports, want context.Canceled after 1", stage, err, reports)
		}
		if s, ok := pipeline.StageOf(err); !ok || s != stage {
			t.Errorf("%s: error stage %q", stage, s)
		}
	}
}

// TestKLBytes checks the byte mapping at its edges (README §4.6).
func TestKLBytes(t *testing.T) {
	in := []float32{-2, -1, -0.99, 0, 0.5, 0.999, 1, 3, float32(math.NaN()), -1 + 2*0.5/255}
	want := []uint8{0, 0, 1, 128, 191, 255, 255, 255, 0, 1}
	if got := KLBytes(in); !slices.Equal(got, want) {
		t.Errorf("KLBytes(%v) = %v, want %v", in, got, want)
	}
	if got := KLImage([]uint8{0, 255, 51}); got[0] != -1 || got[1] != 1 || got[2] != float32(float32(51.0/255)*2-1) {
		t.Errorf("KLImage = %v", got)
	}
}

// BenchmarkKLDecode decodes random latents at 256² and 512² on 2 threads.
// go test ./vae -run '^$' -bench KLDecode -benchtime 1x
func BenchmarkKLDecode(b *testing.B) {
	k := klModel(b, "f16")
	for _, px := range []int{256, 512} {
		b.Run(fmt.Sprint(px), func(b *testing.B) {
			n := px / Scale
			z := randLatent(n, n, 5)
			c0 := cpuTime()
			for b.Loop() {
				if _, err := k.Decode(context.Background(), testPool, z, n, n, KLDecodeOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// TestKLEncodePlan checks the measured peak of encodes against the plan.
func TestKLEncodePlan(t *testing.T) {
	k := klModel(t, "f16")
	for _, s := range [][2]int{{64, 96}, {40, 24}} {
		img := make([]float32, 3*s[0]*s[1])
		for i := range img {
			img[i] = float32(i%17)/8 - 1
		}
		var peak int64
		if _, _, err := k.encodePeak(context.Background(), testPool, img, s[0], s[1], &peak); err != nil {
			t.Fatal(err)
		}
		p, err := PlanKLEncode(s[0], s[1])
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: measured %d bytes", p, peak)
		if peak != p.Total {
			t.Errorf("%dx%d: measured peak %d bytes, plan %d", s[1], s[0], peak, p.Total)
		}
	}
	for _, n := range []int{256, 512} {
		p, _ := PlanKLEncode(n, n)
		t.Logf("%v = %d MiB", p, p.Total>>20)
	}
	if _, err := PlanKLEncode(20, 16); err == nil {
		t.Error("a 16x20 image accepted")
	}
}

// TestKLWeightBytes: the plan's figure from the shapes is what the bound
// VAE holds, byte for byte, for the F16 file (binary16 kernels) and the
// F32 one.
func TestKLWeightBytes(t *testing.T) {
	for _, variant := range klVariants() {
		t.Run(variant, func(t *testing.T) {
			k := klModel(t, variant)
			f, err := checkpoint.Open(sdtest.SD15(t, variant))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c, err := checkpoint.SD1Components(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := KLWeightBytes(c.VAE.Source), k.WeightBytes(); got != want {
				t.Fatalf("KLWeightBytes %d, the bound VAE holds %d", got, want)
			}
			t.Logf("%s: %d MiB", variant, k.WeightBytes()>>20)
		})
	}
}
