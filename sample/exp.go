package sample

import "math"

// expf64 returns e^x in float64. It is this package's own routine rather
// than math.Exp because math.Exp has per-architecture assembly that may
// differ in the last bit; a sampler promises the same draw on every
// platform, so every operation here is written with explicit float64
// conversions, which the Go spec says round and so prevent the compiler
// from fusing multiply-adds (FMA) differently per architecture.
//
// Method: x = k·ln2 + r with |r| ≤ ln2/2 (Cody–Waite split of ln2, so
// k·ln2Hi is exact), e^r by its Taylor series to degree 13 (truncation
// below 1e-17 relative), then the exact scaling by 2^k. Relative error
// against math.Exp is below 1e-15 (TestExp).
func expf64(x float64) float64 {
	const (
		ln2Hi  = 6.93147180369123816490e-01 // high 32 bits of ln2: k·ln2Hi is exact
		ln2Lo  = 1.90821492927058770002e-10
		invLn2 = 1.44269504088896338700e+00
	)
	switch {
	case x != x:
		return x
	case x > 709.782712893384:
		return math.Inf(1)
	case x < -745.1332191019412:
		return 0
	}
	k := math.Floor(float64(x*invLn2) + 0.5)
	r := float64(x-float64(k*ln2Hi)) - float64(k*ln2Lo)
	// Horner: 1 + r(1 + r/2(1 + r/3(...))) with the coefficients 1/n!.
	p := 1.0 / 6227020800 // 1/13!
	for _, c := range expCoeffs {
		p = float64(p*r) + c
	}
	return scale2(p, int(k))
}

// expCoeffs are 1/12!, 1/11!, ..., 1/1!, 1/0!.
var expCoeffs = [...]float64{
	1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
	1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1, 1,
}

// scale2 returns p·2^k for p in [0.5, 2], k in [-1075, 1025].
func scale2(p float64, k int) float64 {
	pow := func(e int) float64 { return math.Float64frombits(uint64(e+1023) << 52) }
	switch {
	case k > 1023:
		return float64(p*pow(1023)) * pow(k-1023)
	case k < -1021:
		return float64(p*pow(k+600)) * pow(-600)
	}
	return p * pow(k)
}
