//go:build linux

package t5

import (
	"syscall"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/synth"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestBindXXL binds umt5_xxl's 5.7 B parameters in both naming schemes
// without the weights: every tensor's data is a view of one read-only
// anonymous mapping that is never touched (zero pages), so the check costs
// address space, not memory. It pins the shape inference and the binding
// of the real model; running it is too slow for a test.
func TestBindXXL(t *testing.T) {
	layout := synth.UMT5Tensors(synth.UMT5XXL)
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
	defer syscall.Munmap(zeros)
	for _, scheme := range []string{"wan", "hf"} {
		m := &checkpoint.Map{Label: "umt5-xxl (" + scheme + ")", Tensors: map[string]*checkpoint.Tensor{}}
		var params int64
		for _, wt := range layout {
			n := 1
			for _, d := range wt.Shape {
				n *= d
			}
			params += int64(n)
			name := wt.Name
			if scheme == "hf" {
				name = hfName(name)
			}
			m.Tensors[name] = &checkpoint.Tensor{Name: name, DType: tensor.BF16, Shape: wt.Shape, Data: zeros[:2*n]}
		}
		e, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		if e.Config() != UMT5XXL || e.Names() != scheme {
			t.Fatalf("%s: config %+v (%s), want %+v", scheme, e.Config(), e.Names(), UMT5XXL)
		}
		// Matrices in BF16 as in the file, norms and biases as float32.
		if params != 5_680_910_336 || e.WeightBytes() < 2*params || e.WeightBytes() > 2*params+2_000_000 {
			t.Fatalf("%s: %d parameters, %d weight bytes", scheme, params, e.WeightBytes())
		}
	}
}
