package synth

import (
	"context"
	"io"
	"testing"
)

// BenchmarkWrite measures generation + quantization throughput (the file
// goes to io.Discard), in parameters per second via SetBytes(params).
func BenchmarkWrite(b *testing.B) {
	c := Presets["tiny"]
	c.Dim, c.HiddenDim, c.Layers, c.NumHeads, c.NumKVHeads = 512, 1536, 4, 8, 8
	for _, format := range []string{"F32", "F16", "Q8_0", "Q4_0", "Q4_K_M"} {
		b.Run(format, func(b *testing.B) {
			o := Options{Config: c, Format: format}
			b.SetBytes(c.Params())
			for b.Loop() {
				if err := Write(context.Background(), io.Discard, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
