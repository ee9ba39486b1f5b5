package model

import (
	"time"

	"github.com/glassbox-ai/glassbox/compute"
)

// StepProfile is a session's forward passes timed by part while it is
// attached (Runtime.Profile): the matrix products (with the weight bytes
// they read) and attention. What a pass spends elsewhere is its norms,
// RoPE, activation functions and residual adds, with the memory idle.
type StepProfile struct {
	Matrix      time.Duration // in matrix products
	MatrixBytes int64         // weight bytes the products read
	Attention   time.Duration // in attention over the KV cache (single-sequence passes)
}

// Profiler is a session that can carry a StepProfile (every session built
// on Runtime is one).
type Profiler interface{ Profile(p *StepProfile) }

// Profile attaches p to the session (nil detaches it): until then every
// matrix product and attention adds its time to p. Timing costs two clock
// reads per product; a detached session pays nothing.
func (r *Runtime) Profile(p *StepProfile) {
	r.prof = p
	plain := r.plainMatMul()
	if p == nil {
		r.MatMul = plain
		return
	}
	r.MatMul = func(pool *compute.Pool, out []float32, w compute.Matrix, x []float32, n int) {
		t0 := time.Now()
		plain(pool, out, w, x, n)
		p.Matrix += time.Since(t0)
		p.MatrixBytes += matrixBytes(w)
	}
}

// matrixBytes is the weight bytes of w (its rows as stored in the file).
func matrixBytes(w compute.Matrix) int64 { return int64(w.Rows) * int64(w.RowBytes()) }
