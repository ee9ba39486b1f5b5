package model

import (
	"context"
	"fmt"
	"strings"

	"github.com/glassbox-ai/glassbox/tensor"
)

// Model is a loaded architecture: configuration plus weights bound to the
// mapped file. A Model is immutable and safe for concurrent use; each
// sequence being generated gets its own Session.
type Model interface {
	Config() Config
	// WeightBytes is the weight bytes one forward pass of one token reads
	// (the memory-bandwidth cost of a decode step).
	WeightBytes() int64
	// NewSession allocates a KV cache of opts.CtxLen positions and all
	// activation buffers for batches of up to opts.Batch tokens.
	NewSession(opts SessionOptions) (Session, error)
}

// Session evaluates one token sequence over its own KV cache.
type Session interface {
	// Forward evaluates tokens at positions pos, pos+1, ... (the KV cache
	// must already hold positions 0..pos-1) and writes logits: when
	// len(logits) == vocab, those of the last token; when it is
	// len(tokens)·vocab, those of every token, row-major [len(tokens)][vocab].
	// len(tokens) must be at most the session's batch size.
	Forward(ctx context.Context, tokens []int, pos int, logits []float32) error
	// Options returns the options the session was made with (defaults filled).
	Options() SessionOptions
	// KVBytes is the size of the KV cache.
	KVBytes() int64
	// ArenaBytes is the size of the activation buffers, allocated once
	// for batches of Options().Batch tokens.
	ArenaBytes() int64
	// Close stops the session's worker goroutines and releases its KV
	// cache and activation buffers; the session must not be used after.
	Close()
}

// SessionOptions sizes a session. The zero value is usable: defaults are
// filled by Fill.
type SessionOptions struct {
	CtxLen  int  // KV cache positions; default min(trained context, 4096)
	Batch   int  // max tokens per Forward; default 512 (capped at CtxLen)
	Threads int  // worker goroutines; default 1
	KVF32   bool // F32 KV cache instead of the default F16
	KVQ8    bool // Q8_0 KV cache (half of F16's bytes, 8 bits per value and a scale per 32) instead of F16
	// Exact dequantizes every weight to F32 and multiplies in F32 (the
	// golden "f32ref" path); the default rounds activations like llama.cpp.
	Exact bool
}

// DefaultCtxLen caps the default context so a model trained on 128k
// positions does not allocate a huge KV cache by accident.
const DefaultCtxLen = 4096

// Fill returns o with defaults applied for a model of config c.
func (o SessionOptions) Fill(c Config) SessionOptions {
	if o.CtxLen <= 0 {
		o.CtxLen = min(c.CtxLen, DefaultCtxLen)
		if o.CtxLen <= 0 {
			o.CtxLen = DefaultCtxLen
		}
	}
	if o.Batch <= 0 {
		o.Batch = 512
	}
	o.Batch = min(o.Batch, o.CtxLen)
	if o.Threads <= 0 {
		o.Threads = 1
	}
	return o
}

// KVType is the dtype of the session's KV cache.
func (o SessionOptions) KVType() tensor.DType {
	switch {
	case o.KVF32:
		return tensor.F32
	case o.KVQ8:
		return tensor.Q8_0
	}
	return tensor.F16
}

// KVName is the KV cache type as --kv and the planner name it.
func (o SessionOptions) KVName() string { return strings.ToLower(o.KVType().String()) }

// SetKV sets the KV cache type from its name: f16, q8_0 or f32.
func (o *SessionOptions) SetKV(name string) error {
	switch strings.ToLower(name) {
	case "", "f16":
		o.KVF32, o.KVQ8 = false, false
	case "f32":
		o.KVF32, o.KVQ8 = true, false
	case "q8_0":
		o.KVF32, o.KVQ8 = false, true
	default:
		return fmt.Errorf("KV cache type %q is not supported (supported: f16, q8_0, f32)", name)
	}
	return nil
}
