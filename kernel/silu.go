package kernel

import "math"

// SiLU replaces x by x·σ(x) = x / (1 + Exp(-x)), in place (Elfwing et al.
// 2017, "swish"). The fast path computes Exp in the same float32
// operations, in the same order, as Exp does (no fused multiply-adds), so
// it gives the same bits as the generic loop; lanes Exp would send to its
// tail (|x| past 87, NaN) take the generic loop.
func SiLU(x []float32) { silu(x) }

// silu is the active implementation (impl_*.go).
var silu = siluGeneric

func siluGeneric(x []float32) {
	for i, v := range x {
		x[i] = v / (1 + Exp(-v))
	}
}

// SiLUMul sets x[i] = SiLU(x[i])·u[i] over len(x) elements: SwiGLU's
// gate ⊙ up (Shazeer 2020, arXiv:2002.05202) in one pass, with the bits of
// SiLU followed by an elementwise float32 product.
func SiLUMul(x, u []float32) { siluMul(x, u[:len(x)]) }

// siluMul is the active implementation (impl_*.go).
var siluMul = siluMulGeneric

func siluMulGeneric(x, u []float32) {
	for i, v := range x {
		s := v / (1 + Exp(-v))
		x[i] = s * u[i]
	}
}

// siluConsts are Exp's constants and SiLU's, each repeated over 8 lanes
// for the AVX2 loop, rows in the order of the siluC* offsets in
// silu_amd64.s.
var siluConsts = func() (c [15][8]uint32) {
	f := math.Float32bits
	vals := [15]uint32{1 << 31, f(log2e), f(round), f(ln2Hi), f(ln2Lo), f(1), f(0.5),
		f(1.0 / 6), f(1.0 / 24), f(1.0 / 120), f(1.0 / 720), f(1.0 / 5040), f(-87), f(88), 127}
	for i, v := range vals {
		for j := range c[i] {
			c[i][j] = v
		}
	}
	return c
}()

// ExpShift replaces x[i] by Exp(x[i] - m), in place (softmax's
// exponentials, m the row's maximum), with the same bits as Exp on each.
func ExpShift(x []float32, m float32) { expShift(x, m) }

// expShift is the active implementation (impl_*.go).
var expShift = expShiftGeneric

func expShiftGeneric(x []float32, m float32) {
	for i, v := range x {
		x[i] = Exp(v - m)
	}
}
