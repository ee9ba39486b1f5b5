package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// Batcher runs the generations of one model in lockstep so that parallel
// streams share the weight reads: a single loop evaluates, per step, one
// decode row for every sequence that is generating plus a chunk of the
// prompts still to be prefilled, all in one model.Step (continuous
// batching: a request joins at the next step, a finished one leaves).
// Generate may be called from any number of goroutines; at most maxSeqs
// sequences are in the loop, later ones wait for a free slot.
//
// All evaluation runs on the loop's worker pool and buffers (one "work"
// session): a request's own session only holds its KV cache, so parallel
// requests never compete for the cores with pools of their own; finished
// requests' sessions are kept (up to maxSeqs, until Close) so later ones
// do not allocate a cache again. While
// other sequences decode, a step takes at most sharedPromptRows prompt
// rows, so a long prompt delays them by a few steps per chunk instead of
// by its whole prefill; with nobody decoding, prompts go in chunks of the
// session batch size. Prompts that arrive together are prefilled in the
// same steps.
//
// Token callbacks and trace hooks (prefill progress included) run on the
// loop's goroutine, so they must return quickly (as pipeline hooks already
// do). A cancelled request leaves the batch at the next step; the others
// go on.
type Batcher struct {
	m           model.Model
	seqOpts     model.SessionOptions // a request's session: KV cache only
	work        model.Session        // buffers and pool of every step
	prefillRows int                  // prompt rows per step with nobody decoding
	err         error                // the work session could not be made
	slots       chan struct{}        // one per sequence in the loop
	join        chan *batchSeq
	picks       pickTask // the loop's sampling, reused

	mu     sync.Mutex
	closed bool
	idle   *SessionCache // finished requests' sessions kept for reuse (at most maxSeqs), with their prompts' caches
	quit   chan struct{}
	done   chan struct{}
}

// sharedPromptRows is about how many prompt rows a step takes while
// other sequences are decoding: a trade between the decoding streams'
// stall and the prompt's speed. The prompt rows fill the step up to a
// multiple of stepRowAlign rows (sharedPromptRows minus the decode rows
// past the last multiple), because the Q4_0/Q8_0/K-quant kernels evaluate
// activations in panels of 16 rows and a part-filled panel costs a full
// one. On the synthetic 1B Q4_0 model (2 threads, fairly quiet machine,
// best of 5) a 4-row step took 30 ms, a 32-row one (two panels) 113 ms and
// a 36-row one (three) 143 ms: 4 decode rows + 28 prompt rows cost the
// decoding streams about four steps' time, 4 + 32 about five.
const (
	sharedPromptRows = 32
	stepRowAlign     = 16
)

// batchSeq is a sequence in the batch loop.
type batchSeq struct {
	q    *seq
	take int        // prompt rows in the current step
	err  chan error // receives the outcome once
}

// NewBatcher starts the batch loop for m with room for maxSeqs sequences.
// opts sizes the requests' sessions (CtxLen, KV type) and the loop's work
// session (Threads, Exact; Batch is the prompt chunk with nobody decoding).
func NewBatcher(m model.Model, opts model.SessionOptions, maxSeqs int) *Batcher {
	maxSeqs = max(maxSeqs, 1)
	f := opts.Fill(m.Config())
	rows := maxSeqs + f.Batch
	b := &Batcher{m: m, prefillRows: f.Batch, slots: make(chan struct{}, maxSeqs), join: make(chan *batchSeq),
		idle: NewSessionCache(maxSeqs), quit: make(chan struct{}), done: make(chan struct{})}
	b.seqOpts = model.SessionOptions{CtxLen: opts.CtxLen, Batch: 1, Threads: 1, KVF32: opts.KVF32, KVQ8: opts.KVQ8, Exact: opts.Exact}
	b.work, b.err = m.NewSession(model.SessionOptions{CtxLen: rows, Batch: rows, Threads: f.Threads, KVF32: opts.KVF32, KVQ8: opts.KVQ8, Exact: opts.Exact})
	if b.err != nil {
		b.err = pipeline.Wrap(pipeline.StageLoad, fmt.Errorf("batcher for %d sequences: %w", maxSeqs, b.err), "")
		close(b.done)
		return b
	}
	go b.loop()
	return b
}

// ErrBatcherClosed is returned by Generate after Close.
var ErrBatcherClosed = errors.New("engine: batcher closed")

