package compute

import (
	"fmt"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// KVCache holds one layer's keys and values, stored F16 (the default, as
// llama.cpp), Q8_0 (half of F16's bytes) or F32, head by head, so that attention reads each head's
// keys and values over the positions as one sequential stream.
// (Position-major rows, [ctxLen][numKVHeads·headDim], left a head's 128
// bytes per 1 KiB row: the 1B model's attention read its cache at ~5 GB/s,
// 6.5 of a 22 ms decode step at position 1000.)
//
//   - values: [numKVHeads][ctxLen][headDim];
//   - F16 keys: [numKVHeads][blocks][headDim][kernel.KeyBlock], the key
//     blocks kernel.ScoresF16Blocks reads (ctxLen rounded up to a whole
//     block);
//   - Q8_0 keys: [numKVHeads][blocks] Q8_0 key blocks (kernel.PutKeyQ8,
//     read by kernel.ScoresQ8Blocks4), Q8_0 values: rows of headDim/32
//     blocks (read by kernel.MixQ8_0x4);
//   - F32 keys: as the values.
type KVCache struct {
	Type       tensor.DType
	CtxLen     int
	NumKVHeads int
	HeadDim    int
	k, v       []byte
	hb         int    // bytes of one head's key or value at one position
	blocks     int    // key blocks per head (F16)
	half       []byte // Store's one head's key as halves, before it is spread into its block
	free       func() // releases k and v (Free)
}

// NewKVCache allocates a cache; dtype must be F16, F32 or Q8_0 (Q8_0 with
// head dimensions in multiples of 32: KVTypeFits); anything else panics:
// it is a configuration the caller chose and checked, not input.
func NewKVCache(dtype tensor.DType, ctxLen, numKVHeads, headDim int) *KVCache {
	if KVTypeFits(dtype, headDim) != nil || ctxLen <= 0 || numKVHeads <= 0 || headDim <= 0 {
		panic(fmt.Sprintf("compute: NewKVCache(%s, ctxLen %d, numKVHeads %d, headDim %d): need F16, F32 or Q8_0 (heads of a multiple of 32) and positive sizes",
			dtype, ctxLen, numKVHeads, headDim))
	}
	hb, _ := dtype.RowBytes(int64(headDim))
	n := ctxLen * numKVHeads * int(hb)
	c := &KVCache{Type: dtype, CtxLen: ctxLen, NumKVHeads: numKVHeads, HeadDim: headDim, hb: int(hb)}
	nk := n
	if bb := c.keyBlockBytes(); bb > 0 {
		c.blocks = (ctxLen + kernel.KeyBlock - 1) / kernel.KeyBlock
		nk = numKVHeads * c.blocks * bb
		c.half = make([]byte, max(2*headDim, c.hb))
	}
	// Outside the Go heap (LazyFloats): positions are committed as they
	// are stored, and a long context does not raise the collector's goal.
	b, free := lazyBytes(c, roundPage(nk)+n)
	c.k, c.v, c.free = b[:nk:nk], b[roundPage(nk):], free
	return c
}

// Free releases the cache's memory now rather than when the cache becomes
// unreachable (a session's Close); the cache must not be used afterwards
// (Store and Attention then panic). It may be called again.
func (c *KVCache) Free() {
	c.free()
	c.k, c.v = nil, nil
}

// KVTypeFits reports why a KV cache of dtype cannot hold heads of headDim
// dimensions: F16 and F32 hold any; Q8_0 (half of F16's bytes: each 32
// dimensions rounded to 8 bits against one scale, as llama.cpp's q8_0
// cache) needs a multiple of 32.
func KVTypeFits(dtype tensor.DType, headDim int) error {
	switch dtype {
	case tensor.F16, tensor.F32:
		return nil
	case tensor.Q8_0:
		if headDim%32 != 0 {
			return fmt.Errorf("a q8_0 KV cache needs head dimensions in multiples of 32; this model's heads have %d (use f16)", headDim)
		}
		return nil
	}
	return fmt.Errorf("KV cache type %s is not supported (supported: f16, q8_0, f32)", dtype)
}

// headBytes is the size of one head's key (or value) at one position.
func (c *KVCache) headBytes() int { return c.hb }

// at returns the offset of KV head h's entry at position pos.
func (c *KVCache) at(pos, h int) int { return (h*c.CtxLen + pos) * c.headBytes() }

// Store writes the key and value rows (numKVHeads*headDim floats each) of
// position pos. One cache takes one Store at a time.
func (c *KVCache) Store(pos int, k, v []float32) {
	kv := c.NumKVHeads * c.HeadDim
	if pos < 0 || pos >= c.CtxLen || len(k) < kv || len(v) < kv {
		panic(fmt.Sprintf("compute: KVCache.Store(pos %d): ctxLen %d, k %d and v %d floats, need %d",
			pos, c.CtxLen, len(k), len(v), kv))
	}
	hd, hb, half := c.HeadDim, c.headBytes(), c.half
	for h := range c.NumKVHeads {
		o := c.at(pos, h)
		if err := kernel.Quantize(c.Type, v[h*hd:(h+1)*hd], c.v[o:o+hb]); err != nil {
			panic(err.Error())
		}
		if c.Type == tensor.Q8_0 {
			if err := kernel.Quantize(c.Type, k[h*hd:(h+1)*hd], half[:hb]); err != nil {
				panic(err.Error())
			}
			kernel.PutKeyQ8(c.keyBlocks(h, pos/kernel.KeyBlock, 1), pos%kernel.KeyBlock, half[:hb])
			continue
		}
		if c.Type != tensor.F16 {
			if err := kernel.Quantize(c.Type, k[h*hd:(h+1)*hd], c.k[o:o+hb]); err != nil {
				panic(err.Error())
			}
			continue
		}
		kernel.FP32sToFP16(half[:hb], k[h*hd:(h+1)*hd])
		// Dimension j of position pos: row j of its block, lane pos mod 16.
		blk := c.keyBlocks(h, pos/kernel.KeyBlock, 1)[2*(pos%kernel.KeyBlock):]
		for j := range hd {
			blk[2*kernel.KeyBlock*j] = half[2*j]
			blk[2*kernel.KeyBlock*j+1] = half[2*j+1]
		}
	}
}

// keyBlockBytes is the size of one key block: F16 and Q8_0 keys are kept
// in blocks of kernel.KeyBlock positions, F32 keys (0) as rows.
func (c *KVCache) keyBlockBytes() int {
	switch c.Type {
	case tensor.F16:
		return kernel.KeyBlockBytes(c.HeadDim)
	case tensor.Q8_0:
		return kernel.KeyBlockQ8Bytes(c.HeadDim)
	}
	return 0
}

// keyBlocks returns the bytes of KV head h's key blocks b0..b0+nb-1 (F16
// or Q8_0).
func (c *KVCache) keyBlocks(h, b0, nb int) []byte {
	bb := c.keyBlockBytes()
	o := (h*c.blocks + b0) * bb
	return c.k[o : o+nb*bb]
}

// Bytes returns the memory the cache holds.
func (c *KVCache) Bytes() int64 { return int64(len(c.k) + len(c.v)) }

// key returns the bytes of KV head h's key at position pos (F32 caches:
// F16 keys are in blocks).
func (c *KVCache) key(pos, h int) []byte {
	o := c.at(pos, h)
	return c.k[o : o+c.headBytes()]
}

func (c *KVCache) value(pos, h int) []byte {
	o := c.at(pos, h)
	return c.v[o : o+c.headBytes()]
}
