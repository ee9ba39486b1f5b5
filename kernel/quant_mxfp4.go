package kernel

import "math"

// MXFP4 (the OCP Microscaling Formats (MX) Specification v1.0's MXFP4
// concrete format): 32 E2M1 elements sharing one E8M0 scale, in ggml's
// block_mxfp4 (ggml-common.h), 17 bytes:
//
//	e u8: the E8M0 scale exponent; qs[16]: column j < 16 in the low nibble
//	of qs[j], column j+16 in its high nibble (IQ4_NL's order); value
//	kv[nibble]·2^(e−128).
//
// kv is ggml's kvalues_mxfp4: the E2M1 values (sign bit 3, then two
// exponent bits and one mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6) doubled
// so that they are integers, hence the scale 2^(e−128), half the spec's
// 2^(e−127) (ggml-impl.h, GGML_E8M0_TO_FP32_HALF). e = 255 is NaN in the
// spec; ggml's reference quantizer never writes it and llama.cpp's row
// validation rejects it, so it is read as 2^127 here, as ggml reads it.
var mxfp4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// e8m0Half returns 2^(e−128) exactly: a normal float32 with biased
// exponent e−1 from e = 2, the subnormals 2^−128 and 2^−127 below.
func e8m0Half(e byte) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

func dequantMXFP4(b []byte, y []float32) {
	d := e8m0Half(b[0])
	for j := range 16 {
		y[j] = d * float32(mxfp4Values[b[1+j]&0xf])
		y[j+16] = d * float32(mxfp4Values[b[1+j]>>4])
	}
}

// mxfp4Exp is the shared exponent ggml's reference quantizer
// (quantize_row_mxfp4_ref) and the MX spec's conversion from FP32 (scale
// 2^(⌊log2 amax⌋ − emax), E2M1's emax being 2) choose for a block whose
// largest magnitude is amax: the E8M0 byte floor(log2 amax) − 2 + 127,
// so that amax/2^(e−127) lies in [4, 8): the largest element becomes
// E2M1's 4 or 6, clipped to 6 (12·2^(e−128)) from 1.5·2^⌊log2 amax⌋ on.
// The logarithm is rounded to float32 before the floor, as log2f's is,
// so that an amax within an ulp or so below a power of two counts as that
// power, as in ggml; a zero block gets e = 0, and blocks below 2^−125 the
// smallest e (ggml's cast is undefined there).
func mxfp4Exp(amax float32) byte {
	if !(amax > 0) {
		return 0
	}
	k := math.Floor(float64(float32(math.Log2(float64(amax))))) - 2 + 127
	return byte(min(254, max(0, k)))
}

// mxfp4Code returns the code of the level nearest to x/d (d = 2^(e−128)),
// the smaller magnitude on a tie, and the zero of code 0 for zero: the
// index ggml's best_index_mxfp4 picks (the first of equal errors
// |kv·d − x|, measured in float32 as there). The error of ±kv against ±x
// is that of kv against |x|, so the magnitude is chosen first, then the
// sign.
func mxfp4Code(x, d float32) byte {
	a := float32(math.Abs(float64(x)))
	best, bestErr := 0, a
	for m := 1; m < 8; m++ {
		if e := float32(math.Abs(float64(float32(mxfp4Values[m])*d - a))); e < bestErr {
			best, bestErr = m, e
		}
	}
	if x < 0 && best > 0 {
		best += 8
	}
	return byte(best)
}

// quantMXFP4 is our implementation of ggml's reference quantizer: the
// block's exponent from its largest magnitude (mxfp4Exp), then each
// element's nearest level; it writes the same bytes.
func quantMXFP4(x []float32, b []byte) {
	var amax float32
	for _, v := range x[:32] {
		if a := float32(math.Abs(float64(v))); a > amax { // NaN skipped, as in ggml
			amax = a
		}
	}
	e := mxfp4Exp(amax)
	d := e8m0Half(e)
	b[0] = e
	for j := range 16 {
		b[1+j] = mxfp4Code(x[j], d) | mxfp4Code(x[j+16], d)<<4
	}
}

// dotMXFP4Q8_0Generic is the dot product against Q8_0 activations:
// per block float(Σ kv[w]·x.qs)·2^(e−128)·x.d, as ggml's
// ggml_vec_dot_mxfp4_q8_0 (multiplying by the power of two is exact, so
// any order rounds once, unless a product is subnormal).
func dotMXFP4Q8_0Generic(n int, w, x []byte) float32 {
	return dotTableQ8_0(n, w, x, 1, &mxfp4Values, func(b []byte) float32 { return e8m0Half(b[0]) })
}
