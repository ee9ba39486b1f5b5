package main

import (
	"math"
	"testing"
)

// TestPairLimits: repetition i is divided by the limit from the read
// passes on either side of it; the median, range and median bandwidth are
// reported, and nothing when the passes do not bracket the repetitions.
func TestPairLimits(t *testing.T) {
	// 1 GB per token: limit = GB/s; limits 20, 30, 40 → fractions 0.5, 0.667, 0.75
	med, lo, hi, gbs := pairLimits(1e9, []float64{10, 20, 30}, []float64{20, 20, 40, 40})
	if math.Abs(med-2.0/3) > 1e-9 || lo != 0.5 || hi != 0.75 || gbs != 30 {
		t.Errorf("paired: median %v in [%v, %v], %v GB/s", med, lo, hi, gbs)
	}
	// 2 GB per token halves every limit.
	if med, _, _, _ := pairLimits(2e9, []float64{10, 20, 30}, []float64{20, 20, 40, 40}); math.Abs(med-4.0/3) > 1e-9 {
		t.Errorf("2 GB per token: median %v, want 4/3", med)
	}
	if med, _, _, _ := pairLimits(1e9, []float64{10, 20}, []float64{20, 20}); med != 0 {
		t.Errorf("passes that do not bracket the repetitions gave %v", med)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of 1..4 = %v", m)
	}
}
