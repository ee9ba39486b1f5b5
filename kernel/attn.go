package kernel

import "fmt"

// KeyBlock is the positions of one key block: an F16 cache keeps each
// head's keys in blocks of KeyBlock positions, dimension by dimension
// (block b, dimension j, position 16b+i at byte 32·(b·width+j)+2i), so
// that one conversion reads dimension j of 16 keys and one multiply-add
// by q[j] advances 16 scores, with no sums across lanes per key. (The
// four-head score loop in L1: 19 GB/s over keys stored position by
// position, 28 over key blocks a block at a time; see attn_amd64.s for why
// not two at a time.)
const KeyBlock = 16

// KeyBlockBytes is the size of one key block of width F16 dimensions.
func KeyBlockBytes(width int) int { return 2 * KeyBlock * width }

// ScoresF16Blocks sets s[i] = scale · Σ_j half(key_i[j])·q[j] for the
// KeyBlock·nb positions i of nb key blocks of len(q) dimensions at k (see
// KeyBlock): one head's attention scores. Each score sums the dimensions
// in order.
func ScoresF16Blocks(s []float32, nb int, k []byte, q []float32, scale float32) {
	checkBlocks("ScoresF16Blocks", nb, len(s), k, len(q))
	if nb == 0 {
		return
	}
	scoresBlocks(s, nb, k, q, scale)
}

// ScoresF16Blocks4 is ScoresF16Blocks for four query heads that read the
// same keys (a group of grouped-query attention), with the same bits as
// four ScoresF16Blocks calls: head h's query is q[h*w:(h+1)*w] (w =
// len(q)/4) and its scores go to s[h*len(s)/4:]. Each key block is read and
// converted once for the four.
func ScoresF16Blocks4(s []float32, nb int, k []byte, q []float32, scale float32) {
	w := len(q) / 4
	if len(q) != 4*w || len(s)%4 != 0 {
		panic(fmt.Sprintf("kernel: ScoresF16Blocks4: %d query floats and %d score slots for 4 heads", len(q), len(s)))
	}
	checkBlocks("ScoresF16Blocks4", nb, len(s)/4, k, w)
	if nb == 0 {
		return
	}
	scoresBlocks4(s, nb, k, q, scale)
}

// checkBlocks panics unless nb key blocks of width dimensions fit in k and
// their scores in slots (a caller's bug, not input).
func checkBlocks(name string, nb, slots int, k []byte, width int) {
	if nb < 0 || width <= 0 || slots < KeyBlock*nb || nb*KeyBlockBytes(width) > len(k) {
		panic(fmt.Sprintf("kernel: %s: %d key blocks of %d dimensions (%d bytes, %d score slots) do not fit",
			name, nb, width, len(k), slots))
	}
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

// The active implementations (impl_*.go).
var (
	scoresBlocks  = scoresBlocksGeneric
	scoresBlocks4 = scoresBlocks4Generic
	mixF16        = mixF16Generic
	mixF16x4      = mixF16x4Generic
)

// scoresBlocksGeneric is the specification: each position's sum over
// the dimensions in order, then the scale.
func scoresBlocksGeneric(s []float32, nb int, k []byte, q []float32, scale float32) {
	bb := KeyBlockBytes(len(q))
	for b := range nb {
		blk := k[b*bb : (b+1)*bb]
		for i := range KeyBlock {
			var sum float32
			for j, x := range q {
				o := 32*j + 2*i
				sum += fp16Table[uint16(blk[o])|uint16(blk[o+1])<<8] * x
			}
			s[b*KeyBlock+i] = sum * scale
		}
	}
}

// scoresBlocks4Generic is the specification: the active ScoresF16Blocks on
// each head.
func scoresBlocks4Generic(s []float32, nb int, k []byte, q []float32, scale float32) {
	w, sn := len(q)/4, len(s)/4
	for h := range 4 {
		scoresBlocks(s[h*sn:(h+1)*sn], nb, k, q[h*w:(h+1)*w], scale)
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
