package model

import (
	"fmt"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
)

// Runtime is the part of a session every architecture shares: options,
// the worker pool, one KV cache per layer and the matrix multiply chosen by
// SessionOptions.Exact. Architectures embed it in their Session, which
// gives them Options and KVBytes.
type Runtime struct {
	Opts   SessionOptions
	Pool   *compute.Pool
	Cache  []*compute.KVCache // (layer) each (ctxLen, numKVHeads, headDim) keys and values
	MatMul func(p *compute.Pool, out []float32, w compute.Matrix, x []float32, n int)
	Rope   compute.Rotary // RoPE with the last position's angles kept (every layer's q and k share them)

	prof *StepProfile // attached by Profile
}

// maxCtxLen bounds the KV cache a session may ask for (a typo such as
// --ctx 10000000 should fail, not allocate).
const maxCtxLen = 1 << 20

// NewRuntime fills opts' defaults and allocates the KV caches.
func NewRuntime(c *Config, opts SessionOptions) (Runtime, error) {
	opts = opts.Fill(*c)
	if opts.CtxLen > maxCtxLen {
		return Runtime{}, fmt.Errorf("load: context of %d tokens is more than the %d this build allows", opts.CtxLen, maxCtxLen)
	}
	if opts.KVF32 && opts.KVQ8 {
		return Runtime{}, fmt.Errorf("load: the KV cache cannot be both f32 and q8_0")
	}
	if err := compute.KVTypeFits(opts.KVType(), c.HeadDim); err != nil {
		return Runtime{}, fmt.Errorf("load: %w", err)
	}
	r := Runtime{Opts: opts, Pool: compute.NewPool(opts.Threads)}
	r.MatMul = r.plainMatMul()
	for range c.NumLayers {
		r.Cache = append(r.Cache, compute.NewKVCache(opts.KVType(), opts.CtxLen, c.NumKVHeads, c.HeadDim))
	}
	return r, nil
}

// plainMatMul is the multiply the options choose: compute.MatMulExact in
// exact mode, else compute.MatMul.
func (r *Runtime) plainMatMul() func(p *compute.Pool, out []float32, w compute.Matrix, x []float32, n int) {
	if r.Opts.Exact {
		return compute.MatMulExact
	}
	return compute.MatMul
}

// MatMuls multiplies the matrices that share the input x (compute.MatMuls,
// or MatMul on each in exact mode).
func (r *Runtime) MatMuls(x []float32, n int, ps ...compute.Product) {
	if r.Opts.Exact {
		for _, pr := range ps {
			r.MatMul(r.Pool, pr.Out, pr.W, x, n)
		}
		return
	}
	r.profiled(ps, func() { compute.MatMuls(r.Pool, x, n, ps...) })
}

// profiled runs mul, the multiplication of ps, timing it and counting its
// weight bytes when a profile is attached.
func (r *Runtime) profiled(ps []compute.Product, mul func()) {
	if r.prof == nil {
		mul()
		return
	}
	t0 := time.Now()
	mul()
	r.prof.Matrix += time.Since(t0)
	for _, pr := range ps {
		r.prof.MatrixBytes += matrixBytes(pr.W)
	}
}

// MatMulsApart multiplies matrices that each have their own input
// (compute.MatMulsApart, or MatMul on each in exact mode).
func (r *Runtime) MatMulsApart(xs [][]float32, n int, ps ...compute.Product) {
	if r.Opts.Exact {
		for i, pr := range ps {
			r.MatMul(r.Pool, pr.Out, pr.W, xs[i], n)
		}
		return
	}
	r.profiled(ps, func() { compute.MatMulsApart(r.Pool, xs, n, ps...) })
}

// Options returns the session's options with defaults filled.
func (r *Runtime) Options() SessionOptions { return r.Opts }

// KVBytes is the size of all KV caches.
func (r *Runtime) KVBytes() int64 {
	var n int64
	for _, kv := range r.Cache {
		n += kv.Bytes()
	}
	return n
}

// Close stops the worker pool and releases the KV caches.
func (r *Runtime) Close() {
	r.Pool.Close()
	for _, c := range r.Cache {
		c.Free()
	}
}

// NormRows applies RMSNorm with weight w to n rows of x of width dim.
func NormRows(out, x, w []float32, n, dim int, eps float32) {
	for i := range n {
		compute.RMSNorm(out[i*dim:(i+1)*dim], x[i*dim:(i+1)*dim], w, eps)
	}
}

// FloatBytes is the size of float32 buffers, for ArenaBytes.
func FloatBytes(bufs ...[]float32) int64 {
	var n int64
	for _, b := range bufs {
		n += 4 * int64(len(b))
	}
	return n
}
