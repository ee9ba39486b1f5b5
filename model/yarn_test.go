package model

import (
	"math"
	"testing"
)

// TestYaRN checks the divisors and the attention factor against the
// paper's recipe transcribed in float64 here: inverse frequencies mixed
// from the extrapolated (base^(−2i/d)) and the interpolated (÷ factor)
// ones by a linear ramp over the pair index between the correction dims
// of β_fast and β_slow rotations (floored and ceiled, clamped to 0 and
// d−1), and √(attention scale) = 0.1·ln(factor) + 1.
func TestYaRN(t *testing.T) {
	for _, tc := range []struct {
		dim        int
		base       float32
		origCtx    int
		factor     float32
		fast, slow float32
	}{
		{128, 1e6, 32768, 4, 32, 1}, // Qwen2.5/Qwen3's 128K recipe
		{64, 10000, 4096, 8, 32, 1},
		{128, 500000, 8192, 2, 16, 2},
	} {
		y := &YaRN{Factor: tc.factor, OrigCtx: tc.origCtx, BetaFast: tc.fast, BetaSlow: tc.slow, AttnFactor: 1}
		got := y.Divisors(tc.dim, tc.base)
		corr := func(rot float64) float64 {
			return float64(tc.dim) * math.Log(float64(tc.origCtx)/(rot*2*math.Pi)) / (2 * math.Log(float64(tc.base)))
		}
		low := math.Max(math.Floor(corr(float64(tc.fast))), 0)
		high := math.Min(math.Ceil(corr(float64(tc.slow))), float64(tc.dim-1))
		kept, interp := 0, 0
		for i := range tc.dim / 2 {
			extrap := math.Pow(float64(tc.base), -2*float64(i)/float64(tc.dim))
			inter := extrap / float64(tc.factor)
			mask := 1 - math.Min(math.Max((float64(i)-low)/(high-low), 0), 1) // 1: extrapolate (keep)
			inv := inter*(1-mask) + extrap*mask
			if want := extrap / inv; math.Abs(float64(got[i])-want) > 1e-5*want {
				t.Errorf("%+v: pair %d divisor %g, want %g", tc, i, got[i], want)
			}
			switch {
			case got[i] == 1:
				kept++
			case math.Abs(float64(got[i]-tc.factor)) < 1e-6:
				interp++
			}
			if i > 0 && got[i] < got[i-1] {
				t.Errorf("%+v: divisors fall at pair %d", tc, i)
			}
		}
		if kept == 0 || interp == 0 {
			t.Errorf("%+v: %d pairs kept, %d interpolated: the ramp should leave both", tc, kept, interp)
		}
		if m, want := y.Mscale(), 0.1*math.Log(float64(tc.factor))+1; math.Abs(m-want) > 1e-12 {
			t.Errorf("%+v: mscale %g, want %g", tc, m, want)
		}
	}
	// No extension: nothing changes.
	y := &YaRN{Factor: 1, OrigCtx: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1}
	for i, d := range y.Divisors(64, 10000) {
		if d != 1 {
			t.Fatalf("factor 1: pair %d divisor %g", i, d)
		}
	}
	if y.Mscale() != 1 {
		t.Errorf("factor 1: mscale %g", y.Mscale())
	}
	c := &Config{HeadDim: 64, RopeYaRN: &YaRN{Factor: 4, OrigCtx: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1}}
	if s, m := c.AttnScale(), 1+0.1*math.Log(4); math.Abs(float64(s)-m*m/8) > 1e-7 {
		t.Errorf("attention scale %g, want mscale² / √64 = %g", s, m*m/8)
	}
}
