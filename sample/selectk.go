package sample

import (
	"math"
	"slices"
)

// sortBuf is the scratch of radixSort, kept by a Sampler between calls.
type sortBuf struct{ keys, tmp []uint64 }

// sortTop rearranges c[from:] so that c[from:to] holds the k = to−from
// best candidates of c[from:] (by less) in sorted order, and c[to:] the
// others. It reports whether it sorted all of c[from:] (then every later
// prefix is in order too).
//
//   - k at most 1/64 of the candidates (top-k 40 and top-p's first 64 of
//     a vocabulary): a heap of the k best seen so far, which rejects
//     almost every candidate with one comparison of logits, then a sort
//     of the k.
//   - more: all of c[from:] by radixSort (a comparison sort of 32000
//     candidates took ~2 ms; top-p over a flat distribution sorts most of
//     the vocabulary).
//
// Since less is a strict total order, c[from:to] does not depend on the
// method.
func sortTop(c []cand, from, to int, buf *sortBuf) (all bool) {
	if to <= from {
		return false
	}
	rest := c[from:]
	k := to - from
	switch {
	case k < len(rest) && 64*k <= len(rest):
		heapTop(rest, k)
		slices.SortFunc(rest[:k], cmpCand)
		return false
	case len(rest) < 256:
		slices.SortFunc(rest, cmpCand)
	default:
		radixSort(rest, buf)
	}
	return true
}

func cmpCand(a, b cand) int {
	switch {
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return 0
}

// heapTop rearranges c so that c[:k] holds the k best candidates (in no
// particular order) and c[k:] the rest, 0 < k < len(c). c[:k] is kept as
// a heap of the best seen so far with the worst at its root; a later
// candidate is almost always rejected by one comparison with the root's
// logit, and otherwise trades places with the root.
func heapTop(c []cand, k int) {
	h := c[:k]
	for i := k/2 - 1; i >= 0; i-- {
		siftWorst(h, i)
	}
	for j := k; j < len(c); j++ {
		x := c[j]
		if x.logit < h[0].logit || !less(x, h[0]) {
			continue
		}
		c[j], h[0] = h[0], x
		siftWorst(h, 0)
	}
}

// siftWorst moves h[i] down until it is no better than either child, so
// that every parent is worse than its children and h[0] is the worst.
func siftWorst(h []cand, i int) {
	for {
		w := 2*i + 1 // the worse child
		if w >= len(h) {
			return
		}
		if r := w + 1; r < len(h) && less(h[w], h[r]) {
			w = r
		}
		if !less(h[i], h[w]) {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// radixSort sorts c by less with a least-significant-digit radix sort
// over one 64-bit key per candidate: the logit's bits mapped so that
// unsigned order is descending logit order, then the id. The passes sort
// by the logit half only, 11 bits at a time (three passes; one in which
// every key has the same digit is skipped), and the rare runs of equal
// logits are then put in id order, which gives less's order. A -0 logit
// comes out as +0 (less does not tell them apart, and nothing computed
// from a logit does either). NaN logits (mapped to -Inf on load) would
// sort after -Inf.
func radixSort(c []cand, buf *sortBuf) {
	const bits, size = 11, 1 << 11
	n := len(c)
	if cap(buf.keys) < n {
		buf.keys, buf.tmp = make([]uint64, n), make([]uint64, n)
	}
	src, dst := buf.keys[:n], buf.tmp[:n]
	var hist [3][size]int32
	for i, x := range c {
		k := uint64(^ascending(x.logit))<<32 | uint64(uint32(x.id))
		src[i] = k
		hist[0][(k>>32)%size]++
		hist[1][(k>>(32+bits))%size]++
		hist[2][k>>(32+2*bits)]++
	}
	for d := range hist {
		h := &hist[d]
		shift := 32 + bits*d
		if h[(src[0]>>shift)%size] == int32(n) {
			continue // one digit for all: the order stands
		}
		var sum int32
		for b, cnt := range h {
			h[b] = sum
			sum += cnt
		}
		for _, k := range src {
			b := (k >> shift) % size
			dst[h[b]] = k
			h[b]++
		}
		src, dst = dst, src
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && src[hi]>>32 == src[lo]>>32 {
			hi++
		}
		if hi-lo > 1 {
			slices.Sort(src[lo:hi]) // equal logits: by id
		}
		lo = hi
	}
	for i, k := range src {
		c[i] = cand{int32(uint32(k)), fromAscending(^uint32(k >> 32))}
	}
}

// ascending maps a float32 (not NaN) to a uint32 in the same order, with
// -0 and +0 equal.
func ascending(f float32) uint32 {
	b := math.Float32bits(f)
	if b == 1<<31 { // -0
		b = 0
	}
	return b ^ (uint32(int32(b)>>31) | 1<<31) // negative: all bits flipped; else the sign bit set
}

// fromAscending inverts ascending (giving +0 for either zero).
func fromAscending(u uint32) float32 {
	if u&(1<<31) != 0 {
		return math.Float32frombits(u &^ (1 << 31))
	}
	return math.Float32frombits(^u)
}
