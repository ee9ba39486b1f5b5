package unet

import (
	"math"
	"sync"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/kernel"
)

// queryBlock is how many query rows one attention task takes: its scores,
// queryBlock × keys floats, are the only n×m memory there is (4096 keys at
// 512²: 1 MiB plus the map's border rows), never a whole head's.
const queryBlock = 64

// attention is multi-head scaled dot-product attention without masks,
// softmax(q·kᵀ/√d)·v per head, in float32. Both products run as 1×1
// convolutions over a one-row map of the block's queries (compute/conv's
// micro-kernels: 6 pixels × 64 channels of accumulators, about twice the
// speed of 4×4 dot-product tiles at head dims of 40–160): q·kᵀ with the
// head's keys as the kernel (m output channels), then p·v with its values
// transposed (d output channels). The scores of one block of queries are
// computed, normalised and used before the next block's.
type attention struct {
	convs map[[2]int][]*conv.Conv // by (cout, cin): one 1×1 convolution per head, repacked every call
}

// heads returns the numHeads convolutions of cin → cout channels.
func (a *attention) heads(cout, cin int) []*conv.Conv {
	key := [2]int{cout, cin}
	if cs, ok := a.convs[key]; ok {
		return cs
	}
	zero := make([]float32, cout*cin)
	cs := make([]*conv.Conv, numHeads)
	for i := range cs {
		c, err := conv.NewConv(zero, nil, cout, cin, 1, 1)
		must(err)
		cs[i] = c
	}
	if a.convs == nil {
		a.convs = map[[2]int][]*conv.Conv{}
	}
	a.convs[key] = cs
	return cs
}

// attentionShapes lists the (cout, cin) of every 1×1 convolution the
// attention of an h×w latent with nctx context tokens packs: per level,
// self-attention's (n, d) and (d, n), cross-attention's (nctx, d) and
// (d, nctx).
func attentionShapes(h, w, nctx int) map[[2]int]bool {
	shapes := map[[2]int]bool{}
	for level := range 3 {
		n := (h >> level) * (w >> level)
		d := channelMult[level] * modelChannels / numHeads
		for _, m := range []int{n, nctx} {
			shapes[[2]int{m, d}] = true
			shapes[[2]int{d, m}] = true
		}
	}
	return shapes
}

// attentionBytes is the memory of the packed heads for those shapes.
func attentionBytes(h, w, nctx int) int64 {
	var b int64
	for s := range attentionShapes(h, w, nctx) {
		b += numHeads * conv.PackedBytes(s[0], s[1], 1)
	}
	return b
}

// scratch is one task's maps: the query block, its scores, its output.
type scratch struct{ q, s, o []float32 }

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// scratchBytes is one task's scratch for at most m keys and head dim d.
func scratchBytes(m, d int) int64 {
	return 4 * int64(2*conv.MapLen(1, queryBlock, d)+conv.MapLen(1, queryBlock, m))
}

// run sets out (n, dim) to the attention of queries q (n, dim) over keys k
// and values v (m, dim), numHeads heads of dim/numHeads.
func (a *attention) run(p *compute.Pool, out, q, k, v []float32, n, m, dim, numHeads int) {
	d := dim / numHeads
	kc, vc := a.heads(m, d), a.heads(d, m)
	p.For(numHeads, func(lo, hi int) {
		for hd := lo; hd < hi; hd++ {
			must(kc[hd].Repack1x1(k[hd*d:], dim, 1)) // W[j][c] = k[j][hd·d + c]
			must(vc[hd].Repack1x1(v[hd*d:], 1, dim)) // W[c][j] = v[j][hd·d + c]
		}
	})
	scale := float32(1 / math.Sqrt(float64(d)))
	blocks := (n + queryBlock - 1) / queryBlock
	p.For(numHeads*blocks, func(lo, hi int) {
		sc := scratches.Get().(*scratch)
		defer scratches.Put(sc)
		for task := lo; task < hi; task++ {
			hd, i0 := task/blocks, task%blocks*queryBlock
			nq := min(queryBlock, n-i0)
			// Only the maps' interiors are read and written: a 1×1
			// convolution has no padding, so the borders may hold anything.
			qm := &conv.Map{H: 1, W: nq, C: d, Data: grow(&sc.q, conv.MapLen(1, nq, d))}
			sm := &conv.Map{H: 1, W: nq, C: m, Data: grow(&sc.s, conv.MapLen(1, nq, m))}
			om := &conv.Map{H: 1, W: nq, C: d, Data: grow(&sc.o, conv.MapLen(1, nq, d))}
			qr := qm.Row(0)
			for i := range nq {
				copy(qr[i*d:(i+1)*d], q[(i0+i)*dim+hd*d:(i0+i)*dim+hd*d+d])
			}
			must(kc[hd].Apply(nil, sm, qm, nil, false)) // scores (nq, m)
			sr := sm.Row(0)
			for i := range nq {
				row := sr[i*m : (i+1)*m]
				kernel.ScaleF32(row, scale)
				compute.Softmax(row)
			}
			must(vc[hd].Apply(nil, om, sm, nil, false)) // (nq, d)
			or := om.Row(0)
			for i := range nq {
				copy(out[(i0+i)*dim+hd*d:(i0+i)*dim+hd*d+d], or[i*d:(i+1)*d])
			}
		}
	})
}

// grow returns (*s)[:n], reallocating *s if it is shorter.
func grow(s *[]float32, n int) []float32 {
	if cap(*s) < n {
		*s = make([]float32, n)
	}
	return (*s)[:n]
}

// must panics on an error that the model's own shapes rule out (a broken
// invariant, not a bad input: Eps checks its arguments first).
func must(err error) {
	if err != nil {
		panic("unet: attention: " + err.Error())
	}
}
