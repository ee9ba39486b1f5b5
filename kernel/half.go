package kernel

import "math"

// FP16ToFP32 converts an IEEE 754 binary16 value (as bits) to float32.
// The conversion is exact.
func FP16ToFP32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0:
		// Zero or subnormal: mant · 2^-24, exact in float32.
		f := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(f) | sign)
	case exp == 0x1f:
		if mant != 0 {
			mant |= 0x200 // NaNs come out quiet, as F16C's VCVTPH2PS makes them
		}
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// FP32ToFP16 converts f to binary16 with round-to-nearest-even, as F16C's
// VCVTPS2PH (and ggml's GGML_FP32_TO_FP16) do. Overflow gives ±Inf; NaN
// stays NaN (quiet).
func FP32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half: units of 2^-24. The value is m·2^(exp-150), so
		// in those units it is m >> (14-e).
		s := uint(14 - e)
		if s > 31 {
			return sign
		}
		m := mant | 0x800000
		if exp == 0 {
			m = mant // float32 subnormal (far below half's range)
		}
		h := m >> s
		rem := m & (1<<s - 1)
		half := uint32(1) << (s - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is the correct rounding (up to Inf)
	}
	return sign | uint16(h)
}

// BF16ToFP32 converts a bfloat16 value (as bits) to float32 (exact).
func BF16ToFP32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// FP32ToBF16 converts f to bfloat16 with round-to-nearest-even; NaN stays a
// quiet NaN. This is ggml's GGML_FP32_TO_BF16.
func FP32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// fp16Table maps every binary16 bit pattern to its float32 value; the
// generic kernels look halves up here instead of decoding them.
var fp16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = FP16ToFP32(uint16(i))
	}
	return &t
}()

// f16 reads the little-endian half at b[0:2] as float32.
func f16(b []byte) float32 { return fp16Table[uint16(b[0])|uint16(b[1])<<8] }

// putF16 writes f as a little-endian half at b[0:2].
func putF16(b []byte, f float32) {
	h := FP32ToFP16(f)
	b[0], b[1] = byte(h), byte(h>>8)
}

// FP16sToFP32 converts len(dst) halves from src (little-endian bytes, two
// per element) to float32.
func FP16sToFP32(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	m := 0
	if fastF16 != nil {
		m = fastF16(dst, src)
	}
	for i := m; i < len(dst); i++ {
		dst[i] = fp16Table[uint16(src[2*i])|uint16(src[2*i+1])<<8]
	}
}

// FP32sToFP16 converts src to halves written little-endian into dst.
func FP32sToFP16(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	m := 0
	if fastF32 != nil {
		m = fastF32(dst, src)
	}
	for i := m; i < len(src); i++ {
		h := FP32ToFP16(src[i])
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
}

// fastF16 and fastF32 (set on CPUs with F16C) convert a prefix of their
// slices and return its length; the loops above finish the rest.
var (
	fastF16 func(dst []float32, src []byte) int
	fastF32 func(dst []byte, src []float32) int
)
