package kernel

import "math"

// Exp returns e^x in float32 arithmetic, within 2 ulp of the correctly
// rounded result over the whole float32 range (TestExpSweep sweeps it
// against float32(math.Exp)). It is the exponential of SiLU and softmax,
// where float64 math.Exp cost ~10 % of prefill; Exp is ~2.5× faster.
//
// Method (Cody & Waite, "Software Manual for the Elementary Functions",
// 1980, ch. 6): write x = n·ln2 + r with n = round(x/ln2), so |r| ≤ ln2/2;
// ln2 is split into a short high part (n·ln2Hi is exact for |n| < 2^15)
// and a low correction, so r keeps its accuracy. e^r is the degree-7
// Taylor polynomial (truncation error r^8/8! ≤ 5.3e-9 relative, below half
// an ulp) evaluated in Estrin's scheme (short dependency chains), and 2^n
// is put into the exponent bits. n is rounded by adding 1.5·2^23, which
// leaves round-to-nearest(t) in the low mantissa bits of the sum.
// Exp's constants (also in the SiLU and softmax loops' table, silu.go).
const (
	log2e = 1.44269504088896341
	ln2Hi = 0.693359375    // 0x3f318000: 9 significant bits
	ln2Lo = -2.12194440e-4 // ln2 - ln2Hi
	round = 12582912       // 1.5·2^23
)

func Exp(x float32) float32 {
	if !(x >= -87 && x <= 88) { // n outside [-126, 127], or NaN
		return expTail(x)
	}
	// The float32 conversions round each product where it is written, so
	// no build fuses a multiply-add (GOAMD64=v3 may): SiLU's AVX2 loop
	// repeats these operations and must get the same bits.
	t := float32(x*log2e) + round
	n := int32(math.Float32bits(t)) - int32(math.Float32bits(round))
	fn := t - round
	r := (x - float32(fn*ln2Hi)) - float32(fn*ln2Lo)
	return expPoly(r) * math.Float32frombits(uint32(n+127)<<23)
}

// expPoly is Σ_{k≤7} r^k/k! in Estrin's scheme.
func expPoly(r float32) float32 {
	r2 := r * r
	d := 1.0/720 + float32(r*(1.0/5040))
	c := 1.0/24 + float32(r*(1.0/120))
	b := 0.5 + float32(r*(1.0/6))
	return (1 + r) + float32(r2*(b+float32(r2*(c+float32(r2*d)))))
}

// expTail is Exp outside the range where 2^n is a normal float32: NaN,
// overflow to +Inf, underflow to subnormals and to 0.
func expTail(x float32) float32 {
	const (
		hi = 88.72283935546875   // above: +Inf (e^hi ≈ MaxFloat32)
		lo = -103.97207641601562 // below: 0 (e^lo < half the smallest subnormal)
	)
	switch {
	case x != x:
		return x
	case x > hi:
		return float32(math.Inf(1))
	case x < lo:
		return 0
	}
	t := x * log2e
	n := int32(t + 0.5)
	if t < 0 {
		n = int32(t - 0.5)
	}
	fn := float32(n)
	p := expPoly((x - fn*ln2Hi) - fn*ln2Lo)
	if n < -126 { // subnormal result: scale by 2^(n+64), then by 2^-64
		return p * math.Float32frombits(uint32(n+64+127)<<23) * 0x1p-64
	}
	if n > 127 { // 2^128 is not a float32: 2^127·2
		return p * 0x1p127 * 2
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}
