package model

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
)

// Rows maps the rows of one forward pass to sequences: either n
// consecutive positions of one session (prompt processing, a decode step),
// or rows of several sessions (a Step: decode rows of some, prompt chunks
// of others, reading the weights once for all of them).
type Rows struct {
	one  *Runtime // single sequence: row i is position pos+i of one
	pos  int
	many []*Runtime // several sequences: row i is position at[i] of many[i]
	at   []int
	out  []int // with many: the rows whose logits are wanted, ascending (nil: all)
	// hidden, when set, takes every row's final hidden state (NormOut's
	// rows) instead of logits: Decoder.Hidden.
	hidden []float32
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
// headDim), headDim = qDim/numHeads) over their sequences' layer-l caches,
// which must hold every row's key and value already (Store all rows
// first: a prompt chunk's rows see each other).
//
// With several sequences, enough rows to keep every thread busy are one
// pool loop over the rows, each row attending over its own cache serially,
// rather than one loop (and one barrier) per row; fewer rows take one loop
// over the heads each. Each (row, head) is computed as compute.Attention
// computes it, so the result is the same either way.
func (r *Rows) Attend(p *compute.Pool, l int, out, q []float32, n, numHeads int, a compute.Attn) {
	if r.one != nil {
		if pr := r.one.prof; pr != nil {
			t0 := time.Now()
			defer func() { pr.Attention += time.Since(t0) }()
		}
		compute.Attention(p, out, q, n, r.pos, r.one.Cache[l], numHeads, a)
		return
	}
	if n < 2*p.Threads() {
		d := len(q) / n
		for i := range n {
			compute.Attention(p, out[i*d:(i+1)*d], q[i*d:(i+1)*d], 1, r.at[i], r.many[i].Cache[l], numHeads, a)
		}
		return
	}
	t := rowAttnTasks.Get().(*rowAttn)
	*t = rowAttn{rts: r.many, at: r.at, l: l, out: out, q: q, qDim: len(q) / n, numHeads: numHeads, a: a}
	p.ForTask(n, 1, t)
	*t = rowAttn{}
	rowAttnTasks.Put(t)
}

// rowAttn is Attend's loop over the rows of several sequences, pooled so a
// step allocates nothing.
type rowAttn struct {
	rts            []*Runtime
	at             []int
	l              int
	out, q         []float32
	qDim, numHeads int
	a              compute.Attn
}

var rowAttnTasks = sync.Pool{New: func() any { return new(rowAttn) }}

func (a *rowAttn) Run(lo, hi int) {
	d := a.qDim
	for i := lo; i < hi; i++ {
		compute.Attention(nil, a.out[i*d:(i+1)*d], a.q[i*d:(i+1)*d], 1, a.at[i], a.rts[i].Cache[a.l], a.numHeads, a.a)
	}
}

// NormOut writes the RMS-normed (weight w) rows of x ((n, dim)) whose
// logits are wanted to out, in order, and returns how many: the last row
// (all false) or every row (all true) of one sequence; with several
// sequences, the rows the Step asked logits for. For Decoder.Hidden it
// writes every row to the hidden states' buffer instead and returns 0: no
// logits are wanted.
func (r *Rows) NormOut(out, x, w []float32, n, dim int, all bool, eps float32) int {
	if r.hidden != nil {
		NormRows(r.hidden, x, w, n, dim, eps)
		return 0
	}
	if r.one == nil && r.out != nil {
		for j, i := range r.out {
			compute.RMSNorm(out[j*dim:(j+1)*dim], x[i*dim:(i+1)*dim], w, eps)
		}
		return len(r.out)
	}
	first := 0
	if !all {
		first = n - 1
	}
	NormRows(out, x[first*dim:], w, n-first, dim, eps)
	return n - first
}

// Spread runs t over [0, n) on work's worker pool when work is a session
// of an architecture with MultiStepper, on the caller otherwise: for the
// engine's per-sequence work between steps (sampling), so it uses the
// threads the steps use. t must compute each index independently of the
// chunk bounds.
func Spread(work Session, n int, t compute.Task) {
	var p *compute.Pool // nil: the caller runs the whole loop
	if ms, ok := work.(MultiStepper); ok {
		p = ms.Base().Pool
	}
	p.ForTask(n, 1, t)
}

// MultiStepper is implemented by the sessions of architectures that can
// run one forward pass over rows of several of their sessions (see Step).
// Base comes with the embedded Runtime.
type MultiStepper interface {
	Session
	Base() *Runtime
	// SameModel reports whether o is a session of the same loaded model.
	SameModel(o Session) bool
	// StepMany runs the rows with this session's buffers and pool and
	// writes the logits of the rows the Rows want, [wanted][vocab].
	StepMany(ctx context.Context, rows Rows, tokens []int, logits []float32) error
}

// Base returns r itself: through the embedded Runtime it gives Step every
// session's caches.
func (r *Runtime) Base() *Runtime { return r }

// Batch is the rows of one Step: row i is token Tokens[i] at position
// Positions[i] of Sessions[i]. Reuse a Batch (Reset, Add) so that steps
// allocate nothing.
type Batch struct {
	Sessions  []Session
	Tokens    []int
	Positions []int
	// Want lists the rows whose logits Step writes, ascending; nil means
	// every row.
	Want []int

	rts []*Runtime // scratch for Step
}

// Reset empties b, keeping its memory.
func (b *Batch) Reset() {
	clear(b.Sessions) // drop the references
	clear(b.rts)
	b.Sessions, b.Tokens, b.Positions, b.Want = b.Sessions[:0], b.Tokens[:0], b.Positions[:0], b.Want[:0]
}

// Add appends a row: token at position pos of s, with its logits wanted or not.
func (b *Batch) Add(s Session, token, pos int, logits bool) {
	if b.Want == nil { // rows added one by one name their logits
		b.Want = make([]int, 0, 8)
	}
	if logits {
		b.Want = append(b.Want, len(b.Tokens))
	}
	b.Sessions = append(b.Sessions, s)
	b.Tokens = append(b.Tokens, token)
	b.Positions = append(b.Positions, pos)
}

// wanted is how many rows' logits Step writes.
func (b *Batch) wanted() int {
	if b.Want == nil {
		return len(b.Tokens)
	}
	return len(b.Want)
}

// Step evaluates one forward pass over the rows of b, from several
// sessions of one model: decode rows (one token of a session) and prompt
// chunks (several consecutive positions of a session) together, so the
// weights are read once for all of them. A session's rows must be adjacent
// in b and at consecutive positions continuing its cache (its cache holds
// positions 0..Positions[first]-1). The logits of the wanted rows are
// written row-major, [len(Want)][vocab] (every row when Want is nil).
//
// work's activation buffers and worker pool do the computation (work may
// be one of b's sessions); its batch size must be at least the number of
// rows. Architectures without MultiStepper, or a work session too small,
// fall back to one Forward per row.
func Step(ctx context.Context, c *Config, work Session, b *Batch, logits []float32) error {
	n := len(b.Tokens)
	switch {
	case n == 0:
		return fmt.Errorf("infer: step of no rows")
	case len(b.Sessions) != n || len(b.Positions) != n:
		return fmt.Errorf("infer: step of %d sessions with %d tokens and %d positions", len(b.Sessions), n, len(b.Positions))
	case len(logits) != b.wanted()*c.VocabSize:
		return fmt.Errorf("infer: logits buffer holds %d floats, want %d (%d rows × vocab %d)", len(logits), b.wanted()*c.VocabSize, b.wanted(), c.VocabSize)
	}
	for j, i := range b.Want {
		if i < 0 || i >= n || (j > 0 && i <= b.Want[j-1]) {
			return fmt.Errorf("infer: step: wanted rows %v are not ascending rows of 0..%d", b.Want, n-1)
		}
	}
	if err := checkRows(c, b); err != nil {
		return err
	}
	ws, ok := work.(MultiStepper)
	if !ok || ws.Options().Batch < n {
		return stepEach(ctx, c, b, logits)
	}
	b.rts = b.rts[:0]
	for i, s := range b.Sessions {
		ms, ok := s.(MultiStepper)
		if !ok || !ws.SameModel(s) {
			return fmt.Errorf("infer: step: session %d is not of session 0's model", i)
		}
		b.rts = append(b.rts, ms.Base())
	}
	rows := Rows{many: b.rts, at: b.Positions, out: b.Want}
	return ws.StepMany(ctx, rows, b.Tokens, logits)
}

// checkRows checks b's tokens, positions and the order of each session's
// rows (adjacent, consecutive positions).
func checkRows(c *Config, b *Batch) error {
	for i, s := range b.Sessions {
		pos, ctxLen := b.Positions[i], s.Options().CtxLen
		if pos < 0 || pos >= ctxLen {
			return fmt.Errorf("infer: step: session %d: position %d does not fit its context of %d", i, pos, ctxLen)
		}
		if tok := b.Tokens[i]; tok < 0 || tok >= c.VocabSize {
			return fmt.Errorf("infer: step: session %d: token %d is outside the vocabulary of %d", i, tok, c.VocabSize)
		}
		if i > 0 && b.Sessions[i-1] == s {
			if prev := b.Positions[i-1]; pos != prev+1 {
				return fmt.Errorf("infer: step: row %d is position %d of the session whose previous row is position %d (a session's rows must be consecutive positions)", i, pos, prev)
			}
			continue
		}
		for k := range i {
			if b.Sessions[k] == s {
				return fmt.Errorf("infer: step: rows %d and %d are of one session but not adjacent", k, i)
			}
		}
	}
	return nil
}

// stepEach is Step one row at a time with each session's own Forward.
func stepEach(ctx context.Context, c *Config, b *Batch, logits []float32) error {
	vocab := c.VocabSize
	row := make([]float32, vocab)
	j := 0 // next wanted row
	for i, s := range b.Sessions {
		if err := s.Forward(ctx, b.Tokens[i:i+1], b.Positions[i], row); err != nil {
			return fmt.Errorf("infer: step: session %d: %w", i, err)
		}
		if b.Want == nil || (j < len(b.Want) && b.Want[j] == i) {
			copy(logits[j*vocab:(j+1)*vocab], row)
			j++
		}
	}
	return nil
}

// DecodeStep evaluates one token for each of several sessions of the same
// model — tokens[i] at position positions[i] of sessions[i] — and writes
// their logits, row-major [len(sessions)][vocab]. It is Step with every
// row's logits and the first session's buffers (so its batch size must be
// at least len(sessions) for the weights to be read once for all).
func DecodeStep(ctx context.Context, c *Config, sessions []Session, tokens, positions []int, logits []float32) error {
	n := len(sessions)
	switch {
	case n == 0:
		return fmt.Errorf("infer: decode step for no sessions")
	case len(tokens) != n || len(positions) != n:
		return fmt.Errorf("infer: decode step for %d sessions with %d tokens and %d positions", n, len(tokens), len(positions))
	}
	b := &Batch{Sessions: sessions, Tokens: tokens, Positions: positions}
	return Step(ctx, c, sessions[0], b, logits)
}
