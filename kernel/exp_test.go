package kernel

import (
	"math"
	"testing"
)

// expRef is Exp's specification: float64 math.Exp rounded to float32.
func expRef(x float32) float32 { return float32(math.Exp(float64(x))) }

// ulpDiff is the distance in float32 units in the last place.
func ulpDiff(a, b float32) int64 {
	d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
	return max(d, -d)
}

func TestExpSweep(t *testing.T) {
	const maxULP = 2
	worst, at := int64(0), float32(0)
	// Every 97th float32 bit pattern from -104 to 89: both signs, all
	// exponents, the subnormal and overflow edges.
	for _, sign := range []uint32{0, 1 << 31} {
		for b := uint32(0); b < 0x7f800000; b += 97 {
			x := math.Float32frombits(sign | b)
			if x < -104 || x > 89 {
				continue
			}
			if d := ulpDiff(Exp(x), expRef(x)); d > worst {
				worst, at = d, x
			}
		}
	}
	if worst > maxULP {
		t.Errorf("Exp: worst error %d ulp at x=%g (Exp %g, math.Exp %g), want ≤ %d", worst, at, Exp(at), expRef(at), maxULP)
	}
	t.Logf("worst error %d ulp at x=%g", worst, at)
}

func TestExpSpecial(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		name string
		x    float32
		want float32
	}{
		{"zero", 0, 1},
		{"one", 1, expRef(1)},
		{"-inf", -inf, 0},
		{"+inf", inf, inf},
		{"overflow", 89, inf},
		{"max finite", 88.72283, expRef(88.72283)},
		{"underflow", -104, 0},
		{"smallest subnormal region", -103.27893, expRef(-103.27893)},
		{"subnormal", -100, expRef(-100)},
		{"normal edge", -87.33654, expRef(-87.33654)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Exp(tc.x); ulpDiff(got, tc.want) > 2 {
				t.Errorf("Exp(%g) = %g, want %g", tc.x, got, tc.want)
			}
		})
	}
	if got := Exp(float32(math.NaN())); got == got {
		t.Errorf("Exp(NaN) = %g, want NaN", got)
	}
}

func BenchmarkExp(b *testing.B) {
	xs := make([]float32, 1024)
	for i := range xs {
		xs[i] = float32(i)/64 - 8
	}
	b.Run("fast", func(b *testing.B) {
		var s float32
		for range b.N {
			for _, x := range xs {
				s += Exp(x)
			}
		}
		sink32 = s
	})
	b.Run("math", func(b *testing.B) {
		var s float32
		for range b.N {
			for _, x := range xs {
				s += expRef(x)
			}
		}
		sink32 = s
	})
}

var sink32 float32
