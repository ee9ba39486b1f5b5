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
// streams share the weight reads: each request is prefilled on its
// caller's goroutine, then every active sequence advances by one token per
// step of a single loop that evaluates them all with model.DecodeStep.
// Generate may be called from any number of goroutines; at most maxSeqs
// sequences decode together, later ones wait for a free slot.
//
// Token callbacks and trace hooks of decoding run on the batch loop's
// goroutine, so they must return quickly (as pipeline hooks already do). A
// cancelled request leaves the batch at the next step; the others go on.
type Batcher struct {
	m     model.Model
	opts  model.SessionOptions
	slots chan struct{} // one per sequence that may decode
	join  chan *batchSeq

	mu     sync.Mutex
	closed bool
	quit   chan struct{}
	done   chan struct{}
}

// batchSeq is a prefilled sequence waiting for or in the batch loop.
type batchSeq struct {
	q   *seq
	err chan error // receives the outcome once
}

// NewBatcher starts the batch loop for m. opts sizes each request's
// session (its batch size is raised to maxSeqs so any session's buffers
// can hold a whole step).
func NewBatcher(m model.Model, opts model.SessionOptions, maxSeqs int) *Batcher {
	maxSeqs = max(maxSeqs, 1)
	opts.Batch = max(opts.Batch, maxSeqs)
	b := &Batcher{m: m, opts: opts, slots: make(chan struct{}, maxSeqs), join: make(chan *batchSeq),
		quit: make(chan struct{}), done: make(chan struct{})}
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
}

// Generate runs req like the package-level Generate, on a session of its
// own (ctxLen, when positive, overrides the batcher's context length),
// sharing decode steps with the other requests in flight.
func (b *Batcher) Generate(ctx context.Context, req Request, ctxLen int) (*Result, error) {
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, pipeline.Wrap(pipeline.StageQueued, ctx.Err(), "")
	case <-b.quit:
		return nil, ErrBatcherClosed
	}
	defer func() { <-b.slots }()
	opts := b.opts
	if ctxLen > 0 {
		opts.CtxLen = ctxLen
	}
	s, err := b.m.NewSession(opts)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePrefill, err, "")
	}
	defer s.Close()
	q, err := prefill(ctx, s, b.m.Config().VocabSize, req)
	if err != nil {
		return nil, err
	}
	bs := &batchSeq{q: q, err: make(chan error, 1)}
	select {
	case b.join <- bs:
	case <-b.quit:
		return nil, ErrBatcherClosed
	}
	if err := <-bs.err; err != nil {
		return q.res, err
	}
	return q.res, nil
}

// loop is the batch: sample for every active sequence, drop the finished
// ones, evaluate the rest in one DecodeStep, repeat.
func (b *Batcher) loop() {
	defer close(b.done)
	cfg := b.m.Config()
	vocab := cfg.VocabSize
	var active []*batchSeq
	var sessions []model.Session
	var tokens, positions []int
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

		// Sample one token for each sequence; keep those that go on.
		keep := active[:0]
		sessions, tokens, positions = sessions[:0], tokens[:0], positions[:0]
		for _, bs := range active {
			q := bs.q
			if err := q.ctx.Err(); err != nil {
				bs.err <- pipeline.Wrap(pipeline.StageGenerate, err, "")
				continue
			}
			done, err := q.next()
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
			sessions = append(sessions, q.s)
			tokens = append(tokens, q.history[q.pos])
			positions = append(positions, q.pos)
		}
		active = keep
		if len(active) == 0 {
			continue
		}
		if cap(logits) < len(active)*vocab {
			logits = make([]float32, len(active)*vocab)
		}
		logits = logits[:len(active)*vocab]
		err := model.DecodeStep(context.Background(), &cfg, sessions, tokens, positions, logits)
		for i, bs := range active {
			if err != nil {
				bs.err <- pipeline.Wrap(pipeline.StageGenerate, fmt.Errorf("batched decode step: %w", err), "")
				continue
			}
			copy(bs.q.logits, logits[i*vocab:(i+1)*vocab])
			bs.q.pos++
		}
		if err != nil {
			active = active[:0]
		}
	}
}
