//go:build linux

package wan

import (
	"syscall"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/synth"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestBindLayouts binds the released layouts, 1.3B and 14B, in BF16, bare
// and under ComfyUI's prefix, without their weights: every tensor's data
// is a view of one read-only anonymous mapping that is never touched (zero
// pages), so the check costs address space, not memory. It pins the shape
// inference (the head count from Wan 2.1's head width of 128) and the
// binding by the same code.
func TestBindLayouts(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    synth.DiTConfig
		params int64
	}{
		{"1.3b", synth.DiT1_3B, 1_418_996_800},
		{"14b", synth.DiT14B, 14_288_491_584},
	} {
		layout := synth.DiTTensors(c.cfg)
		largest := 0
		for _, wt := range layout {
			n := 2
			for _, d := range wt.Shape {
				n *= d
			}
			largest = max(largest, n)
		}
		zeros, err := syscall.Mmap(-1, 0, largest, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
		if err != nil {
			t.Skipf("no %d-byte address range: %v", largest, err)
		}
		for _, prefix := range []string{"", "model.diffusion_model."} {
			t.Run(c.name+"/"+prefix, func(t *testing.T) {
				m := &checkpoint.Map{Label: "wan " + c.name, Tensors: map[string]*checkpoint.Tensor{}}
				var params int64
				for _, wt := range layout {
					n := 1
					for _, d := range wt.Shape {
						n *= d
					}
					params += int64(n)
					m.Tensors[prefix+wt.Name] = &checkpoint.Tensor{Name: prefix + wt.Name, DType: tensor.BF16, Shape: wt.Shape, Data: zeros[:2*n]}
				}
				d, err := New(m, 0)
				if err != nil {
					t.Fatal(err)
				}
				want := Config{InDim: c.cfg.InDim, OutDim: c.cfg.OutDim, Dim: c.cfg.Dim, FFNDim: c.cfg.FFNDim, FreqDim: c.cfg.FreqDim,
					TextDim: c.cfg.TextDim, NumHeads: c.cfg.NumHeads, NumLayers: c.cfg.NumLayers}
				if d.Config() != want || d.Prefix() != prefix {
					t.Fatalf("config %+v under %q, want %+v under %q", d.Config(), d.Prefix(), want, prefix)
				}
				// Matrices in BF16 as in the file; norms, biases, modulations float32.
				if params != c.params || d.WeightBytes() < 2*params || d.WeightBytes() > 2*params+params/500 {
					t.Fatalf("%d parameters, %d weight bytes", params, d.WeightBytes())
				}
				t.Logf("%d parameters, %d weight bytes", params, d.WeightBytes())
			})
		}
		syscall.Munmap(zeros)
	}
}
