package compute

import "testing"

// BenchmarkPoolFor: fork-join latency of an almost empty parallel loop
// (the fixed cost every parallel op pays).
func BenchmarkPoolFor(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	var sink [64]int
	b.ReportAllocs()
	for b.Loop() {
		p.For(8, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				sink[i*8%64]++
			}
		})
	}
}
