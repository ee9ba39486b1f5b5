package model

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/glassbox-ai/glassbox/compute"
)

// Buffers are the activation buffers of a decoder's forward pass over a
// batch of rows, allocated once per session.
type Buffers struct {
	X   []float32 // (batch, dim) residual stream
	XB  []float32 // (batch, dim) normed input of a sublayer
	Q   []float32 // (batch, qDim)
	K   []float32 // (batch, kvDim)
	V   []float32 // (batch, kvDim)
	Att []float32 // (batch, qDim) attention output
	Out []float32 // (batch, dim) sublayer output
	HB  []float32 // (batch, hiddenDim) gate
	HB2 []float32 // (batch, hiddenDim) up
}

// Pass is an architecture's forward pass over rows of tokens (one
// sequence, or several through Step): all asks for the logits of every
// row the Rows want rather than of the last token only.
type Pass func(ctx context.Context, rows Rows, tokens []int, all bool, logits []float32) error

// Decoder is what every architecture's session shares: the Runtime (KV
// caches, pool, options), the activation Buffers, and the Session and
// MultiStepper methods, which only route to the architecture's Pass. An
// architecture's session embeds a *Decoder and adds its forward pass.
type Decoder struct {
	Runtime
	Buffers
	cfg   *Config
	model any // the loaded model, for SameModel
	pass  Pass
	free  func() // releases Buffers (Close)
	moe   moeBuffers
}

// NewDecoder makes the shared part of a session of loaded model m (any
// value identifying it, such as its pointer) with configuration c; pass is
// the architecture's forward pass.
func NewDecoder(c *Config, opts SessionOptions, m any, pass Pass) (*Decoder, error) {
	rt, err := NewRuntime(c, opts)
	if err != nil {
		return nil, err
	}
	d := &Decoder{Runtime: rt, cfg: c, model: m, pass: pass}
	// Outside the Go heap: a batch's rows are committed as they are used
	// (a 5-token prompt touches 5 of 512), and they do not raise the
	// collector's goal.
	n, hid, ne := rt.Opts.Batch, c.BufferHiddenDim(), c.Experts
	moeIn := 0
	if ne > 0 {
		moeIn = n * c.Dim
	}
	b, free := compute.LazyFloats(d, n*c.Dim, n*c.Dim, n*c.QDim(), n*c.KVDim(), n*c.KVDim(),
		n*c.QDim(), n*c.Dim, n*hid, n*hid, n*ne, moeIn, moeIn)
	d.Buffers = Buffers{X: b[0], XB: b[1], Q: b[2], K: b[3], V: b[4], Att: b[5], Out: b[6], HB: b[7], HB2: b[8]}
	if ne > 0 {
		k := c.ExpertsUsed
		d.moe = moeBuffers{scores: b[9], in: b[10], out: b[11], pick: make([]int32, n*k), weight: make([]float32, n*k),
			count: make([]int32, ne+1), rows: make([]int32, n*k)}
	}
	d.free = free
	return d, nil
}

// errClosed is Forward's error on a closed session.
var errClosed = errors.New("infer: the session is closed")

// Close stops the session's workers and gives its activation buffers and
// KV caches back to the OS at once, rather than when the session becomes
// unreachable (a server that opens sessions faster than the collector runs
// would otherwise hold the old ones' pages). Forward then fails.
func (d *Decoder) Close() {
	d.Runtime.Close()
	d.free()
	d.Buffers, d.moe = Buffers{}, moeBuffers{}
}

// ArenaBytes is the size of the activation buffers.
func (d *Decoder) ArenaBytes() int64 {
	b := &d.Buffers
	return FloatBytes(b.X, b.XB, b.Q, b.K, b.V, b.Att, b.Out, b.HB, b.HB2, d.moe.scores, d.moe.in, d.moe.out, d.moe.weight) +
		int64(4*(len(d.moe.pick)+len(d.moe.count)+len(d.moe.rows)))
}

// Forward runs the decoder over tokens at positions pos.. (see Session).
func (d *Decoder) Forward(ctx context.Context, tokens []int, pos int, logits []float32) error {
	if d.X == nil {
		return errClosed
	}
	all, err := CheckForward(d.cfg, &d.Opts, tokens, pos, logits)
	if err != nil {
		return err
	}
	err = d.pass(ctx, OneSeq(&d.Runtime, pos), tokens, all, logits)
	runtime.KeepAlive(d) // its buffers and caches live outside the heap until d is unreachable
	return err
}

// Embedder is implemented by the sessions of architectures whose final
// hidden states can be read (every Decoder's): the embeddings endpoints
// pool them.
type Embedder interface {
	// Hidden evaluates tokens at positions pos, pos+1, ... as Forward does
	// (the KV cache must hold positions 0..pos-1) and writes each token's
	// final hidden state — the output norm's row, which the output matrix
	// would turn into its logits — to hidden, row-major
	// [len(tokens)][dim], computing no logits.
	Hidden(ctx context.Context, tokens []int, pos int, hidden []float32) error
}

// Hidden runs the decoder over tokens at positions pos.. and writes their
// final hidden states (see Embedder).
func (d *Decoder) Hidden(ctx context.Context, tokens []int, pos int, hidden []float32) error {
	if d.X == nil {
		return errClosed
	}
	if err := checkTokens(d.cfg, &d.Opts, tokens, pos); err != nil {
		return err
	}
	if want := len(tokens) * d.cfg.Dim; len(hidden) != want {
		return fmt.Errorf("infer: hidden states buffer holds %d floats, want %d (%d tokens × dim %d)", len(hidden), want, len(tokens), d.cfg.Dim)
	}
	rows := OneSeq(&d.Runtime, pos)
	rows.hidden = hidden
	err := d.pass(ctx, rows, tokens, true, nil)
	runtime.KeepAlive(d)
	return err
}

// decoder gives SameModel another session's Decoder.
func (d *Decoder) decoder() *Decoder { return d }

// SameModel reports whether o is a session of the same loaded model.
func (d *Decoder) SameModel(o Session) bool {
	t, ok := o.(interface{ decoder() *Decoder })
	return ok && t.decoder().model == d.model
}

// StepMany runs rows of several sessions with d's buffers and pool (see
// Step, which checked the rows).
func (d *Decoder) StepMany(ctx context.Context, rows Rows, tokens []int, logits []float32) error {
	if d.X == nil {
		return errClosed
	}
	err := d.pass(ctx, rows, tokens, true, logits)
	runtime.KeepAlive(d)
	return err
}
