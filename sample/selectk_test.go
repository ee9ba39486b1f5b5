package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRadixSort: radixSort gives less's order (the comparison sort's) for
// logits with ties, both zeros, infinities and subnormals, and ids up to
// 2^31−1 (every key byte in play).
func TestRadixSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 1))
	inf := float32(math.Inf(1))
	specials := []float32{0, float32(math.Copysign(0, -1)), inf, -inf, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1, -1}
	var buf sortBuf
	for _, n := range []int{1, 2, 255, 256, 1000, 32000} {
		for trial := range 3 {
			c := make([]cand, n)
			for i := range c {
				id := int32(i)
				if trial == 2 {
					id = int32(r.Uint32() >> 1) // not unique: ties broken by equal keys are equal cands
				}
				l := float32(r.NormFloat64() * 5)
				switch r.IntN(4) {
				case 0:
					l = specials[r.IntN(len(specials))]
				case 1:
					l = float32(r.IntN(8)) // ties
				}
				c[i] = cand{id, l}
			}
			want := slices.Clone(c)
			for i := range want {
				if want[i].logit == 0 {
					want[i].logit = 0 // radixSort gives +0 for either zero
				}
			}
			slices.SortStableFunc(want, cmpCand)
			radixSort(c, &buf)
			for i := range c {
				if c[i] != want[i] || math.Float32bits(c[i].logit) != math.Float32bits(want[i].logit) {
					t.Fatalf("n=%d trial %d: c[%d] = %v, want %v", n, trial, i, c[i], want[i])
				}
			}
		}
	}
}

// BenchmarkSortTop: the k best of 32000 N(0, 3²) logits, by the heap
// (k = 64) and by the radix sort (k = 4096).
func BenchmarkSortTop(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	src := make([]cand, 32000)
	for i := range src {
		src[i] = cand{int32(i), float32(r.NormFloat64() * 3)}
	}
	c := make([]cand, len(src))
	var buf sortBuf
	for _, k := range []int{64, 4096} {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			for b.Loop() {
				copy(c, src)
				sortTop(c, 0, k, &buf)
			}
		})
	}
}
