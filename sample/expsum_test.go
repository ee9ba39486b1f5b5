package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpSumMatchesGeneric: the assembly pass (where there is one) gives
// the bits of the generic twin for every w[i] and the sum, over lengths
// that leave tails, arguments on both sides of its [-700, 700] range, and
// the special values the generic path must take over.
func TestExpSumMatchesGeneric(t *testing.T) {
	if !useExpSumAsm {
		t.Log("no assembly pass on this build; checking the generic path only")
	}
	r := rand.New(rand.NewPCG(7, 11))
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	specials := []float32{0, float32(math.Copysign(0, -1)), -inf, inf, nan, 1e30, -1e30, 700, -700, 699.99994, -745.2}
	for _, tc := range []struct {
		name  string
		sigma float64
		temp  float64
		spec  float64 // share of special values
	}{
		{"flat", 1, 1, 0},
		{"sigma3-T0.8", 3, 0.8, 0},
		{"sigma30-T0.01", 30, 0.01, 0}, // many arguments below -700
		{"sigma300", 300, 1, 0},
		{"specials", 3, 1, 0.05},
		{"T100", 3, 100, 0},
	} {
		for _, n := range []int{0, 1, 3, 4, 5, 8, 31, 64, 67, 1000, 32000} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, n), func(t *testing.T) {
				c := make([]cand, n)
				mx := math.Inf(-1)
				for i := range c {
					l := float32(r.NormFloat64() * tc.sigma)
					if r.Float64() < tc.spec {
						l = specials[r.IntN(len(specials))]
					}
					c[i] = cand{int32(i), l}
					if l == l {
						mx = max(mx, float64(l))
					}
				}
				for _, m := range []float64{mx, 0, mx + 0.5} {
					invT := 1 / tc.temp
					want := make([]float64, n)
					got := make([]float64, n)
					ws := expSumGeneric(c, m, invT, want, 0)
					gs := expSum(c, m, invT, got)
					if math.Float64bits(gs) != math.Float64bits(ws) && !(gs != gs && ws != ws) {
						t.Fatalf("mx %v: sum %v (%#x), want %v (%#x)", m, gs, math.Float64bits(gs), ws, math.Float64bits(ws))
					}
					for i := range want {
						if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
							t.Fatalf("mx %v: w[%d] = %v, want %v (logit %v)", m, i, got[i], want[i], c[i].logit)
						}
					}
				}
			})
		}
	}
}

// TestExpSumAsmCovers: on a machine with the assembly pass, ordinary
// logits go through it whole (a fallback everywhere would pass the test
// above while the fast path sat unused).
func TestExpSumAsmCovers(t *testing.T) {
	if !useExpSumAsm {
		t.Skip("no assembly pass on this build")
	}
	c := make([]cand, 1024)
	for i := range c {
		c[i] = cand{int32(i), float32(i%37) - 20}
	}
	w := make([]float64, len(c))
	done, _ := expSumAsm(c, 16, 1.25, w, 0)
	if done != len(c) {
		t.Fatalf("assembly took %d of %d candidates", done, len(c))
	}
}

// TestExpSumMatchesExp: the pass computes e^x to expf64's accuracy.
func TestExpSumMatchesExp(t *testing.T) {
	c := make([]cand, 400)
	for i := range c {
		c[i] = cand{int32(i), float32(i)/10 - 30}
	}
	w := make([]float64, len(c))
	var want float64
	for _, x := range c {
		want += math.Exp(float64(x.logit) - 5)
	}
	got := expSum(c, 5, 1, w)
	for i, x := range c {
		e := math.Exp(float64(x.logit) - 5)
		if d := math.Abs(w[i]-e) / e; d > 1e-15 {
			t.Fatalf("w[%d] = %v, want %v (relative error %.2g)", i, w[i], e, d)
		}
	}
	if d := math.Abs(got-want) / want; d > 1e-13 {
		t.Fatalf("sum %v, want %v", got, want)
	}
}

// TestMaxLogit: the fast fold gives the builtin max's result, NaN and the
// sign of zero included.
func TestMaxLogit(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	nz := float32(math.Copysign(0, -1))
	r := rand.New(rand.NewPCG(3, 9))
	pool := []float32{0, nz, -inf, inf, nan, 1, -1, 2.5}
	for trial := range 20000 {
		n := 1 + r.IntN(6)
		c := make([]cand, n)
		want := float32(0)
		for i := range c {
			c[i] = cand{int32(i), pool[r.IntN(len(pool))]}
			if trial%3 == 0 && c[i].logit != c[i].logit {
				c[i].logit = 3 // fewer NaNs in a third of the trials
			}
			if i == 0 {
				want = c[i].logit
			} else {
				want = max(want, c[i].logit)
			}
		}
		got := maxLogit(c)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("maxLogit(%v) = %v, want %v", c, got, want)
		}
	}
}
