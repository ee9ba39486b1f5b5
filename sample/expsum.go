package sample

// expSum sets w[i] = expf64((float64(c[i].logit) − mx)·invT) for every
// candidate and returns the sum of the w[i], added one at a time in index
// order. It is the softmax numerator pass of draw, topP and Top; with
// invT = 1 the multiply is exact, so it also serves the passes at
// temperature 1. len(w) must be at least len(c).
//
// expSumGeneric is the specification; on amd64 with AVX2 an assembly
// version computes four candidates at a time with the same operations in
// the same order (no fused multiply-adds), so its results are the same
// bits (TestExpSumMatchesGeneric).
func expSum(c []cand, mx, invT float64, w []float64) float64 {
	w = w[:len(c)]
	if !useExpSumAsm {
		return expSumGeneric(c, mx, invT, w, 0)
	}
	var total float64
	for i := 0; i < len(c); {
		// The assembly stops before a group of four with an argument
		// outside [-700, 700] (or NaN), where expf64 takes its special
		// or scaled paths, and before a tail of fewer than four.
		done, t := expSumAsm(c[i:], mx, invT, w[i:], total)
		i, total = i+done, t
		if i < len(c) {
			end := min(i+4, len(c))
			total = expSumGeneric(c[i:end], mx, invT, w[i:end], total)
			i = end
		}
	}
	return total
}

// expSumGeneric is expSum in plain Go, continuing the sum from total.
func expSumGeneric(c []cand, mx, invT float64, w []float64, total float64) float64 {
	w = w[:len(c)]
	for i, x := range c {
		p := expf64(float64(float64(x.logit)-mx) * invT)
		w[i] = p
		total += p
	}
	return total
}
