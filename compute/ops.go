package compute

import (
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/kernel"
)

// Element-wise and row operations over float32 slices. Reductions
// accumulate in float64, as ggml's ggml_float sums do.

func mustLen(op string, want int, lens ...int) {
	for _, l := range lens {
		if l < want {
			panic(fmt.Sprintf("compute: %s: slice of %d floats, need %d", op, l, want))
		}
	}
}

// RMSNorm sets out = x / sqrt(mean(x²) + eps) · w over one row (len(x)
// elements). out may alias x; w nil means no scale. The sum of squares is
// float64 over float32 squares, as ggml's, in kernel.SumSqF64's eight
// lanes. Zhang & Sennrich 2019, "Root Mean Square Layer Normalization".
func RMSNorm(out, x, w []float32, eps float32) {
	mustLen("RMSNorm", len(x), len(out))
	if w != nil {
		mustLen("RMSNorm", len(x), len(w))
	}
	sum := kernel.SumSqF64(x)
	scale := float32(1 / math.Sqrt(float64(float32(sum/float64(len(x)))+eps)))
	if w != nil {
		kernel.ScaleMulF32(out, x, w, scale)
		return
	}
	out = out[:len(x)]
	copy(out, x)
	kernel.ScaleF32(out, scale)
}

// LayerNorm sets out = (x - mean) / sqrt(var + eps) · w + b over one row.
// out may alias x; w or b nil means no scale or no bias.
// Ba, Kiros & Hinton 2016, "Layer Normalization".
func LayerNorm(out, x, w, b []float32, eps float32) {
	mustLen("LayerNorm", len(x), len(out))
	if w != nil {
		mustLen("LayerNorm", len(x), len(w))
	}
	if b != nil {
		mustLen("LayerNorm", len(x), len(b))
	}
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(len(x)))
	var sq float64
	for _, v := range x {
		d := v - mean
		sq += float64(d * d)
	}
	scale := float32(1 / math.Sqrt(float64(float32(sq/float64(len(x)))+eps)))
	for i, v := range x {
		y := (v - mean) * scale
		if w != nil {
			y *= w[i]
		}
		if b != nil {
			y += b[i]
		}
		out[i] = y
	}
}

// Softmax replaces x by exp(x - max x) / Σ exp(x - max x), in place.
// Entries of -Inf become 0; a row of all -Inf becomes all 0. The
// exponential is kernel.Exp (float32, ≤ 2 ulp); the sum is float64 in
// kernel.SumF64's eight lanes (the same bits on every tier).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := kernel.MaxF32(x)
	if math.IsInf(float64(m), -1) {
		clear(x)
		return
	}
	kernel.ExpShift(x, m)
	kernel.ScaleF32(x, float32(1/kernel.SumF64(x)))
}

// SoftmaxSink is Softmax over x and one more logit, sink, that has no
// slot: x[i] = exp(x[i] − m) / (Σ exp(x[j] − m) + exp(sink − m)), m the
// largest of x and sink, so the weights sum to less than 1.
func SoftmaxSink(x []float32, sink float32) {
	if len(x) == 0 {
		return
	}
	m := max(kernel.MaxF32(x), sink)
	kernel.ExpShift(x, m)
	kernel.ScaleF32(x, float32(1/(kernel.SumF64(x)+math.Exp(float64(sink-m)))))
}

// SiLU replaces x by x·σ(x), in place (Elfwing et al. 2017; "swish"),
// with kernel.Exp's float32 exponential (≤ 2 ulp): kernel.SiLU.
func SiLU(x []float32) { kernel.SiLU(x) }

// SwiGLU sets gate = SiLU(gate) ⊙ up over len(gate) elements, in one pass
// (kernel.SiLUMul: the bits of SiLU, then Mul).
func SwiGLU(gate, up []float32) {
	mustLen("SwiGLU", len(gate), len(up))
	kernel.SiLUMul(gate, up)
}

// SwiGLUOAI sets gate = g·σ(1.702·g)·(u + 1) with g = min(gate, 7) and
// u = up clamped to ±7: gpt-oss's gated unit (OpenAI 2025, "gpt-oss-120b &
// gpt-oss-20b Model Card", arXiv:2508.10925), whose constants llama.cpp's
// swiglu_oai also uses.
func SwiGLUOAI(gate, up []float32) {
	mustLen("SwiGLUOAI", len(gate), len(up))
	const alpha, limit = 1.702, 7
	for i, g := range gate {
		g = min(g, limit)
		u := min(max(up[i], -limit), limit)
		gate[i] = g / (1 + float32(math.Exp(float64(-alpha*g)))) * (u + 1)
	}
}

// GeGLU sets gate = GELU(gate) ⊙ up over len(gate) elements.
func GeGLU(gate, up []float32) {
	GELU(gate)
	Mul(gate, gate, up)
}

// GELU replaces x by the tanh approximation of x·Φ(x), in place, as ggml
// and GPT-2 compute it (Hendrycks & Gimpel 2016):
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func GELU(x []float32) {
	const c = 0.7978845608028654 // √(2/π)
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * (1 + math.Tanh(c*f*(1+0.044715*f*f))))
	}
}

// Add sets out = a + b element-wise over len(out) elements.
func Add(out, a, b []float32) {
	mustLen("Add", len(out), len(a), len(b))
	kernel.AddF32(out, a, b)
}

// Mul sets out = a · b element-wise over len(out) elements.
func Mul(out, a, b []float32) {
	mustLen("Mul", len(out), len(a), len(b))
	kernel.MulF32(out, a, b)
}

// Scale multiplies x by s in place.
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