// Close stops the loop after failing the sequences still in it.
func (b *Batcher) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.quit)
	}
	b.mu.Unlock()
	<-b.done
	if b.work != nil {
		b.work.Close()
	}
	b.idle.Close()
}

// Kept returns how many finished requests' sessions the batcher keeps
// for prompt caching, and the size of their KV caches.
func (b *Batcher) Kept() (sessions int, kvBytes int64) { return b.idle.Len(), b.idle.KVBytes() }

// session returns an idle session with the context length asked for
// (ctxLen ≤ 0: the batcher's) and how many leading prompt tokens its
// cache holds (see SessionCache), or a new one. Reuse is safe because a
// sequence writes every cache position past those before attending to
// it: what an earlier request left beyond them is never read.
func (b *Batcher) session(ctxLen int, prompt []int) (model.Session, int, error) {
	opts := b.seqOpts
	if ctxLen > 0 {
		opts.CtxLen = ctxLen
	}
	return b.idle.Session(b.m, opts.Fill(b.m.Config()), prompt)
}

// Generate runs req like the package-level Generate, on a session of its
// own (ctxLen, when positive, overrides the batcher's context length),
// sharing steps with the other requests in flight.
func (b *Batcher) Generate(ctx context.Context, req Request, ctxLen int) (*Result, error) {
	if b.err != nil {
		return nil, b.err
	}
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, pipeline.Wrap(pipeline.StageQueued, ctx.Err(), "")
	case <-b.quit:
		return nil, ErrBatcherClosed
	}
	defer func() { <-b.slots }()
	s, cached, err := b.session(ctxLen, req.Prompt)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePrefill, err, "")
	}
	q, err := newSeq(ctx, s, b.m.Config().VocabSize, req, cached)
	if err != nil {
		b.idle.Put(s, req.Prompt[:cached])
		return nil, err
	}
	// Generate returns only once the loop is done with the sequence; the
	// session is then kept with what its cache holds.
	defer func() { b.idle.Put(s, q.history[:q.evaluated()]) }()
	q.threads = b.work.Options().Threads
	bs := &batchSeq{q: q, err: make(chan error, 1)}
	select {
	case b.join <- bs:
	case <-ctx.Done():
		return nil, pipeline.Wrap(pipeline.StagePrefill, ctx.Err(), "")
	case <-b.quit:
		return nil, ErrBatcherClosed
	}
	if err := <-bs.err; err != nil {
		return q.res, err
	}
	return q.res, nil
}

// prefilling reports whether q's prompt is not all evaluated yet.
func (q *seq) prefilling() bool { return q.done < len(q.req.Prompt) }

// stage is the stage q is in, for its errors.
func (q *seq) stage() pipeline.Stage {
	if q.prefilling() {
		return pipeline.StagePrefill
	}
	return pipeline.StageGenerate
}

// loop is the batch: sample for every decoding sequence, drop the finished
// ones, evaluate the decode rows and a chunk of the pending prompts in one
// Step, repeat.
func (b *Batcher) loop() {
	defer close(b.done)
	cfg := b.m.Config()
	vocab := cfg.VocabSize
	var active []*batchSeq // in order of arrival
	var batch model.Batch
	var logits []float32
	for {
		// Wait for work when idle; otherwise take whoever is ready.
		if len(active) == 0 {
			select {
			case bs := <-b.join:
				active = append(active, bs)
			case <-b.quit:
				return
			}
		}
	drain:
		for {
			select {
			case bs := <-b.join:
				active = append(active, bs)
			case <-b.quit:
				for _, bs := range active {
					bs.err <- ErrBatcherClosed
				}
				return
			default:
				break drain
			}
		}
		active = b.sample(active)
		if len(active) == 0 {
			continue
		}
		only := b.fill(&batch, active)
		// A step of one sequence (a lone prompt chunk, a lone stream) stops
		// within a layer when that sequence is cancelled; a shared step
		// runs to its end, and the cancelled ones leave after it.
		ctx := context.Background()
		if only != nil {
			ctx = only.ctx
		}
		logits = grow(logits, len(batch.Want)*vocab)
		err := model.Step(ctx, &cfg, b.work, &batch, logits)
		if err != nil {
			err = fmt.Errorf("batched step: %w", err)
		}
		active = b.deliver(active, logits, vocab, err)
	}
}

