package vae

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// Benchmarks at 2 threads (testPool); sizes are output pixels per side.
// The arena is warmed and reused (steady state, as in a server). cpu-s/op
// is the process CPU time per operation: on a shared machine the wall time
// also counts waiting for a core.
// go test ./vae -run '^$' -bench . -benchtime 3x
func BenchmarkDecode(b *testing.B) {
	_, dec := models(b)
	for _, px := range []int{256, 512, 1024} {
		b.Run(fmt.Sprint(px), func(b *testing.B) {
			h := px / Scale
			rng := rand.New(rand.NewPCG(1, uint64(px)))
			z := make([]float32, LatentChannels*h*h)
			for i := range z {
				z[i] = float32(rng.NormFloat64())
			}
			opt := Options{Runner: testPool, Arena: new(conv.Arena)} // reused, as a server would
			b.ReportAllocs()
			dec.Decode(context.Background(), z, h, h, opt) // warm the arena
			c0 := cpuTime()
			for b.Loop() {
				if _, err := dec.Decode(context.Background(), z, h, h, opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(dec.Flops(h, h))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	enc, _ := models(b)
	for _, px := range []int{256, 512, 1024} {
		b.Run(fmt.Sprint(px), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, uint64(px)))
			img := make([]float32, 3*px*px)
			for i := range img {
				img[i] = rng.Float32()
			}
			opt := Options{Runner: testPool, Arena: new(conv.Arena)}
			b.ReportAllocs()
			enc.Encode(context.Background(), img, px, px, opt) // warm the arena
			c0 := cpuTime()
			for b.Loop() {
				if _, _, _, err := enc.Encode(context.Background(), img, px, px, opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(enc.Flops(px, px))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkOpenDecoder measures the load stage: map the .pth, parse the
// pickle, widen F16 to F32 and pack every conv.
func BenchmarkOpenDecoder(b *testing.B) {
	path := shared.Path(b, "models/taef2/taef2_decoder.pth")
	c0 := cpuTime()
	for b.Loop() {
		if _, err := OpenDecoder(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N)*1000, "cpu-ms/op")
}
