package compute

import (
	"fmt"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// KVCache holds one layer's keys and values: rows [ctxLen][numKVHeads*headDim],
// stored F16 (the default, as llama.cpp) or F32.
type KVCache struct {
	Type       tensor.DType
	CtxLen     int
	NumKVHeads int
	HeadDim    int
	k, v       []byte // [ctxLen][numKVHeads*headDim] elements of Type
	esize      int    // bytes per element (Type's size, looked up once)
}

// NewKVCache allocates a cache; dtype must be F16 or F32 (anything else
// panics: it is a configuration the caller chose, not input).
func NewKVCache(dtype tensor.DType, ctxLen, numKVHeads, headDim int) *KVCache {
	if (dtype != tensor.F16 && dtype != tensor.F32) || ctxLen <= 0 || numKVHeads <= 0 || headDim <= 0 {
		panic(fmt.Sprintf("compute: NewKVCache(%s, ctxLen %d, numKVHeads %d, headDim %d): need F16 or F32 and positive sizes",
			dtype, ctxLen, numKVHeads, headDim))
	}
	n := ctxLen * numKVHeads * headDim * dtype.TypeSize()
	return &KVCache{Type: dtype, CtxLen: ctxLen, NumKVHeads: numKVHeads, HeadDim: headDim,
		k: make([]byte, n), v: make([]byte, n), esize: dtype.TypeSize()}
}

func (c *KVCache) rowBytes() int { return c.NumKVHeads * c.HeadDim * c.esize }

// Store writes the key and value rows (numKVHeads*headDim floats each) of
// position pos.
func (c *KVCache) Store(pos int, k, v []float32) {
	kv := c.NumKVHeads * c.HeadDim
	if pos < 0 || pos >= c.CtxLen || len(k) < kv || len(v) < kv {
		panic(fmt.Sprintf("compute: KVCache.Store(pos %d): ctxLen %d, k %d and v %d floats, need %d",
			pos, c.CtxLen, len(k), len(v), kv))
	}
	rb := c.rowBytes()
	if err := kernel.Quantize(c.Type, k[:kv], c.k[pos*rb:(pos+1)*rb]); err != nil {
		panic(err.Error())
	}
	if err := kernel.Quantize(c.Type, v[:kv], c.v[pos*rb:(pos+1)*rb]); err != nil {
		panic(err.Error())
	}
}

// Bytes returns the memory the cache holds.
func (c *KVCache) Bytes() int64 { return int64(len(c.k) + len(c.v)) }

// key returns the bytes of KV head h's key at position pos.
func (c *KVCache) key(pos, h int) []byte {
	hb := c.HeadDim * c.esize
	off := pos*c.rowBytes() + h*hb
	return c.k[off : off+hb]
}

func (c *KVCache) value(pos, h int) []byte {
	hb := c.HeadDim * c.esize
	off := pos*c.rowBytes() + h*hb
	return c.v[off : off+hb]
}
