package sample

import "slices"

// sortTop rearranges c[from:] so that c[from:to] holds the to-from best
// candidates of c[from:] (by less) in sorted order. It selects with an
// introselect (quickselect with a median-of-three pivot that falls back to
// a full sort when partitioning degenerates), then sorts only the kept
// prefix: O(n + k log k) instead of O(n log n).
func sortTop(c []cand, from, to int) {
	if to <= from {
		return
	}
	rest := c[from:]
	k := to - from
	if k < len(rest) {
		selectTop(rest, k)
	}
	slices.SortFunc(rest[:k], cmpCand)
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

// selectTop partitions c so that c[:k] are the k best candidates (in no
// particular order), 0 < k < len(c).
func selectTop(c []cand, k int) {
	lo, hi := 0, len(c) // the k-th boundary lies in c[lo:hi]
	budget := 2 * bitsLen(len(c))
	for hi-lo > 16 {
		if budget == 0 {
			slices.SortFunc(c[lo:hi], cmpCand)
			return
		}
		budget--
		p := partition(c[lo:hi]) + lo // c[lo:p] better than c[p], c[p+1:hi] not
		switch {
		case p == k || p+1 == k:
			return
		case p > k:
			hi = p
		default:
			lo = p + 1
		}
	}
	slices.SortFunc(c[lo:hi], cmpCand)
}

// partition places a median-of-three pivot at its final position and
// returns that position: better candidates before it, the rest after.
func partition(c []cand) int {
	n := len(c)
	m := n / 2
	// Order c[0], c[m], c[n-1]; the median goes to the end as the pivot.
	if less(c[m], c[0]) {
		c[m], c[0] = c[0], c[m]
	}
	if less(c[n-1], c[0]) {
		c[n-1], c[0] = c[0], c[n-1]
	}
	if less(c[n-1], c[m]) {
		c[n-1], c[m] = c[m], c[n-1]
	}
	c[m], c[n-1] = c[n-1], c[m]
	pivot := c[n-1]
	i := 0
	for j := 0; j < n-1; j++ {
		if less(c[j], pivot) {
			c[i], c[j] = c[j], c[i]
			i++
		}
	}
	c[i], c[n-1] = c[n-1], c[i]
	return i
}

func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}
