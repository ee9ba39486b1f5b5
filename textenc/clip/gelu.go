package clip

import (
	"math"
	"sync"

	"github.com/glassbox-ai/glassbox/kernel"
)

// quickGELU replaces x by x·σ(1.702·x), the activation of OpenAI's CLIP
// (Hendrycks & Gimpel 2016's sigmoid approximation of GELU), in place.
// By default it computes it as ggml's CPU backend does
// (ggml-cpu/vec.h: ggml_vec_gelu_quick_f32 with GGML_GELU_QUICK_FP16, so
// stable-diffusion.cpp with F16 and F32 files alike): x rounded to f16
// indexes a table of the function's f16 values. exact computes it in
// float32 instead.
func quickGELU(x []float32, exact bool) {
	if exact {
		for i, v := range x {
			x[i] = quickGELU32(v)
		}
		return
	}
	t := geluTable()
	for i, v := range x {
		x[i] = t[kernel.FP32ToFP16(v)]
	}
}

// quickGELU32 is ggml_gelu_quick_f32: x·(1/(1+e^(−1.702x))), each step
// rounded to float32.
func quickGELU32(x float32) float32 {
	e := float32(math.Exp(float64(-1.702 * x)))
	return x * (1 / (1 + e))
}

var (
	geluOnce sync.Once
	geluF16  *[1 << 16]float32
)

// geluTable returns ggml_table_gelu_quick_f16 widened to float32: entry h
// is quickGELU32 of the f16 value h, rounded to f16 (built once, 256 KiB).
func geluTable() *[1 << 16]float32 {
	geluOnce.Do(func() {
		t := new([1 << 16]float32)
		for h := range t {
			t[h] = kernel.FP16ToFP32(kernel.FP32ToFP16(quickGELU32(kernel.FP16ToFP32(uint16(h)))))
		}
		geluF16 = t
	})
	return geluF16
}
