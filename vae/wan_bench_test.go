package vae

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkWanDecode decodes 2 latent frames (5 video frames) at 2 threads.
// go test ./vae -run '^$' -bench WanDecode -benchtime 1x
func BenchmarkWanDecode(b *testing.B) {
	v := wanModel(b)
	for _, px := range []int{64, 256} {
		b.Run(fmt.Sprint(px), func(b *testing.B) {
			const tt = 2
			h := px / WanScale
			z := wanRandLatent(tt, h, h, 1)
			c0 := cpuTime()
			for b.Loop() {
				if err := v.DecodeFrames(context.Background(), testPool, z, tt, h, h, nil, func(int, []float32) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			cpu := (cpuTime() - c0).Seconds() / float64(b.N)
			b.ReportMetric(cpu, "cpu-s/op")
			b.ReportMetric(float64(v.Flops(tt, h, h))/1e9, "GFLOP/op")
			b.ReportMetric(float64(v.Flops(tt, h, h))/cpu/1e9, "GFLOP/cpu-s")
		})
	}
}
