package compute

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

func TestRMSNorm(t *testing.T) {
	x := []float32{1, -2, 3, 4}
	w := []float32{1, 2, 0.5, -1}
	out := make([]float32, 4)
	RMSNorm(out, x, w, 1e-5)
	rms := math.Sqrt((1+4+9+16)/4.0 + 1e-5)
	for i := range x {
		if want := float64(x[i]) / rms * float64(w[i]); !near(float64(out[i]), want, 1e-6) {
			t.Errorf("out[%d] = %g, want %g", i, out[i], want)
		}
	}
	RMSNorm(x, x, nil, 1e-5) // aliasing, no weight
	if !near(float64(x[3]), 4/rms, 1e-6) {
		t.Errorf("in place: x[3] = %g, want %g", x[3], 4/rms)
	}
}

func TestLayerNorm(t *testing.T) {
	x := []float32{1, 2, 3, 6}
	out := make([]float32, 4)
	LayerNorm(out, x, []float32{2, 2, 2, 2}, []float32{1, 1, 1, 1}, 0)
	mean, sd := 3.0, math.Sqrt((4+1+0+9)/4.0)
	for i := range x {
		if want := (float64(x[i])-mean)/sd*2 + 1; !near(float64(out[i]), want, 1e-6) {
			t.Errorf("out[%d] = %g, want %g", i, out[i], want)
		}
	}
}

func TestSoftmax(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    []float32
		want []float64
	}{
		{"plain", []float32{0, 1, 2}, []float64{0.09003057, 0.24472847, 0.66524096}},
		{"large", []float32{1000, 1001, 1002}, []float64{0.09003057, 0.24472847, 0.66524096}},
		{"masked", []float32{float32(math.Inf(-1)), 0, 0}, []float64{0, 0.5, 0.5}},
		{"all masked", []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, []float64{0, 0}},
		{"empty", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Softmax(tc.x)
			for i := range tc.want {
				if !near(float64(tc.x[i]), tc.want[i], 1e-6) {
					t.Errorf("x[%d] = %g, want %g", i, tc.x[i], tc.want[i])
				}
			}
		})
	}
}

func TestActivations(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func([]float32)
		in   float32
		want float64
	}{
		{"silu 0", SiLU, 0, 0},
		{"silu 1", SiLU, 1, 1 / (1 + math.Exp(-1))},
		{"silu -3", SiLU, -3, -3 / (1 + math.Exp(3))},
		{"gelu 0", GELU, 0, 0},
		{"gelu 1", GELU, 1, 0.8411919906082768},
		{"gelu -2", GELU, -2, -0.04540230591222288},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := []float32{tc.in}
			tc.fn(x)
			if !near(float64(x[0]), tc.want, 1e-6) {
				t.Errorf("got %g, want %g", x[0], tc.want)
			}
		})
	}
	a, b, out := []float32{1, 2}, []float32{3, -4}, make([]float32, 2)
	Add(out, a, b)
	if out[0] != 4 || out[1] != -2 {
		t.Errorf("Add = %v", out)
	}
	Mul(out, a, b)
	if out[0] != 3 || out[1] != -8 {
		t.Errorf("Mul = %v", out)
	}
	Scale(out, 0.5)
	if out[0] != 1.5 || out[1] != -4 {
		t.Errorf("Scale = %v", out)
	}
}

// TestRoPE checks both modes against rotating complex numbers.
func TestRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const numHeads, headDim, ropeDim, pos = 3, 10, 8, 17
	const base = 10000
	factors := []float32{1, 2, 4, 8}
	for _, neox := range []bool{false, true} {
		for _, ff := range [][]float32{nil, factors} {
			x := randNormal(r, numHeads*headDim, 1)
			orig := append([]float32(nil), x...)
			RoPE(x, numHeads, headDim, ropeDim, pos, base, neox, ff)
			for h := range numHeads {
				for i := range ropeDim / 2 {
					a, b := h*headDim+2*i, h*headDim+2*i+1
					if neox {
						a, b = h*headDim+i, h*headDim+i+ropeDim/2
					}
					theta := pos * math.Pow(base, -2*float64(i)/ropeDim)
					if ff != nil {
						theta /= float64(ff[i])
					}
					c, s := math.Cos(theta), math.Sin(theta)
					wa := float64(orig[a])*c - float64(orig[b])*s
					wb := float64(orig[a])*s + float64(orig[b])*c
					if !near(float64(x[a]), wa, 1e-5) || !near(float64(x[b]), wb, 1e-5) {
						t.Fatalf("neox=%v head %d pair %d: (%g,%g), want (%g,%g)", neox, h, i, x[a], x[b], wa, wb)
					}
				}
				for d := ropeDim; d < headDim; d++ {
					if x[h*headDim+d] != orig[h*headDim+d] {
						t.Fatalf("dim %d past ropeDim changed", d)
					}
				}
			}
		}
	}
}

