package compute

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// BenchmarkAttention: one decode step's attention over a 1B model's 16
// layers (32 query heads over 8 KV heads of 64, F16 cache), at positions
// 160, 1000 and 3000, on 1 and 2 threads; ms/step is the step's attention
// time. Each layer's cache is read once per step, as in a model (16 layers
// at position 1000 are 32 MiB of keys and values, at 3000 96 MiB: past the
// streaming pass's 512 KiB a head, from DRAM).
func BenchmarkAttention(b *testing.B) {
	const layers, ctx, kvHeads, headDim, heads = 16, 3072, 8, 64, 32
	r := rand.New(rand.NewPCG(1, 2))
	cs := make([]*KVCache, layers)
	for l := range cs {
		cs[l] = NewKVCache(tensor.F16, ctx, kvHeads, headDim)
		for p := range ctx {
			cs[l].Store(p, randNormal(r, kvHeads*headDim, 1), randNormal(r, kvHeads*headDim, 1))
		}
	}
	q := randNormal(r, heads*headDim, 1)
	out := make([]float32, heads*headDim)
	for _, threads := range []int{1, 2} {
		for _, pos := range []int{160, 1000, 3000} {
			b.Run(fmt.Sprintf("t=%d/pos=%d", threads, pos), func(b *testing.B) {
				p := NewPool(threads)
				defer p.Close()
				for b.Loop() {
					for l := range layers {
						Attention(p, out, q, 1, pos, cs[l], heads, Attn{Scale: 0.125})
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/step")
			})
		}
	}
}
