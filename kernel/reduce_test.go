package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

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
