package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSiLU: the active SiLU gives the generic loop's bits, and SiLUMul
// those bits times u's, over a sweep of [-120, 120] (through Exp's range
// limits at ±87/88), special values, and lengths that leave tails, with
// guard floats untouched.
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
	u := make([]float32, len(vals))
	for i := range u {
		u[i] = float32(r.NormFloat64() * 3)
	}
	u[5] = float32(math.Inf(1))
	for _, n := range []int{len(vals), 1, 7, 8, 9, 15, 16, 17, 33, 63, 200} {
		for _, mul := range []bool{false, true} {
			got := append(append([]float32(nil), vals[:n]...), 42)
			want := append([]float32(nil), vals[:n]...)
			siluGeneric(want)
			if mul {
				SiLUMul(got[:n], u)
				for i := range want {
					want[i] *= u[i]
				}
			} else {
				SiLU(got[:n])
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d mul %v: SiLU(%g) = %g (%#x), generic %g (%#x)", n, mul, vals[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
			if got[n] != 42 {
				t.Fatalf("n=%d mul %v: wrote past the end", n, mul)
			}
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

// TestExpShift: the active ExpShift gives Exp's bits on every entry,
// including entries far below the maximum (past Exp's fast range) and
// -Inf (masked positions).
func TestExpShift(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 40, 257, 1000} {
		x := make([]float32, n+1)
		for i := range n {
			x[i] = float32(r.NormFloat64() * 30)
		}
		if n > 20 {
			x[3], x[11] = float32(math.Inf(-1)), -500
		}
		x[n] = 42
		m := float32(17.5)
		want := make([]float32, n)
		for i := range want {
			want[i] = Exp(x[i] - m)
		}
		ExpShift(x[:n], m)
		for i := range want {
			if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: entry %d = %g, Exp gives %g", n, i, x[i], want[i])
			}
		}
		if x[n] != 42 {
			t.Fatalf("n=%d: wrote past the end", n)
		}
	}
}

// BenchmarkExpShift: softmax's exponentials over 1024 scores (a head's at
// position ~1000).
func BenchmarkExpShift(b *testing.B) {
	x := make([]float32, 1024)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	y := make([]float32, len(x))
	for b.Loop() {
		copy(y, x)
		ExpShift(y, 5)
	}
}
