package unet

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/tensor"
)

// patched is a Source with one tensor replaced (nil: removed) and
// optionally one extra tensor.
type patched struct {
	checkpoint.Source
	name  string
	t     *checkpoint.Tensor
	extra string
}

func (p *patched) Tensor(name string) (*checkpoint.Tensor, bool) {
	if name == p.name {
		return p.t, p.t != nil
	}
	if name == p.extra && p.extra != "" {
		return &checkpoint.Tensor{Name: name, DType: tensor.F32, Shape: []int{1}, Data: make([]byte, 4)}, true
	}
	return p.Source.Tensor(name)
}

func (p *patched) Names() []string {
	names := p.Source.Names()
	if p.extra != "" {
		names = append(names, p.extra)
	}
	return names
}

// unetSource opens the F16 checkpoint's UNet view.
func unetSource(t *testing.T) checkpoint.Source {
	sdtest.NeedMemory(t, goldenMemory)
	f, err := checkpoint.Open(sdtest.SD15(t, "f16"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	c, err := checkpoint.SD1Components(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.UNet.Source
}

// TestNewBadTensors gives New a tensor of the wrong shape, a missing one
// and a foreign one: each is a load-stage error naming the tensor and, for
// a shape, the shape found and the shape wanted.
func TestNewBadTensors(t *testing.T) {
	src := unetSource(t)
	wrong := func(name string, shape ...int) *checkpoint.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return &checkpoint.Tensor{Name: name, DType: tensor.F16, Shape: shape, Data: make([]byte, 2*n)}
	}
	cases := []struct {
		name  string
		src   checkpoint.Source
		wants []string
	}{
		{"time_embed shape", &patched{Source: src, name: "time_embed.0.weight", t: wrong("time_embed.0.weight", 1280, 768)},
			[]string{"load:", `"time_embed.0.weight"`, "[1280 768]", "[1280 320]"}},
		// SD 2.x keeps proj_in as a linear layer (use_linear_in_transformer).
		{"proj_in as linear", &patched{Source: src, name: "input_blocks.1.1.proj_in.weight", t: wrong("input_blocks.1.1.proj_in.weight", 320, 320)},
			[]string{`"input_blocks.1.1.proj_in.weight"`, "[320 320]", "[320 320 1 1]"}},
		{"missing skip", &patched{Source: src, name: "input_blocks.4.0.skip_connection.weight"},
			[]string{`"input_blocks.4.0.skip_connection.weight"`, "missing"}},
		{"foreign tensor", &patched{Source: src, extra: "label_emb.0.0.weight"},
			[]string{`"label_emb.0.0.weight"`, "not part of an SD 1.x UNet"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := New(c.src)
			if err == nil {
				u.Close()
				t.Fatal("New succeeded")
			}
			var ce *checkpoint.Error
			if !errors.As(err, &ce) || ce.Stage() != "load" {
				t.Errorf("error %v is not a load-stage checkpoint.Error", err)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// countingCtx is a context whose Err reports cancellation from its
// (after+1)-th call on, counting the calls.
type countingCtx struct {
	context.Context
	after int64
	calls atomic.Int64
}

func (c *countingCtx) Err() error {
	if c.calls.Add(1) > c.after {
		return context.Canceled
	}
	return nil
}

// TestEpsCancel checks that Eps stops at the first check after the
// context is cancelled (one check before every block), with an error that
// is context.Canceled and says where, and that a cancelled context stops
// it before any block runs.
func TestEpsCancel(t *testing.T) {
	u := openUNet(t, "f16")
	p := compute.NewPool(2)
	defer p.Close()
	const h, w = 8, 8
	x, cond, eps := make([]float32, 4*h*w), make([]float32, 77*ctxDim), make([]float32, 4*h*w)
	for _, after := range []int64{0, 5, 20} {
		ctx := &countingCtx{Context: context.Background(), after: after}
		err := u.Eps(ctx, p, x, h, w, 999, cond, 77, eps)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after %d checks: error %v, want context.Canceled", after, err)
		}
		if n := ctx.calls.Load(); n != after+1 {
			t.Errorf("cancelled at check %d: Eps checked %d times, want %d (it must stop at the first check)", after+1, n, after+1)
		}
		if !strings.Contains(err.Error(), "before ") {
			t.Errorf("error %q does not say where it stopped", err)
		}
	}
	// A whole call checks often enough: between every block.
	ctx := &countingCtx{Context: context.Background(), after: 1 << 40}
	if err := u.Eps(ctx, p, x, h, w, 999, cond, 77, eps); err != nil {
		t.Fatal(err)
	}
	if n := ctx.calls.Load(); n < 25 {
		t.Errorf("a call checked the context %d times, want one check per block (≥ 25)", n)
	}
}

// TestEpsArgs checks the argument errors.
func TestEpsArgs(t *testing.T) {
	u := &UNet{} // arguments are checked before any weight is used
	x, cond := make([]float32, 4*64), make([]float32, 77*ctxDim)
	cases := []struct {
		name       string
		x          []float32
		h, w       int
		cond       []float32
		nctx       int
		eps        []float32
		t          float32
		wantInText string
	}{
		{"not a multiple of 8", x, 4, 16, cond, 77, x, 1, "multiples of 8"},
		{"latent length", x[:10], 8, 8, cond, 77, x, 1, "latent has 10 values"},
		{"output length", x, 8, 8, cond, 77, x[:3], 1, "output has room for 3"},
		{"context length", x, 8, 8, cond[:100], 77, x, 1, "context has 100 values"},
		{"no context", x, 8, 8, nil, 0, x, 1, "context"},
		{"timestep", x, 8, 8, cond, 77, x, float32(nan()), "timestep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := u.Eps(context.Background(), nil, c.x, c.h, c.w, c.t, c.cond, c.nctx, c.eps)
			var e *Error
			if !errors.As(err, &e) || e.Stage() != "generate" || !strings.Contains(err.Error(), c.wantInText) {
				t.Errorf("error %v, want a generate-stage error saying %q", err, c.wantInText)
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

// TestActivationBytes runs Eps at two sizes and checks ActivationBytes
// against what the call used: the feature maps' model against the arena's
// measured high-water mark exactly, and the total against the heap the
// first call allocated (at most 5 % above, and no less than the total
// without its transient allowance).
func TestActivationBytes(t *testing.T) {
	u := openUNet(t, "f16")
	p := compute.NewPool(2)
	defer p.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, z := range []struct{ h, w, nctx int }{{32, 32, 77}, {64, 64, 77}, {64, 64, 154}} {
		t.Logf("%dx%d latent, %d tokens: ActivationBytes %.1f MiB", z.h, z.w, z.nctx, mib(ActivationBytes(z.h, z.w, z.nctx)))
	}
	sizes := []struct{ h, w, nctx int }{{8, 8, 77}, {16, 24, 154}}
	if conv.Kernel() == "generic" {
		sizes = sizes[:1] // -tags purego: the small size only
	}
	for _, sz := range sizes {
		x, cond := make([]float32, 4*sz.h*sz.w), make([]float32, sz.nctx*ctxDim)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range cond {
			cond[i] = float32(rng.NormFloat64())
		}
		eps := make([]float32, len(x))
		u.Close() // drop the last size's state
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if err := u.Eps(context.Background(), p, x, sz.h, sz.w, 500, cond, sz.nctx, eps); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		alloc := int64(m1.TotalAlloc - m0.TotalAlloc)
		want := ActivationBytes(sz.h, sz.w, sz.nctx)
		peak := u.st.arena.Peak()
		t.Logf("%dx%d, %d tokens: ActivationBytes %.2f MiB, allocated %.2f MiB, maps %.2f MiB (model %.2f)",
			sz.h, sz.w, sz.nctx, mib(want), mib(alloc), mib(peak), mib(mapPeak(sz.h, sz.w)))
		if mp := mapPeak(sz.h, sz.w); mp != peak {
			t.Errorf("feature maps: model %d bytes, arena high-water %d", mp, peak)
		}
		// The transient part depends on what the kernels' pools already
		// hold; the rest must be there.
		if lo, hi := 0.95*float64(want-transientBytes), 1.05*float64(want); float64(alloc) < lo || float64(alloc) > hi {
			t.Errorf("ActivationBytes %d, the call allocated %d (want %.0f..%.0f)", want, alloc, lo, hi)
		}
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// TestGEGLU checks geglu against the float64 tanh form of GELU, including
// gates far out on both sides.
func TestGEGLU(t *testing.T) {
	const d = 40
	rng := rand.New(rand.NewPCG(9, 10))
	ff := make([]float32, 3*2*d)
	for i := range ff {
		ff[i] = float32(rng.NormFloat64() * 4)
	}
	ff[d], ff[d+1], ff[d+2], ff[d+3] = -1e4, 1e4, -30, 0
	out := make([]float32, 3*d)
	geglu(nil, out, ff, d)
	for i := range 3 {
		for j := range d {
			g, v := float64(ff[i*2*d+d+j]), float64(ff[i*2*d+j])
			want := v * 0.5 * g * (1 + math.Tanh(0.7978845608028654*(g+0.044715*g*g*g)))
			got := float64(out[i*d+j])
			if math.IsNaN(got) || math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Errorf("gate %g value %g: %g, want %g", g, v, got, want)
			}
		}
	}
}
