package sample

import "math"

// LogSumExp returns log Σ exp(logits[i]) — the log of the softmax's
// denominator, so that logits[i] − LogSumExp(logits) is token i's
// natural-log probability at temperature 1. It sums in float64 after
// subtracting the largest logit (no overflow), in index order, with this
// package's exp (the same value on every platform). NaN logits count as
// −Inf; with every logit −Inf (or none) it returns −Inf.
func LogSumExp(logits []float32) float64 {
	var b LogSumExpBuf
	return b.LogSumExp(logits)
}

// LogSumExpBuf keeps LogSumExp's scratch between calls (one per
// generation: not safe for concurrent use).
type LogSumExpBuf struct {
	c []cand
	w []float64
}

// LogSumExp is the package-level LogSumExp with b's scratch: the sum runs
// through the softmax pass's expSum (AVX2/AVX-512 where present, the same
// bits as its Go twin).
func (b *LogSumExpBuf) LogSumExp(logits []float32) float64 {
	mx := math.Inf(-1)
	b.c = b.c[:0]
	for i, v := range logits {
		if v != v {
			continue // NaN: as −Inf, adds nothing
		}
		if float64(v) > mx {
			mx = float64(v)
		}
		b.c = append(b.c, cand{id: int32(i), logit: v})
	}
	if math.IsInf(mx, 0) {
		return mx
	}
	if cap(b.w) < len(b.c) {
		b.w = make([]float64, len(b.c))
	}
	return mx + math.Log(expSum(b.c, mx, 1, b.w))
}

// TopIDs appends to dst[:0] the k ids with the largest logits, largest
// first, lower id first on a tie (NaN logits last, as −Inf), and returns
// it. One pass with an insertion into the k kept so far: almost every
// logit is rejected by one comparison (k is small: logprobs ask for at
// most 20).
func TopIDs(logits []float32, k int, dst []int) []int {
	dst = dst[:0]
	k = min(k, len(logits))
	if k <= 0 {
		return dst
	}
	top := make([]cand, 0, k)
	for i, v := range logits {
		if v != v {
			v = float32(math.Inf(-1))
		}
		c := cand{id: int32(i), logit: v}
		if len(top) == k && !less(c, top[k-1]) {
			continue
		}
		if len(top) < k {
			top = append(top, c)
		}
		j := len(top) - 1
		for ; j > 0 && less(c, top[j-1]); j-- {
			top[j] = top[j-1]
		}
		top[j] = c
	}
	for _, c := range top {
		dst = append(dst, int(c.id))
	}
	return dst
}
