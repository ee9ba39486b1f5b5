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

// KeyBlockQ8Bytes is the size of one Q8_0 key block of width dimensions (a
// multiple of 32): per 32 dimensions a group of the 16 positions' scales
// (halves, 32 bytes) and then the group's 32 dimensions, each the 16
// positions' int8 levels (16 bytes): 544 bytes, Q8_0's 34 per position
// and 32 dimensions.
func KeyBlockQ8Bytes(width int) int { return width / 32 * keyGroupQ8 }

// keyGroupQ8 is the bytes of one group of 32 dimensions of a Q8_0 key block.
const keyGroupQ8 = 2*KeyBlock + 32*KeyBlock

// ScoresQ8Blocks4 is ScoresF16Blocks4 over Q8_0 key blocks (KeyBlockQ8Bytes;
// a Q8_0 KV cache): head h's query is q[h*w:(h+1)*w] (w = len(q)/4, a
// multiple of 32, in float: the queries are not rounded) and its 16·nb
// scores go to s[h*len(s)/4:]. For each position and group of 32
// dimensions, the even and the odd dimensions' products are summed apart,
// in order, their sum multiplied by the position's scale and added to the
// position's total; the total is then scaled by scale.
func ScoresQ8Blocks4(s []float32, nb int, k []byte, q []float32, scale float32) {
	w := len(q) / 4
	if len(q) != 4*w || w%32 != 0 || len(s)%4 != 0 || nb < 0 || len(s)/4 < KeyBlock*nb || nb*KeyBlockQ8Bytes(w) > len(k) {
		panic(fmt.Sprintf("kernel: ScoresQ8Blocks4: %d key blocks of %d dimensions (%d bytes, %d score slots) for 4 heads do not fit", nb, w, len(k), len(s)))
	}
	if nb == 0 {
		return
	}
	scoresQ8x4(s, nb, k, q, scale)
}

// PutKeyQ8 writes one position's key, row (width/32 Q8_0 blocks: a half
// scale and 32 int8 levels each), into lane lane (< KeyBlock) of the Q8_0
// key block blk (KeyBlockQ8Bytes(width)).
func PutKeyQ8(blk []byte, lane int, row []byte) {
	groups := len(row) / 34
	if len(row) != 34*groups || lane < 0 || lane >= KeyBlock || len(blk) < groups*keyGroupQ8 {
		panic(fmt.Sprintf("kernel: PutKeyQ8: a %d-byte row into lane %d of a %d-byte block", len(row), lane, len(blk)))
	}
	for g := range groups {
		gc, src := blk[g*keyGroupQ8:(g+1)*keyGroupQ8], row[34*g:34*g+34]
		gc[2*lane], gc[2*lane+1] = src[0], src[1]
		for j, q := range src[2:] {
			gc[2*KeyBlock+KeyBlock*j+lane] = q
		}
	}
}

// MixQ8_0x4 is MixF16x4 over value rows stored as Q8_0 (a Q8_0 KV
// cache): row i holds width = len(o)/4 values, a multiple of 32, as width/32
// blocks of a half scale d and 32 int8 levels at v[i*stride:]; head j's n
// weights are w[j*len(w)/4:] and o[j*width:(j+1)*width] = Σ_i w_j[i]·(d·q)
// per column, summed in position order from zero.
func MixQ8_0x4(o []float32, n int, v []byte, stride int, w []float32) {
	width, wn := len(o)/4, len(w)/4
	if len(o) != 4*width || width%32 != 0 || n < 0 || wn < n || len(w)%4 != 0 {
		panic(fmt.Sprintf("kernel: MixQ8_0x4: %d output floats (4 heads of a multiple of 32) and %d weight slots for 4 heads of %d weights", len(o), len(w), n))
	}
	if rb := width / 32 * 34; n > 0 && (stride < rb || (n-1)*stride+rb > len(v)) {
		panic(fmt.Sprintf("kernel: MixQ8_0x4: %d rows of %d Q8_0 bytes %d bytes apart do not fit in %d bytes", n, rb, stride, len(v)))
	}
	clear(o)
	if n == 0 || width == 0 {
		return
	}
	mixQ8x4(o, n, v, stride, w)
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
	mixQ8x4       = mixQ8x4Generic
	scoresQ8x4    = scoresQ8x4Generic
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

// mixQ8x4Generic is the specification of MixQ8_0x4: for each head, each
// value row in position order, each column += w·(d·q).
func mixQ8x4Generic(o []float32, n int, v []byte, stride int, w []float32) {
	width, wn := len(o)/4, len(w)/4
	for h := range 4 {
		oh := o[h*width : (h+1)*width]
		for i, a := range w[h*wn : h*wn+n] {
			row := v[i*stride:]
			for b := range width / 32 {
				blk := row[34*b : 34*b+34]
				d := fp16Table[uint16(blk[0])|uint16(blk[1])<<8]
				for j, q := range blk[2:] {
					oh[32*b+j] += a * (d * float32(int8(q)))
				}
			}
		}
	}
}

// scoresQ8x4Generic is the specification of ScoresQ8Blocks4.
func scoresQ8x4Generic(s []float32, nb int, k []byte, q []float32, scale float32) {
	w, sn := len(q)/4, len(s)/4
	bb := KeyBlockQ8Bytes(w)
	for b := range nb {
		blk := k[b*bb : (b+1)*bb]
		for h := range 4 {
			qh := q[h*w : (h+1)*w]
			for i := range KeyBlock {
				var tot float32
				for g := range w / 32 {
					gc := blk[g*keyGroupQ8 : (g+1)*keyGroupQ8]
					d := fp16Table[uint16(gc[2*i])|uint16(gc[2*i+1])<<8]
					lv := gc[2*KeyBlock:]
					var even, odd float32
					for j := 0; j < 32; j += 2 {
						even += float32(int8(lv[KeyBlock*j+i])) * qh[32*g+j]
						odd += float32(int8(lv[KeyBlock*(j+1)+i])) * qh[32*g+j+1]
					}
					tot += (even + odd) * d
				}
				s[h*sn+b*KeyBlock+i] = tot * scale
			}
		}
	}
}