// TestRotary: Apply gives RoPE's bits over a sequence of calls that keeps
// or changes each of the angles' inputs, and allocates nothing while they
// stay.
func TestRotary(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const numHeads, headDim = 3, 16
	ffA, ffB := []float32{1, 2, 4, 8, 1, 1, 1, 1}, []float32{1, 2, 4, 8, 1, 1, 1, 1}
	var rot Rotary
	for k, c := range []struct {
		pos, ropeDim int
		base         float32
		neox         bool
		ff           []float32
	}{
		{5, 16, 10000, false, nil}, {5, 16, 10000, true, nil}, {6, 16, 10000, false, nil}, {6, 8, 10000, false, nil},
		{6, 8, 500000, false, nil}, {6, 16, 500000, false, ffA}, {6, 16, 500000, false, ffB}, {6, 16, 500000, false, ffB},
		{7, 16, 10000, true, nil},
	} {
		x := randNormal(r, numHeads*headDim, 1)
		want := append([]float32(nil), x...)
		RoPE(want, numHeads, headDim, c.ropeDim, c.pos, c.base, c.neox, c.ff)
		rot.Apply(x, numHeads, headDim, c.ropeDim, c.pos, c.base, c.neox, c.ff)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
				t.Fatalf("call %d: x[%d] = %g, RoPE gives %g", k, i, x[i], want[i])
			}
		}
	}
	x := randNormal(r, numHeads*headDim, 1)
	if a := testing.AllocsPerRun(20, func() { rot.Apply(x, numHeads, headDim, 16, 7, 10000, true, nil) }); a != 0 {
		t.Errorf("%v allocations per call at the same position", a)
	}
}

// TestSwiGLUOAI: gpt-oss's unit at hand-picked points, the clamps
// included (gate above 7 is cut to 7; up is cut to ±7).
func TestSwiGLUOAI(t *testing.T) {
	for _, tc := range []struct{ gate, up, want float64 }{
		{0, 5, 0},
		{1, 0, 1 / (1 + math.Exp(-1.702))},
		{-2, 1, -2 / (1 + math.Exp(3.404)) * 2},
		{9, 0.5, 7 / (1 + math.Exp(-1.702*7)) * 1.5},  // gate capped
		{3, -20, 3 / (1 + math.Exp(-1.702*3)) * (-6)}, // up clamped below
		{3, 20, 3 / (1 + math.Exp(-1.702*3)) * 8},     // and above
		{-30, 2, -30 / (1 + math.Exp(1.702*30)) * 3},  // no lower cap on the gate
	} {
		g, u := []float32{float32(tc.gate)}, []float32{float32(tc.up)}
		SwiGLUOAI(g, u)
		if !near(float64(g[0]), tc.want, 1e-6) {
			t.Errorf("SwiGLUOAI(%g, %g) = %g, want %g", tc.gate, tc.up, g[0], tc.want)
		}
	}
}

// TestSoftmaxSink: the weights are those of a softmax over x and the sink,
// without the sink's slot.
func TestSoftmaxSink(t *testing.T) {
	x := []float32{1, 3, -2}
	SoftmaxSink(x, 2.5)
	den := math.Exp(1) + math.Exp(3) + math.Exp(-2) + math.Exp(2.5)
	for i, v := range []float64{1, 3, -2} {
		if want := math.Exp(v) / den; !near(float64(x[i]), want, 1e-6) {
			t.Errorf("x[%d] = %g, want %g", i, x[i], want)
		}
	}
	big := []float32{-100, -101} // the sink dominates: no overflow, tiny weights
	SoftmaxSink(big, 50)
	if big[0] != 0 && !(big[0] < 1e-30) {
		t.Errorf("a dominant sink left weight %g", big[0])
	}
}
