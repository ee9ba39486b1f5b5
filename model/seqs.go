package model

import (
	"context"
	"fmt"

	"github.com/glassbox-ai/glassbox/compute"
)

// Rows maps the rows of one forward pass to sequences: either n
// consecutive positions of one session (prompt processing, a decode step),
// or one row per session (a decode step for several sequences at once,
// reading the weights once for all of them).
type Rows struct {
	one  *Runtime // single sequence: row i is position pos+i of one
	pos  int
	many []*Runtime // several sequences: row i is position at[i] of many[i]
	at   []int
}

// OneSeq returns the rows of n tokens of rt's sequence from position pos.
func OneSeq(rt *Runtime, pos int) Rows { return Rows{one: rt, pos: pos} }

// Pos is the position of row i.
func (r *Rows) Pos(i int) int {
	if r.one != nil {
		return r.pos + i
	}
	return r.at[i]
}

// Store writes row i's key and value into its sequence's layer-l cache.
func (r *Rows) Store(l, i int, k, v []float32) {
	if r.one != nil {
		r.one.Cache[l].Store(r.pos+i, k, v)
		return
	}
	r.many[i].Cache[l].Store(r.at[i], k, v)
}

// Attend computes causal attention for the n rows of q ((n, numHeads ·
// headDim), headDim = qDim/numHeads) over their sequences' layer-l caches.
func (r *Rows) Attend(p *compute.Pool, l int, out, q []float32, n, numHeads int, scale float32, window int) {
	if r.one != nil {
		compute.Attention(p, out, q, n, r.pos, r.one.Cache[l], numHeads, scale, window)
		return
	}
	qDim := len(q) / n
	for i := range n {
		compute.Attention(p, out[i*qDim:(i+1)*qDim], q[i*qDim:(i+1)*qDim], 1, r.at[i], r.many[i].Cache[l], numHeads, scale, window)
	}
}

// MultiStepper is implemented by the sessions of architectures that can
// run one decode step for several of their sessions in one pass (see
// DecodeStep). Base comes with the embedded Runtime.
type MultiStepper interface {
	Session
	Base() *Runtime
	// SameModel reports whether o is a session of the same loaded model.
	SameModel(o Session) bool
	// StepMany runs the rows (one per session) with this session's
	// buffers and writes their logits, [rows][vocab].
	StepMany(ctx context.Context, rows Rows, tokens []int, logits []float32) error
}

// Base returns r itself: through the embedded Runtime it gives DecodeStep
// every session's caches.
func (r *Runtime) Base() *Runtime { return r }

// DecodeStep evaluates one token for each of several sessions of the same
// model — tokens[i] at position positions[i] of sessions[i] — and writes
// their logits, row-major [len(sessions)][vocab]. Architectures that
// support it read every weight once for all the sessions (a matrix × matrix
// product instead of one matrix × vector per session); the others run one
// Forward per session. The first session's activation buffers are used, so
// its batch size must be at least len(sessions).
func DecodeStep(ctx context.Context, c *Config, sessions []Session, tokens, positions []int, logits []float32) error {
	n := len(sessions)
	switch {
	case n == 0:
		return fmt.Errorf("infer: decode step for no sessions")
	case len(tokens) != n || len(positions) != n:
		return fmt.Errorf("infer: decode step for %d sessions with %d tokens and %d positions", n, len(tokens), len(positions))
	case len(logits) != n*c.VocabSize:
		return fmt.Errorf("infer: logits buffer holds %d floats, want %d (%d sessions × vocab %d)", len(logits), n*c.VocabSize, n, c.VocabSize)
	}
	first, ok := sessions[0].(MultiStepper)
	if ok && first.Options().Batch >= n {
		rows := Rows{many: make([]*Runtime, n), at: positions}
		for i, s := range sessions {
			ms, ok := s.(MultiStepper)
			if !ok || !first.SameModel(s) {
				return fmt.Errorf("infer: decode step: session %d is not of session 0's model", i)
			}
			rt := ms.Base()
			if positions[i] < 0 || positions[i] >= rt.Opts.CtxLen {
				return fmt.Errorf("infer: decode step: session %d: position %d does not fit its context of %d", i, positions[i], rt.Opts.CtxLen)
			}
			if tokens[i] < 0 || tokens[i] >= c.VocabSize {
				return fmt.Errorf("infer: decode step: session %d: token %d is outside the vocabulary of %d", i, tokens[i], c.VocabSize)
			}
			rows.many[i] = rt
		}
		return first.StepMany(ctx, rows, tokens, logits)
	}
	for i, s := range sessions {
		if err := s.Forward(ctx, tokens[i:i+1], positions[i], logits[i*c.VocabSize:(i+1)*c.VocabSize]); err != nil {
			return fmt.Errorf("infer: decode step: session %d: %w", i, err)
		}
	}
	return nil
}
