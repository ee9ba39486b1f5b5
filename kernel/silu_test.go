package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSiLU: the active SiLU gives the generic loop's bits, over a sweep of
// [-120, 120] (through Exp's range limits at ±87/88), special values, and
// lengths that leave tails, with guard floats untouched.
func TestSiLU(t *testing.T) {
	var vals []float32
	for v := float32(-120); v <= 120; v += 0.0137 {
		vals = append(vals, v)
	}
	inf := float32(math.Inf(1))
	vals = append(vals, 0, float32(math.Copysign(0, -1)), inf, -inf, float32(math.NaN()), 87, -87, 88, -88,
		math.Nextafter32(87, 100), math.Nextafter32(-88, -100), 1e-30, -1e-30, math.MaxFloat32, -math.MaxFloat32)
	r := rand.New(rand.NewPCG(3, 5))
	for range 5000 {
		vals = append(vals, float32(r.NormFloat64()*4))
	}
	r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	for _, n := range []int{len(vals), 1, 7, 8, 9, 63, 200} {
		got := append(append([]float32(nil), vals[:n]...), 42)
		want := append([]float32(nil), vals[:n]...)
		SiLU(got[:n])
		siluGeneric(want)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: SiLU(%g) = %g (%#x), generic %g (%#x)", n, vals[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
		if got[n] != 42 {
			t.Fatalf("n=%d: wrote past the end", n)
		}
	}
}

func BenchmarkSiLU(b *testing.B) {
	x := make([]float32, 8192)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]float32, len(x))
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		copy(y, x)
		SiLU(y)
	}
}
