package kernel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestElementwise: the active SumSqF64, ScaleMulF32 and AddF32 give the
// bits of their generic loops over lengths with and without
// tails, with outputs aliasing an input and guard floats untouched;
// SumSqF64 is within rounding of the exact sum of squares.
func TestElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	bits := func(x []float32) []uint32 {
		b := make([]uint32, len(x))
		for i, v := range x {
			b[i] = math.Float32bits(v)
		}
		return b
	}
	for _, n := range []int{0, 1, 7, 8, 9, 33, 2048, 2053} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()*10), float32(r.NormFloat64())
		}
		if n > 8 {
			a[3], b[4] = float32(math.Copysign(0, -1)), float32(math.Inf(1))
		}
		var exact float64
		for _, v := range a {
			exact += float64(v) * float64(v)
		}
		if got := SumSqF64(a); math.Abs(got-exact) > 1e-6*(1+exact) {
			t.Errorf("n=%d: SumSqF64 %g, exact %g", n, got, exact)
		}
		if m := n &^ 7; m > 0 {
			var al, gl [8]float64
			sumSqLanes(a[:m], &al)
			sumSqLanesGeneric(a[:m], &gl)
			if al != gl {
				t.Errorf("n=%d: SumSqF64 lanes %v, generic %v", n, al, gl)
			}
		}
		ops := []struct {
			name       string
			fast, spec func(out, a, b []float32)
		}{
			{"ScaleMulF32", func(o, a, b []float32) { ScaleMulF32(o, a, b, 0.731) }, func(o, a, b []float32) { scaleMulF32Generic(o, a, b, 0.731) }},
			{"AddF32", AddF32, addF32Generic},
		}
		for _, op := range ops {
			want := make([]float32, n)
			op.spec(want, a, b)
			got := append(make([]float32, n), 42)
			op.fast(got[:n], a, b)
			in := append([]float32(nil), a...) // out aliasing a
			op.fast(in, in, b)
			if g, w, i := bits(got[:n]), bits(want), bits(in); !slices.Equal(g, w) || !slices.Equal(i, w) || got[n] != 42 {
				t.Errorf("n=%d: %s differs from its generic loop (or wrote past the end)", n, op.name)
			}
		}
	}
}

// TestReductions: the active MaxF32, SumF64 and ScaleF32 give the bits of
// their generic lanes over lengths with and without tails, -Inf entries
// (masked positions) and ±0; MaxF32 is the maximum and SumF64 within
// rounding of the exact sum.
func TestReductions(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	inf := float32(math.Inf(-1))
	for _, n := range []int{0, 1, 7, 8, 9, 33, 1000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 10)
		}
		if n > 8 {
			x[2], x[5], x[7] = inf, 0, float32(math.Copysign(0, -1))
		}
		m := n &^ 7
		gotMax, gotSum := MaxF32(x), SumF64(x)
		want, exact := negInf, 0.0
		for _, v := range x {
			want = max(want, v)
			if !math.IsInf(float64(v), 0) {
				exact += float64(v)
			}
		}
		if gotMax != want {
			t.Errorf("n=%d: MaxF32 %g, want %g", n, gotMax, want)
		}
		if n > 8 {
			if !math.IsInf(gotSum, -1) {
				t.Errorf("n=%d: SumF64 with a -Inf entry = %g", n, gotSum)
			}
			x[2] = 1
			exact++
			gotSum = SumF64(x)
		}
		if math.Abs(gotSum-exact) > 1e-9*(1+math.Abs(exact)) {
			t.Errorf("n=%d: SumF64 %g, exact %g", n, gotSum, exact)
		}
		// The active lanes equal the generic ones, bit for bit.
		var am [8]float32
		var as [8]float64
		for j := range am {
			am[j] = negInf
		}
		if m > 0 {
			maxLanes(x[:m], &am)
			sumLanes(x[:m], &as)
			var gm [8]float32
			var gs [8]float64
			for j := range gm {
				gm[j] = negInf
			}
			maxLanesGeneric(x[:m], &gm)
			sumLanesGeneric(x[:m], &gs)
			for j := range 8 {
				if math.Float32bits(am[j]) != math.Float32bits(gm[j]) || math.Float64bits(as[j]) != math.Float64bits(gs[j]) {
					t.Fatalf("n=%d lane %d: max %g/%g, sum %g/%g (active/generic)", n, j, am[j], gm[j], as[j], gs[j])
				}
			}
		}
		y, z := append([]float32(nil), x...), append([]float32(nil), x...)
		ScaleF32(y, 0.37)
		scaleF32Generic(z, 0.37)
		for i := range y {
			if math.Float32bits(y[i]) != math.Float32bits(z[i]) {
				t.Fatalf("n=%d: ScaleF32 entry %d = %g, generic %g", n, i, y[i], z[i])
			}
		}
	}
}
