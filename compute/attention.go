package compute

import (
	"fmt"
	"math"
	"sync"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Attn is how Attention weighs the keys: score s = q·k·Scale, soft-capped
// to Softcap·tanh(s/Softcap) when Softcap > 0 (Gemma 2's attention-logit
// soft-capping, arXiv:2408.00118), over only the last Window positions
// when Window > 0.
type Attn struct {
	Scale   float32
	Window  int
	Softcap float32
	// Sinks, if set, holds one logit per query head (numHeads) that the
	// head's softmax also normalizes over, with no value behind it: the
	// weights may sum to less than 1 (gpt-oss's learned attention sinks;
	// Xiao et al. 2023, "Efficient Streaming Language Models with
	// Attention Sinks", arXiv:2309.17453).
	Sinks []float32
}

// Attention computes causal scaled dot-product attention (Vaswani et al.
// 2017) for n query tokens at positions start..start+n-1 over cache
// positions 0..start+n-1. q and out are [n][numHeads*headDim]. Query head h
// reads KV head h/(numHeads/numKVHeads) (grouped-query attention). The
// query at position p sees keys k ≤ p, and with a.Window > 0 only
// p-Window < k ≤ p. Weights are softmax of the scores (Attn). Work is split
// over (token, KV head) pairs.
func Attention(p *Pool, out, q []float32, n, start int, c *KVCache, numHeads int, a Attn) {
	hd := c.HeadDim
	if n < 0 || start < 0 || start+n > c.CtxLen || numHeads <= 0 || numHeads%c.NumKVHeads != 0 ||
		len(q) < n*numHeads*hd || len(out) < n*numHeads*hd {
		panic(fmt.Sprintf("compute: Attention: n %d at start %d, ctxLen %d, %d heads over %d KV heads × %d, q %d and out %d floats do not fit",
			n, start, c.CtxLen, numHeads, c.NumKVHeads, hd, len(q), len(out)))
	}
	group := numHeads / c.NumKVHeads
	t := attnTasks.Get().(*attnTask)
	*t = attnTask{out: out, q: q, start: start, c: c, numHeads: numHeads, group: group, Attn: a}
	if c.Type != tensor.Q8_0 {
		kdot, err := kernel.FDotFor(c.Type)
		if err != nil {
			panic(err.Error())
		}
		t.kdot = kdot
	}
	// A task is a (token, KV head) pair: the KV head's keys and values are
	// read once for its group of query heads, and a chunk never splits a
	// group (split groups lost the four-head kernel and read their KV head
	// twice: two threads were no faster than one at position ~160). In a
	// model the cache has left the CPU's caches since the last step (the
	// weights streamed through them), so from attnSplitBytes of keys and
	// values on, the pairs are handed out in chunks as small as one, and both
	// threads' reads are in flight at once; below it, the caller takes them
	// all.
	perPair := (start + n) * 2 * c.headBytes()
	pairs := n * c.NumKVHeads
	grain := pairs
	if pairs*perPair >= attnSplitBytes {
		grain = 1
	}
	p.ForTask(pairs, grain, t)
	*t = attnTask{}
	attnTasks.Put(t)
}

// attnTask is Attention's loop over (token, KV head) pairs, pooled so a
// decode step allocates nothing.
type attnTask struct {
	out, q          []float32
	start           int
	c               *KVCache
	numHeads, group int
	Attn
	kdot kernel.FDot // F32 keys
}

var attnTasks = sync.Pool{New: func() any { return new(attnTask) }}

func (a *attnTask) Run(lo, hi int) {
	c, hd := a.c, a.c.HeadDim
	nkv := c.NumKVHeads
	span := a.start + (hi-1)/nkv + 1 // the most positions a pair here sees
	// A head's score slots: its positions' key blocks, whose first and
	// last may hold positions outside first..pos (scored, then dropped).
	slots := span + kernel.KeyBlock
	sb := getFloats(4 * slots)
	defer floatBufs.Put(sb)
	for u := lo; u < hi; u++ {
		i, kvh := u/nkv, u%nkv
		pos := a.start + i
		first := 0
		if a.Window > 0 {
			first = max(0, pos-a.Window+1)
		}
		np := pos + 1 - first
		h0 := i*a.numHeads + kvh*a.group // the group's first (token, head) row
		if c.Type == tensor.F16 {
			// The head's keys over positions first..pos are key blocks
			// b0..b0+nb-1 and its values np rows, each one run of the cache.
			b0 := first / kernel.KeyBlock
			nb, skip := pos/kernel.KeyBlock-b0+1, first-b0*kernel.KeyBlock
			kb := c.keyBlocks(kvh, b0, nb)
			hb, off := c.headBytes(), c.at(first, kvh)
			if len(kb)+np*hb <= streamAhead {
				// A plain streaming pass brings the head's keys and values
				// from DRAM into L2 at full bandwidth, where the kernels
				// (too many instructions per byte to keep enough reads in
				// flight) and the group's other heads find them.
				kernel.StreamRead(kb)
				kernel.StreamRead(c.v[off : off+np*hb])
			}
			for j := 0; j < a.group; {
				t := h0 + j
				if a.group-j >= 4 {
					// Four heads of the group read each key block and each
					// value once (the same bits as one at a time).
					s4 := (*sb)[:4*slots]
					kernel.ScoresF16Blocks4(s4, nb, kb, a.q[t*hd:(t+4)*hd], a.Scale)
					for k := range 4 {
						a.weigh(dropBefore(s4[k*slots:(k+1)*slots], skip, np), t+k-i*a.numHeads)
					}
					kernel.MixF16x4(a.out[t*hd:(t+4)*hd], np, c.v[off:], hb, s4)
					j += 4
					continue
				}
				sc := (*sb)[:slots]
				kernel.ScoresF16Blocks(sc, nb, kb, a.q[t*hd:(t+1)*hd], a.Scale)
				sc = dropBefore(sc, skip, np)
				a.weigh(sc, t-i*a.numHeads)
				kernel.MixF16(a.out[t*hd:(t+1)*hd], c.v[off:], hb, sc)
				j++
			}
			continue
		}
		if c.Type == tensor.Q8_0 {
			a.q8(i, kvh, pos, first, slots, *sb)
			continue
		}
		scores := (*sb)[:np]
		for j := range a.group {
			t := h0 + j
			qh, o := a.q[t*hd:(t+1)*hd], a.out[t*hd:(t+1)*hd]
			for k := first; k <= pos; k++ {
				scores[k-first] = a.kdot(c.key(k, kvh), qh) * a.Scale
			}
			a.weigh(scores, t-i*a.numHeads)
			clear(o)
			for k := first; k <= pos; k++ {
				accumulate(o, c.value(k, kvh), c.Type, scores[k-first])
			}
		}
	}
}

// q8 is Run's (token i, KV head kvh) pair over a Q8_0 cache at position
// pos, positions first..pos, with sb's 4·slots floats for scores: the
// group's query heads are scored four at a time over the head's key blocks
// (kernel.ScoresQ8Blocks4: each block read once for the four) and mix the
// values four at a time (kernel.MixQ8_0x4); a group's last heads are
// padded to four with zero queries, and their outputs dropped.
func (a *attnTask) q8(i, kvh, pos, first, slots int, sb []float32) {
	c, hd := a.c, a.c.HeadDim
	hb := c.headBytes()
	np := pos + 1 - first
	b0 := first / kernel.KeyBlock
	nb, skip := pos/kernel.KeyBlock-b0+1, first-b0*kernel.KeyBlock
	kb := c.keyBlocks(kvh, b0, nb)
	vals := c.v[c.at(first, kvh):c.at(pos+1, kvh)]
	h0 := i*a.numHeads + kvh*a.group
	s4 := sb[:4*slots]
	for j := 0; j < a.group; j += 4 {
		m := min(4, a.group-j)
		q, out := a.q[(h0+j)*hd:(h0+j+m)*hd], a.out[(h0+j)*hd:(h0+j+m)*hd]
		var pad *[]float32
		if m < 4 {
			pad = getFloats(8 * hd) // four queries, then four outputs
			q = append((*pad)[:0], q...)
			q = q[:4*hd]
			clear(q[m*hd:])
			out = (*pad)[4*hd : 8*hd]
		}
		kernel.ScoresQ8Blocks4(s4, nb, kb, q, a.Scale)
		for k := range 4 { // a padding head (k ≥ m) weighs with the last real head's sink
			a.weigh(dropBefore(s4[k*slots:(k+1)*slots], skip, np), kvh*a.group+j+min(k, m-1))
		}
		kernel.MixQ8_0x4(out, np, vals, hb, s4)
		if pad != nil {
			copy(a.out[(h0+j)*hd:(h0+j+m)*hd], out[:m*hd])
			floatBufs.Put(pad)
		}
	}
}

// dropBefore moves scores skip..skip+np-1 to the front of s (the first
// key block's positions before the window) and returns them.
func dropBefore(s []float32, skip, np int) []float32 {
	if skip > 0 {
		copy(s, s[skip:skip+np])
	}
	return s[:np]
}

// weigh turns query head h's scores into attention weights: soft-capped
// when Softcap > 0, then softmax (over the head's sink too, with Sinks).
func (a Attn) weigh(scores []float32, h int) {
	if c := a.Softcap; c > 0 {
		for i, s := range scores {
			scores[i] = c * float32(math.Tanh(float64(s/c)))
		}
	}
	if a.Sinks == nil {
		Softmax(scores)
		return
	}
	SoftmaxSink(scores, a.Sinks[h])
}

// accumulate adds a·v to o, where v is a row of o's length in F16 or F32.
func accumulate(o []float32, v []byte, dt tensor.DType, a float32) {
	if dt == tensor.F16 {
		kernel.AxpyF16(o, v, a)
		return
	}
	for i := range o {
		o[i] += a * math.Float32frombits(uint32(v[4*i])|uint32(v[4*i+1])<<8|uint32(v[4*i+2])<<16|uint32(v[4*i+3])<<24)
	}
}

// streamAhead is the most KV bytes of one head Attention streams into L2
// before reading them (half of a 1 MiB L2, leaving room for the rest).
// 1B Q4_0 at 2 threads, position ~1000: attention 3.85 -> 3.29 ms per
// decode step (A/B, two runs each); neutral at position 150.
const streamAhead = 512 << 10

// attnSplitBytes is the least KV cache one Attention call reads (over all
// its pairs) that it splits over the pool's threads. 1B Q4_0 decode at 2
// threads, positions 16–80 (32–160 KiB a layer): attention 12–16 % faster
// one pair at a time than in chunks of 64 KiB, which left it on one thread
// below position ~48 (four runs alternating steps in one process); the
// same at positions 80–500, where the chunks were one or two pairs
// already. A tiny model's cache, which stays in the CPU's caches, stays
// on the calling thread below it.
const attnSplitBytes = 32 << 10
