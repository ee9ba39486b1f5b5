package wan

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// tinyMap is the tiny DiT's F32 tensors as an in-memory source, each name
// under prefix and each tensor converted by conv (nil: as stored).
func tinyMap(t *testing.T, prefix string, conv func(*checkpoint.Tensor) *checkpoint.Tensor) *checkpoint.Map {
	t.Helper()
	f, err := checkpoint.Open(tinyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m := &checkpoint.Map{Label: "tiny " + prefix, Tensors: map[string]*checkpoint.Tensor{}}
	for _, name := range f.Names() {
		src, _ := f.Tensor(name)
		c := &checkpoint.Tensor{Name: prefix + name, DType: src.DType, Shape: slices.Clone(src.Shape), Data: slices.Clone(src.Data)}
		if conv != nil {
			c = conv(c)
		}
		m.Tensors[prefix+name] = c
	}
	return m
}

// roundTo returns a converter of F32 tensors to dt (F16 or BF16, nearest
// even), or, with widen, to F32 tensors holding those rounded values.
func roundTo(dt tensor.DType, widen bool) func(*checkpoint.Tensor) *checkpoint.Tensor {
	return func(c *checkpoint.Tensor) *checkpoint.Tensor {
		v, err := checkpoint.Float32s(c)
		if err != nil {
			panic(err)
		}
		out := make([]byte, 2*len(v))
		for i, x := range v {
			var h uint16
			if dt == tensor.F16 {
				h = kernel.FP32ToFP16(x)
				v[i] = kernel.FP16ToFP32(h)
			} else {
				h = kernel.FP32ToBF16(x)
				v[i] = kernel.BF16ToFP32(h)
			}
			binary.LittleEndian.PutUint16(out[2*i:], h)
		}
		if widen {
			out = make([]byte, 4*len(v))
			for i, x := range v {
				binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
			}
			return &checkpoint.Tensor{Name: c.Name, DType: tensor.F32, Shape: c.Shape, Data: out}
		}
		return &checkpoint.Tensor{Name: c.Name, DType: dt, Shape: c.Shape, Data: out}
	}
}

// tinyForward runs the golden input through m.
func tinyForward(t *testing.T, m *DiT) []float32 {
	t.Helper()
	p := compute.NewPool(2)
	defer p.Close()
	text, err := m.PrepareText(context.Background(), p, readF32(t, "dit_tiny.context.f32"), 12)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 16*5*8*8)
	if err := m.Forward(context.Background(), p, out, readF32(t, "dit_tiny.x.f32"), 5, 8, 8, 937, text); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWeights: the same weights bound under ComfyUI's prefix give the same
// bits; F16 and BF16 weights give what their values widened to F32 give
// (the products are float32 either way), and stay near the F32 golden.
func TestWeights(t *testing.T) {
	want := readF32(t, "dit_tiny.out.f32")
	for _, c := range []struct {
		name       string
		src, twin  checkpoint.Source
		prefix     string
		vsGolden   float64 // rel L2 to the F32 golden at most
		vsTwin     float64 // rel L2 to the twin at most
		wantPrefix string
	}{
		{name: "comfyui", src: tinyMap(t, "model.diffusion_model.", nil), twin: tinyMap(t, "", nil), vsGolden: tinyRelL2, wantPrefix: "model.diffusion_model."},
		{name: "f16", src: tinyMap(t, "", roundTo(tensor.F16, false)), twin: tinyMap(t, "", roundTo(tensor.F16, true)), vsGolden: 2e-3, vsTwin: 1e-6},
		{name: "bf16", src: tinyMap(t, "", roundTo(tensor.BF16, false)), twin: tinyMap(t, "", roundTo(tensor.BF16, true)), vsGolden: 2e-2, vsTwin: 1e-6},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(c.src, 4)
			if err != nil {
				t.Fatal(err)
			}
			if m.Prefix() != c.wantPrefix {
				t.Errorf("prefix %q, want %q", m.Prefix(), c.wantPrefix)
			}
			twin, err := New(c.twin, 4)
			if err != nil {
				t.Fatal(err)
			}
			got, ref := tinyForward(t, m), tinyForward(t, twin)
			_, rt := compare(got, ref)
			_, rg := compare(got, want)
			t.Logf("rel L2 to the twin %.2e, to the F32 golden %.2e", rt, rg)
			if rt > c.vsTwin || rg > c.vsGolden {
				t.Errorf("rel L2 %.3g to the twin (at most %g), %.3g to the golden (at most %g)", rt, c.vsTwin, rg, c.vsGolden)
			}
		})
	}
}

