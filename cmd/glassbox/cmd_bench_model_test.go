package main

import (
	"math"
	"testing"
)

// TestPairLimits: repetition i is divided by the limit from the read
// passes on either side of it; the median, range and median bandwidth are
// reported, and nothing when the passes do not bracket the repetitions.
func TestPairLimits(t *testing.T) {
	res := benchResult{ReadBytes: 1e9} // 1 GB per token: limit = GB/s
	pairLimits(&res, []float64{10, 20, 30}, []float64{20, 20, 40, 40})
	// limits 20, 30, 40 → fractions 0.5, 0.667, 0.75
	if math.Abs(res.TGOfLimitPaired-2.0/3) > 1e-9 || res.TGPairedMin != 0.5 || res.TGPairedMax != 0.75 || res.ReadGBsPairedMed != 30 {
		t.Errorf("paired: %+v", res)
	}
	res = benchResult{ReadBytes: 1e9}
	pairLimits(&res, []float64{10, 20}, []float64{20, 20})
	if res.TGOfLimitPaired != 0 {
		t.Errorf("passes that do not bracket the repetitions gave %v", res.TGOfLimitPaired)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of 1..4 = %v", m)
	}
}
