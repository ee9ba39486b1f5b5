package unet

import (
	"runtime"

	"github.com/glassbox-ai/glassbox/compute/conv"
)

// state is the working memory of Eps for one latent size and context
// length: the transformers' token buffers (sized for the largest level),
// the attention packs and the arena the feature maps come from.
type state struct {
	h, w, nctx int
	temb       []float32 // (320) timestep embedding
	emb, emb2  []float32 // (1280) time_embed's hidden layer and output
	x, hn      []float32 // (n, dim) transformer residual stream, normed input
	q, att     []float32 // (n, dim)
	k, v       []float32 // (max(n, nctx), dim)
	ff         []float32 // (n, 8·dim) GEGLU projection
	ff2        []float32 // (n, 4·dim) its gated half
	attn       attention
	arena      *conv.Arena
}

// sizes are the float32 counts of state's token buffers for a latent of
// h×w and nctx context tokens: the maxima over the three levels that have
// transformers.
type sizes struct {
	nd, kv, ff, m, d int // m, d: the most keys and the widest head
}

func sizesFor(h, w, nctx int) sizes {
	var z sizes
	for level := range 3 {
		n := (h >> level) * (w >> level)
		dim := channelMult[level] * modelChannels
		z.nd = max(z.nd, n*dim)
		z.kv = max(z.kv, max(n, nctx)*dim)
		z.ff = max(z.ff, n*8*dim)
		z.m, z.d = max(z.m, n, nctx), max(z.d, dim/numHeads)
	}
	return z
}

func newState(h, w, nctx int) *state {
	z := sizesFor(h, w, nctx)
	return &state{
		h: h, w: w, nctx: nctx,
		temb: make([]float32, freqDim), emb: make([]float32, timeDim), emb2: make([]float32, timeDim),
		x: make([]float32, z.nd), hn: make([]float32, z.nd), q: make([]float32, z.nd), att: make([]float32, z.nd),
		k: make([]float32, z.kv), v: make([]float32, z.kv),
		ff: make([]float32, z.ff), ff2: make([]float32, z.ff/2),
		arena: &conv.Arena{},
	}
}

// ActivationBytes returns the working memory of one Eps call on an h×w
// latent with nctx context tokens: the token buffers and attention packs
// of the largest transformer level, the feature maps at their high-water
// mark (the skips of all input blocks plus the largest block's
// temporaries, as the arena holds them), every head's packed keys and
// values at every level, and each thread's attention scratch (one query
// block's scores; runtime.NumCPU threads at most), plus transientBytes.
func ActivationBytes(h, w, nctx int) int64 {
	z := sizesFor(h, w, nctx)
	floats := int64(freqDim+2*timeDim) + 4*int64(z.nd) + 2*int64(z.kv) + int64(z.ff) + int64(z.ff/2)
	threads := int64(runtime.NumCPU())
	return 4*floats + attentionBytes(h, w, nctx) + threads*scratchBytes(z.m, z.d) + mapPeak(h, w) + transientBytes
}

// transientBytes is what the kernels allocate per call besides the
// buffers above and leave to the garbage collector (their loops' small
// scratch, GroupNorm's statistics, the output's planar copy): measured
// 2.8–3.6 MiB at 8×8 and 16×24 latents (TestActivationBytes).
const transientBytes = 4 << 20

// mapPeak replays forward's feature-map allocations (same order, same
// sizes) on a model of conv.Arena and returns its high-water mark in
// bytes.
func mapPeak(h, w int) int64 {
	var a arenaModel
	type m struct{ h, w, c int }
	get := func(h, w, c int) m { a.get(conv.MapLen(h, w, c)); return m{h, w, c} }
	put := func(x m) { a.put(conv.MapLen(x.h, x.w, x.c)) }
	res := func(x m, cout int) m {
		hn := get(x.h, x.w, x.c)
		h1 := get(x.h, x.w, cout)
		put(hn)
		var skip m
		if x.c != cout {
			skip = get(x.h, x.w, cout)
		}
		out := get(x.h, x.w, cout)
		put(h1)
		if x.c != cout {
			put(skip)
		}
		return out
	}
	attn := func(x m) m {
		put(get(x.h, x.w, x.c))
		out := get(x.h, x.w, x.c)
		put(x)
		return out
	}
	in := get(h, w, latentChannels)
	cur := get(h, w, modelChannels)
	put(in)
	hs := []m{cur}
	for level, mult := range channelMult {
		for range resBlocks {
			cur = res(cur, mult*modelChannels)
			if level < 3 {
				cur = attn(cur)
			}
			hs = append(hs, cur)
		}
		if level < 3 {
			cur = get(cur.h/2, cur.w/2, cur.c)
			hs = append(hs, cur)
		}
	}
	mid := res(cur, cur.c)
	mid = attn(mid)
	cur2 := res(mid, mid.c)
	put(mid)
	cur = cur2
	for level := 3; level >= 0; level-- {
		for i := range resBlocks + 1 {
			sk := hs[len(hs)-1]
			hs = hs[:len(hs)-1]
			cat := get(cur.h, cur.w, cur.c+sk.c)
			put(cur)
			put(sk)
			cur = res(cat, channelMult[level]*modelChannels)
			if level < 3 {
				cur = attn(cur)
			}
			if level > 0 && i == resBlocks {
				up := get(2*cur.h, 2*cur.w, cur.c)
				put(cur)
				cur = up
			}
			put(cat)
		}
	}
	o := get(h, w, latentChannels)
	put(cur)
	put(o)
	return a.peak
}

// arenaModel counts bytes as conv.Arena does: a buffer is reused only by
// exact length, and nothing is returned, so the footprint is, per length,
// the most buffers of that length in use at once.
type arenaModel struct {
	free       map[int]int
	held, peak int64
}

func (a *arenaModel) get(n int) {
	if a.free[n] > 0 {
		a.free[n]--
		return
	}
	a.held += 4 * int64(n)
	a.peak = max(a.peak, a.held)
}

func (a *arenaModel) put(n int) {
	if a.free == nil {
		a.free = map[int]int{}
	}
	a.free[n]++
}
