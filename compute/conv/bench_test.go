package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkConv measures one thread (GFLOP per CPU second, robust to a
// shared machine) on TAEF2's most common layer (3×3,
// 64→64) and the fused upsampling conv, per kernel set.
// go test ./compute/conv -run '^$' -bench Conv
func BenchmarkConv(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const h, w, c = 64, 64, 64
	wt := randSlice(rng, c*c*9, 0.1)
	in, _ := FromCHW(randSlice(rng, c*h*w, 1), c, h, w)
	cv, _ := NewConv(wt, randSlice(rng, c, 1), c, c, 3, 1)
	uc, _ := NewUpConv(wt, nil, c, c)
	for name, impl := range tileImpls() {
		b.Run(fmt.Sprintf("3x3-64-%dx%d/%s", h, w, name), func(b *testing.B) {
			out := NewMap(h, w, c)
			c0 := cpuTime()
			for b.Loop() {
				cv.apply(nil, out, in, nil, true, impl)
			}
			b.ReportMetric(float64(cv.Flops(h, w))*float64(b.N)/(cpuTime()-c0).Seconds()/1e9, "GFLOP/cpu-s")
		})
		b.Run(fmt.Sprintf("up3x3-64-%dx%d/%s", h, w, name), func(b *testing.B) {
			out := NewMap(2*h, 2*w, c)
			c0 := cpuTime()
			for b.Loop() {
				uc.apply(nil, out, in, nil, false, impl)
			}
			b.ReportMetric(float64(uc.Flops(h, w))*float64(b.N)/(cpuTime()-c0).Seconds()/1e9, "GFLOP/cpu-s")
		})
	}
}
