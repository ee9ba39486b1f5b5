package kernel

import "fmt"

// ScoresF16 sets s[i] = scale · Σ_j half(k_i[j])·q[j] for i < len(s), where
// key row k_i is len(q) little-endian halves starting at k[i*stride]: one
// head's attention scores over consecutive positions of an F16 KV cache,
// whose rows interleave the heads (stride is a whole row of the cache).
// One call per head and query instead of one per position: at a context
// of a few hundred tokens the per-position call cost the 1B model more
// time than reading the cache.
func ScoresF16(s []float32, k []byte, stride int, q []float32, scale float32) {
	checkStrided("ScoresF16", len(s), k, stride, len(q))
	if len(s) == 0 {
		return
	}
	scoresF16(s, k, stride, q, scale)
}

// ScoresF16x4 is ScoresF16 for four query heads that read the same keys
// (a group of grouped-query attention), with the same bits as four
// ScoresF16 calls: head j's query is q[j*w:(j+1)*w] (w = len(q)/4) and its
// n scores go to s[j*len(s)/4:]. Each key is read and converted once for
// the four.
func ScoresF16x4(s []float32, n int, k []byte, stride int, q []float32, scale float32) {
	w := len(q) / 4
	if len(q) != 4*w || n < 0 || len(s) < 4*n || len(s)%4 != 0 {
		panic(fmt.Sprintf("kernel: ScoresF16x4: %d query floats and %d score slots for 4 heads of %d scores", len(q), len(s), n))
	}
	checkStrided("ScoresF16x4", n, k, stride, w)
	if n == 0 {
		return
	}
	scoresF16x4(s, n, k, stride, q, scale)
}

// MixF16 sets o = Σ_i w[i]·half(v_i) for i < len(w), where value row v_i
// is len(o) little-endian halves starting at v[i*stride]: one head's
// attention output, the values weighted by the softmax of its scores.
func MixF16(o []float32, v []byte, stride int, w []float32) {
	checkStrided("MixF16", len(w), v, stride, len(o))
	clear(o)
	if len(w) == 0 {
		return
	}
	mixF16(o, v, stride, w)
}

// MixF16x4 is MixF16 for four query heads that read the same values (a
// group of grouped-query attention), with the same bits as four MixF16
// calls: head j's n weights are w[j*len(w)/4:] and its output
// o[j*len(o)/4:(j+1)*len(o)/4]. Each value row is read and converted once
// for the four.
func MixF16x4(o []float32, n int, v []byte, stride int, w []float32) {
	width, wn := len(o)/4, len(w)/4
	if len(o) != 4*width || n < 0 || wn < n || len(w)%4 != 0 {
		panic(fmt.Sprintf("kernel: MixF16x4: %d output floats and %d weight slots for 4 heads of %d weights", len(o), len(w), n))
	}
	checkStrided("MixF16x4", n, v, stride, width)
	clear(o)
	if n == 0 || width == 0 {
		return
	}
	mixF16x4(o, n, v, stride, w)
}

// checkStrided panics unless rows rows of width halves, stride bytes
// apart, fit in b (a caller's bug, not input).
func checkStrided(name string, rows int, b []byte, stride, width int) {
	if rows > 0 && (stride < 2*width || (rows-1)*stride+2*width > len(b)) {
		panic(fmt.Sprintf("kernel: %s: %d rows of %d halves %d bytes apart do not fit in %d bytes", name, rows, width, stride, len(b)))
	}
}

// scoresF16 and mixF16 are the active implementations (impl_*.go).
var (
	scoresF16   = scoresF16Generic
	scoresF16x4 = scoresF16x4Generic
	mixF16      = mixF16Generic
	mixF16x4    = mixF16x4Generic
)

// scoresF16Generic is the specification: each row's sum in column order,
// then the scale.
func scoresF16Generic(s []float32, k []byte, stride int, q []float32, scale float32) {
	for i := range s {
		row := k[i*stride : i*stride+2*len(q)]
		var sum float32
		for j, x := range q {
			sum += fp16Table[uint16(row[2*j])|uint16(row[2*j+1])<<8] * x
		}
		s[i] = sum * scale
	}
}

// scoresF16x4Generic is the specification: ScoresF16 on each head.
func scoresF16x4Generic(s []float32, n int, k []byte, stride int, q []float32, scale float32) {
	w, sn := len(q)/4, len(s)/4
	for j := range 4 {
		scoresF16(s[j*sn:j*sn+n], k, stride, q[j*w:(j+1)*w], scale)
	}
}

// mixF16Generic is the specification: each output column accumulates the
// rows in position order.
func mixF16Generic(o []float32, v []byte, stride int, w []float32) {
	for i, a := range w {
		row := v[i*stride : i*stride+2*len(o)]
		for j := range o {
			o[j] += a * fp16Table[uint16(row[2*j])|uint16(row[2*j+1])<<8]
		}
	}
}

// mixF16x4Generic is the specification: the active MixF16 loop on each
// head (o cleared).
func mixF16x4Generic(o []float32, n int, v []byte, stride int, w []float32) {
	width, wn := len(o)/4, len(w)/4
	for j := range 4 {
		mixF16(o[j*width:(j+1)*width], v, stride, w[j*wn:j*wn+n])
	}
}
