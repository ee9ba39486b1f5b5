package rng

import "math"

// This file is the arithmetic of torch's AVX2 Box–Muller kernel for one
// lane: log256_ps and sincos256_ps of aten/src/ATen/native/cpu/
// avx_mathfun.h (Giovanni Garberoglio's AVX port of Julien Pommier's
// sse_mathfun, which transcribe Cephes' logf and sinf/cosf by Stephen
// Moshier), compiled by GCC with -mfma and -ffp-contract=fast. The
// polynomial coefficients are Cephes'. Which multiply-adds GCC fused is a
// measured fact (shared/golden/wan/README.md, "Noise RNG" 4): every Horner
// step of the polynomials, and the two steps noted below; the others are
// exact products or did not change any result.

// The Cephes logf coefficients: log(1+x) ≈ x - x²/2 + x³·P(x).
var logP = [9]float32{
	7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
	-1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
	2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1,
}

const (
	sqrtHalf float32 = 0.707106781186547524
	ln2Lo    float32 = -2.12194440e-4 // log(2) = ln2Hi + ln2Lo
	ln2Hi    float32 = 0.693359375
	minNorm          = 0x00800000 // bits of the smallest normal float32
)

// logCephes is log256_ps for one lane: x = m·2^e with m in [0.5, 1), m
// moved to [sqrt(1/2), sqrt(2)) with e adjusted, then
// log(x) = (m-1) + (m-1)³·P(m-1) - (m-1)²/2 + e·log 2, log 2 split in two
// parts. x <= 0 gives NaN; subnormals are cut to the smallest normal.
func logCephes(x float32) float32 {
	invalid := x <= 0
	if math.Float32bits(x) < minNorm { // _mm256_max_ps(x, min_norm_pos) for x >= 0
		x = math.Float32frombits(minNorm)
	}
	b := math.Float32bits(x)
	e := float32(int32(b>>23)-0x7f) + 1
	x = math.Float32frombits(b&^0x7f800000 | math.Float32bits(0.5))
	var tmp float32
	mask := x < sqrtHalf
	if mask {
		tmp = x
	}
	x = x - 1
	if mask {
		e = e - 1
	}
	x = x + tmp
	z := float32(x * x)

	y := logP[0]
	for _, p := range logP[1:] {
		y = fma32(y, x, p) // fused Horner step
	}
	y = float32(y * x)
	y = fma32(y, z, float32(e*ln2Lo)) // fused: y·z + e·ln2Lo
	y = y - float32(z*0.5)
	x = x + y
	x = x + float32(e*ln2Hi)
	if invalid {
		return float32(math.NaN())
	}
	return x
}

// The Cephes sinf/cosf constants: 4/π, π/4 in three parts for the
// range reduction, and the two polynomials in z = x² on [-π/4, π/4].
const (
	fourOverPi float32 = 1.27323954473516
	negDP1     float32 = -0.78515625
	negDP2     float32 = -2.4187564849853515625e-4
	negDP3     float32 = -3.77489497744594108e-8
)

var (
	sinP = [3]float32{-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1}
	cosP = [3]float32{2.443315711809948e-005, -1.388731625493765e-003, 4.166664568298827e-002}
)

// sincosCephes is sincos256_ps for one lane: j = the octant of |x|
// rounded up to even, x reduced by j·π/4 in three parts, both
// polynomials evaluated, each chosen and signed by j's bits.
func sincosCephes(x float32) (sin, cos float32) {
	signSin := math.Float32bits(x) & 0x80000000
	x = math.Float32frombits(math.Float32bits(x) &^ 0x80000000)

	j := int32(float32(x * fourOverPi)) // cvttps: truncation
	j = (j + 1) &^ 1
	y := float32(j)
	swapSin := uint32(j&4) << 29
	sinPoly := j&2 == 0
	signCos := uint32(^(j-2)&4) << 29
	signSin ^= swapSin

	x = x + float32(y*negDP1)
	x = x + float32(y*negDP2)
	x = x + float32(y*negDP3)

	z := float32(x * x)
	yc := fma32(cosP[0], z, cosP[1])
	yc = fma32(yc, z, cosP[2])
	yc = float32(yc * z)
	yc = fma32(yc, z, -float32(z*0.5)) // fused: yc·z - z/2
	yc = yc + 1

	ys := fma32(sinP[0], z, sinP[1])
	ys = fma32(ys, z, sinP[2])
	ys = float32(ys * z)
	ys = fma32(ys, x, x) // fused: ys·x + x

	// The kernel selects by masking and adds the other lane's +0, which
	// turns a -0 into +0.
	if sinPoly {
		sin, cos = ys+0, yc+0
	} else {
		sin, cos = yc+0, ys+0
	}
	return math.Float32frombits(math.Float32bits(sin) ^ signSin),
		math.Float32frombits(math.Float32bits(cos) ^ signCos)
}

// fma32 returns a·b+c rounded once to float32, as VFMADD does. The product
// of two float32 values is exact in float64; the sum is not always, and
// rounding it to float64 and then to float32 would round twice. TwoSum
// gives the part the float64 sum lost, which decides the one case the
// double rounding gets wrong: a float64 sum exactly halfway between two
// float32 values.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	r := float32(s)
	if float64(r) == s || math.IsInf(float64(r), 0) || s != s {
		return r
	}
	bb := s - p
	lost := (p - (s - bb)) + (float64(c) - bb)
	if lost == 0 {
		return r
	}
	other := math.Nextafter32(r, float32(math.Inf(1)))
	if float64(r) > s {
		other = math.Nextafter32(r, float32(math.Inf(-1)))
	}
	if float64(r)-s != s-float64(other) {
		return r // s is not a tie: the nearest float32 to s is the nearest to a·b+c
	}
	if (lost > 0) == (other > r) {
		return other
	}
	return r
}