// sample picks the next token of every decoding sequence — the picks in
// parallel on the work session's pool, as sampling a large vocabulary
// takes up to milliseconds — then streams them in order of arrival, and
// returns the sequences that go on (prefilling ones included); the others
// get their outcome.
func (b *Batcher) sample(active []*batchSeq) []*batchSeq {
	t := &b.picks
	t.seqs = t.seqs[:0]
	keep := active[:0]
	for _, bs := range active {
		if err := bs.q.ctx.Err(); err != nil {
			bs.err <- pipeline.Wrap(bs.q.stage(), err, "")
			continue
		}
		keep = append(keep, bs)
		if !bs.q.prefilling() {
			t.seqs = append(t.seqs, bs.q)
		}
	}
	clear(active[len(keep):]) // drop the references to the finished ones
	active = keep
	if cap(t.ids) < len(t.seqs) {
		t.ids = make([]int, len(t.seqs))
	}
	t.ids = t.ids[:len(t.seqs)]
	model.Spread(b.work, len(t.seqs), t)
	clear(t.seqs)

	keep, k := active[:0], 0
	for _, bs := range active {
		q := bs.q
		if q.prefilling() {
			keep = append(keep, bs)
			continue
		}
		done, err := q.accept(t.ids[k])
		k++
		switch {
		case err != nil:
			bs.err <- err
			continue
		case done:
			q.finish()
			bs.err <- nil
			continue
		}
		keep = append(keep, bs)
	}
	clear(active[len(keep):])
	return keep
}

// pickTask is sample's parallel loop: ids[i] = seqs[i].pick().
type pickTask struct {
	seqs []*seq
	ids  []int
}

func (t *pickTask) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		t.ids[i] = t.seqs[i].pick()
	}
}

// fill puts the step's rows in batch: one decode row per decoding
// sequence, then prompt rows in order of arrival, at most
// sharedPromptRows (aligned, see there) when someone decodes. It returns
// the step's sequence when there is only one.
func (b *Batcher) fill(batch *model.Batch, active []*batchSeq) (only *seq) {
	batch.Reset()
	room, n := b.prefillRows, 0
	for _, bs := range active {
		if q := bs.q; !q.prefilling() {
			batch.Add(q.s, q.history[q.pos], q.pos, true)
			only, n = q, n+1
		}
	}
	if d := len(batch.Tokens); d > 0 {
		room = min(room, sharedPromptRows-d%stepRowAlign)
	}
	for _, bs := range active {
		q := bs.q
		if !q.prefilling() || room == 0 {
			continue
		}
		np := len(q.req.Prompt)
		bs.take = min(room, np-q.done)
		for p := q.done; p < q.done+bs.take; p++ {
			batch.Add(q.s, q.req.Prompt[p], p, p == np-1)
		}
		room -= bs.take
		only, n = q, n+1
	}
	if n != 1 {
		return nil
	}
	return only
}

// deliver hands the step's logits to its sequences (decode rows first,
// then the last rows of finished prompts, as fill ordered them) and
// returns the sequences that go on; with err, those in the step fail.
func (b *Batcher) deliver(active []*batchSeq, logits []float32, vocab int, err error) []*batchSeq {
	row := 0
	keep := active[:0]
	for _, bs := range active { // decode rows
		q := bs.q
		if q.prefilling() {
			continue
		}
		if err != nil {
			bs.err <- pipeline.Wrap(pipeline.StageGenerate, err, "")
			continue
		}
		copy(q.logits, logits[row*vocab:(row+1)*vocab])
		row++
		q.pos++
	}
	for _, bs := range active { // prompt chunks, and everyone who goes on
		q := bs.q
		if !q.prefilling() {
			if err == nil {
				keep = append(keep, bs)
			}
			continue
		}
		if bs.take > 0 {
			if err != nil {
				bs.err <- pipeline.Wrap(pipeline.StagePrefill, err, "")
				continue
			}
			if q.done+bs.take == len(q.req.Prompt) {
				copy(q.logits, logits[row*vocab:(row+1)*vocab])
				row++
			}
			q.prefilled(bs.take)
			bs.take = 0
		}
		keep = append(keep, bs)
	}
	clear(active[len(keep):])
	return keep
}

// grow returns s resized to n, reallocated only when it is too small.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}
