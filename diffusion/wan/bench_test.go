package wan

import (
	"context"
	"testing"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/tensor"
)

// forwardFLOPs counts a Forward's multiply-adds ×2: per block the four
// self-attention and two cross-attention projections, both attentions'
// two products, the FFN; the patch embedding and the head.
func forwardFLOPs(c Config, frames, height, width, textRows int) float64 {
	n, d, f := float64(frames*height*width/4), float64(c.Dim), float64(c.FFNDim)
	block := 2*n*d*d*6 + 2*2*n*n*d + 2*2*n*float64(textRows)*d + 2*2*n*d*f
	return float64(c.NumLayers)*block + 2*n*d*float64(4*c.InDim+4*c.OutDim)
}

// BenchmarkForward: one DiT call of the tiny model at the golden size and
// of the 1.3B F16 file at 17 frames of 256×256 (5×32×32 latent, 1280
// tokens) and 33 frames of 480×272 (9×34×60 latent, 4590 tokens; the file
// comes from sdtest.Wan's cache). It reports the CPU seconds per call
// beside the wall time: on a shared machine they are the measure of work.
func BenchmarkForward(b *testing.B) {
	for _, c := range []struct {
		name                  string
		big                   bool
		frames, height, width int
	}{
		{"tiny/5x8x8", false, 5, 8, 8},
		{"1.3b/17f-256x256", true, 5, 32, 32},
		{"1.3b/33f-480x272", true, 9, 34, 60},
	} {
		b.Run(c.name, func(b *testing.B) {
			var m *DiT
			if c.big {
				m = openDiT(b, sdtest.Wan(b, "dit-1.3b", 3001, tensor.F16), 0)
			} else {
				m = openDiT(b, tinyFile(b), 4)
			}
			cfg := m.Config()
			p := compute.NewPool(compute.PhysicalCores())
			defer p.Close()
			text, err := m.PrepareText(context.Background(), p, make([]float32, 12*cfg.TextDim), 12)
			if err != nil {
				b.Fatal(err)
			}
			x := make([]float32, cfg.InDim*c.frames*c.height*c.width)
			for i := range x {
				x[i] = float32(i%7) - 3
			}
			out := make([]float32, len(x))
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				if err := m.Forward(context.Background(), p, out, x, c.frames, c.height, c.width, 937, text); err != nil {
					b.Fatal(err)
				}
			}
			cpu := (cpuTime() - c0).Seconds() / float64(b.N)
			fl := forwardFLOPs(cfg, c.frames, c.height, c.width, text.rows)
			b.ReportMetric(fl*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(cpu, "cpu-s/op")
			b.ReportMetric(fl/cpu/1e9, "GFLOP/cpu-s")
			b.Logf("%s: %d tokens, %.1f GFLOP per call", c.name, c.frames*c.height*c.width/4, fl/1e9)
		})
	}
}