// TestBindErrors: a file that is not a text-to-video Wan DiT, or one with a
// missing or misshapen tensor, fails naming the tensor and the shapes.
func TestBindErrors(t *testing.T) {
	for _, c := range []struct {
		name     string
		edit     func(m *checkpoint.Map)
		numHeads int
		want     []string
		is       error
	}{
		{"not wan", func(m *checkpoint.Map) { delete(m.Tensors, "patch_embedding.weight") }, 4,
			[]string{"patch_embedding.weight", "is this a Wan DiT"}, checkpoint.ErrMissing},
		{"missing", func(m *checkpoint.Map) { delete(m.Tensors, "blocks.1.cross_attn.norm_k.weight") }, 4,
			[]string{"blocks.1.cross_attn.norm_k.weight", "missing"}, checkpoint.ErrMissing},
		{"shape", func(m *checkpoint.Map) { m.Tensors["blocks.0.ffn.2.weight"].Shape = []int{256, 128} }, 4,
			[]string{"blocks.0.ffn.2.weight", "[256 128]", "[128 256]"}, checkpoint.ErrShape},
		{"patch", func(m *checkpoint.Map) { m.Tensors["patch_embedding.weight"].Shape = []int{128, 16, 1, 1, 4} }, 4,
			[]string{"patch_embedding.weight", "1×1×4", "1×2×2"}, checkpoint.ErrShape},
		{"heads", nil, 3, []string{"width 128 over 3 heads"}, nil},
		{"i2v", func(m *checkpoint.Map) {
			m.Tensors["blocks.0.cross_attn.k_img.weight"] = &checkpoint.Tensor{DType: tensor.F32, Shape: []int{1}, Data: make([]byte, 4)}
		}, 4, []string{"k_img", "image-to-video"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := tinyMap(t, "", nil)
			if c.edit != nil {
				c.edit(m)
			}
			_, err := New(m, c.numHeads)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
			var ce *checkpoint.Error
			if !errors.As(err, &ce) || ce.Stage() != "load" {
				t.Errorf("error %v is not a load-stage *checkpoint.Error", err)
			}
		})
	}
}

// TestForwardErrors: bad latents, texts and timesteps are refused with
// the numbers, and a cancelled call stops before the first block.
func TestForwardErrors(t *testing.T) {
	m := openDiT(t, tinyFile(t), 4)
	other := openDiT(t, tinyFile(t), 4)
	p := compute.NewPool(2)
	defer p.Close()
	bg := context.Background()
	text, err := m.PrepareText(bg, p, make([]float32, 3*64), 3)
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := other.PrepareText(bg, p, make([]float32, 3*64), 3)
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	lat := func(f, h, w int) []float32 { return make([]float32, 16*f*h*w) }
	for _, c := range []struct {
		name string
		run  func() error
		want string
		is   error
	}{
		{"odd height", func() error { return m.Forward(bg, p, lat(1, 3, 4), lat(1, 3, 4), 1, 3, 4, 1, text) }, "even height and width", nil},
		{"zero frames", func() error { return m.Forward(bg, p, nil, nil, 0, 4, 4, 1, text) }, "0×4×4", nil},
		{"short x", func() error { return m.Forward(bg, p, lat(1, 4, 4), lat(1, 4, 2), 1, 4, 4, 1, text) }, "x has 128 values (want 256)", nil},
		{"too wide", func() error { return m.Forward(bg, p, lat(1, 2, 2050), lat(1, 2, 2050), 1, 2, 2050, 1, text) }, "more than 1024 positions", nil},
		{"nan t", func() error { return m.Forward(bg, p, lat(1, 2, 2), lat(1, 2, 2), 1, 2, 2, math.NaN(), text) }, "timestep NaN", nil},
		{"foreign text", func() error { return m.Forward(bg, p, lat(1, 2, 2), lat(1, 2, 2), 1, 2, 2, 1, foreign) }, "another model", nil},
		{"nil text", func() error { return m.Forward(bg, p, lat(1, 2, 2), lat(1, 2, 2), 1, 2, 2, 1, nil) }, "another model", nil},
		{"cancelled", func() error { return m.Forward(cancelled, p, lat(1, 2, 2), lat(1, 2, 2), 1, 2, 2, 1, text) }, "block 0 of 2", context.Canceled},
		{"no rows", func() error { _, err := m.PrepareText(bg, p, nil, 0); return err }, "0 context rows (want 1..512)", nil},
		{"513 rows", func() error { _, err := m.PrepareText(bg, p, make([]float32, 513*64), 513); return err }, "513 context rows", nil},
		{"text width", func() error { _, err := m.PrepareText(bg, p, make([]float32, 2*4096), 2); return err }, "width 64 (want 128", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			var we *Error
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &we) || we.Stage() != "generate" {
				t.Fatalf("error %v, want a generate-stage *Error with %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
		})
	}
}

