package kernel

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// BenchmarkDot: one 4096-element row per call, in L1/L2, single thread;
// MB/s counts weight bytes. Every implementation usable here is measured.
func BenchmarkDot(b *testing.B) {
	const n = 4096
	r := rand.New(rand.NewPCG(1, 1))
	for _, impl := range Impls() {
		for _, dt := range SupportedTypes() {
			if f := impl.Q[dt]; f != nil {
				vt, _ := VecDotType(dt)
				w, x := quantized(b, dt, randNormal(r, n, 1)), quantized(b, vt, randNormal(r, n, 1))
				b.Run(fmt.Sprintf("%s/%s", impl.Name, dt), func(b *testing.B) {
					b.SetBytes(int64(len(w)))
					for b.Loop() {
						f(n, w, x)
					}
					b.ReportMetric(float64(len(w))*cpuRate(repsFor(b, 0.2), func() { f(n, w, x) })/1e6, "cpuMB/s")
				})
			}
			if f := impl.F[dt]; f != nil {
				w, x := quantized(b, dt, randNormal(r, n, 1)), randNormal(r, n, 1)
				b.Run(fmt.Sprintf("%s/%s", impl.Name, dt), func(b *testing.B) {
					b.SetBytes(int64(len(w)))
					for b.Loop() {
						f(w, x)
					}
					b.ReportMetric(float64(len(w))*cpuRate(repsFor(b, 0.2), func() { f(w, x) })/1e6, "cpuMB/s")
				})
			}
		}
	}
}

// BenchmarkQuantizeActivations: the per-token cost of quantizing a
// 4096-float activation row to each vec-dot type.
func BenchmarkQuantizeActivations(b *testing.B) {
	x := randNormal(rand.New(rand.NewPCG(1, 1)), 4096, 1)
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q8_1, tensor.Q8_K} {
		buf := make([]byte, 4096/dt.BlockSize()*dt.TypeSize())
		b.Run(dt.String(), func(b *testing.B) {
			b.SetBytes(4 * 4096)
			for b.Loop() {
				if err := Quantize(dt, x, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(cpuRate(repsFor(b, 0.2), func() { Quantize(dt, x, buf) })*4*4096/1e6, "cpuMB/s")
		})
	}
}

// repsFor is how many more runs of a benchmarked call take about secs of
// CPU, so a CPU-time measurement is well above the clock's resolution.
func repsFor(b *testing.B, secs float64) int {
	per := b.Elapsed().Seconds() / float64(max(b.N, 1))
	return max(10, int(secs/max(per, 1e-9)))
}