// TestPaddingKey: 12 prompt rows and one padding key weighted ln(500) give
// what the same rows padded with 500 zero rows by hand give (512 rows: no
// padding key).
func TestPaddingKey(t *testing.T) {
	m := openDiT(t, tinyFile(t), 4)
	p := compute.NewPool(2)
	defer p.Close()
	bg := context.Background()
	ctx12 := readF32(t, "dit_tiny.context.f32")
	full := make([]float32, TextLen*64)
	copy(full, ctx12)
	a, err := m.PrepareText(bg, p, ctx12, 12)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.PrepareText(bg, p, full, TextLen)
	if err != nil {
		t.Fatal(err)
	}
	if a.rows != 13 || b.rows != TextLen {
		t.Fatalf("key rows %d and %d, want 13 and 512", a.rows, b.rows)
	}
	x := readF32(t, "dit_tiny.x.f32")
	oa, ob := make([]float32, len(x)), make([]float32, len(x))
	if err := m.Forward(bg, p, oa, x, 5, 8, 8, 937, a); err != nil {
		t.Fatal(err)
	}
	if err := m.Forward(bg, p, ob, x, 5, 8, 8, 937, b); err != nil {
		t.Fatal(err)
	}
	mx, rel := compare(oa, ob)
	t.Logf("one padding key vs 500 zero rows: max |Δ| %.2e rel L2 %.2e", mx, rel)
	// The two forms are equal in exact arithmetic; in float32 they differ by
	// summation order (3.8e-7 on the assembly kernels, 5.1e-6 on the generic
	// twins under -tags purego). A wrong padding key gives ~1e-1; the golden
	// tolerance for the tiny DiT is 5e-5.
	if rel > 2e-5 {
		t.Errorf("rel L2 %.3g between the padding key and the padded rows", rel)
	}
}

// TestActivationBytes: one Forward and one PrepareText allocate about what
// the plan counts, at several latent sizes.
func TestActivationBytes(t *testing.T) {
	m := openDiT(t, tinyFile(t), 4)
	c := m.Config()
	p := compute.NewPool(1)
	defer p.Close()
	bg := context.Background()
	measure := func(f func()) int64 {
		f() // warm compute's pools
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return int64(after.TotalAlloc - before.TotalAlloc)
	}
	var text *Text
	got := measure(func() {
		var err error
		if text, err = m.PrepareText(bg, p, make([]float32, 20*64), 20); err != nil {
			t.Fatal(err)
		}
	})
	if want := c.TextBytes(20); got > want || got < want/2 {
		t.Errorf("PrepareText of 20 rows allocated %d bytes, planned %d", got, want)
	}
	for _, s := range [][3]int{{1, 2, 2}, {5, 8, 8}, {3, 32, 48}} {
		x := make([]float32, 16*s[0]*s[1]*s[2])
		out := make([]float32, len(x))
		got := measure(func() {
			if err := m.Forward(bg, p, out, x, s[0], s[1], s[2], 500, text); err != nil {
				t.Fatal(err)
			}
		})
		want := c.ActivationBytes(s[0], s[1], s[2])
		t.Logf("%d×%d×%d: allocated %d bytes, planned %d", s[0], s[1], s[2], got, want)
		if got > want || got < want/2 {
			t.Errorf("%d×%d×%d: allocated %d bytes, planned %d", s[0], s[1], s[2], got, want)
		}
	}
}

// TestGELU: gelu against its specification compute.GELU (float64 tanh) on
// a sweep through the range that matters and its tails, odd lengths
// included.
func TestGELU(t *testing.T) {
	p := compute.NewPool(2)
	defer p.Close()
	for _, n := range []int{1, 7, geluChunk + 3, 5000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i-n/2) * 24 / float32(n) // −12 .. 12
		}
		x[0] = -100
		if n > 1 {
			x[n-1] = 100
		}
		want := slices.Clone(x)
		compute.GELU(want)
		gelu(p, x)
		for i, w := range want {
			if d := math.Abs(float64(x[i] - w)); d > 4e-7*math.Max(1, math.Abs(float64(w))) || math.IsNaN(float64(x[i])) {
				t.Fatalf("n %d: gelu(%g) = %g, compute.GELU %g", n, float32(i-n/2)*24/float32(n), x[i], w)
			}
		}
	}
}

func BenchmarkGELU(b *testing.B) {
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(i%97)/16 - 3
	}
	p := compute.NewPool(1)
	defer p.Close()
	b.Run("compute.GELU", func(b *testing.B) {
		for b.Loop() {
			compute.GELU(x)
		}
	})
	b.Run("gelu", func(b *testing.B) {
		for b.Loop() {
			gelu(p, x)
		}
	})
}
