package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/sample"
)

// TestBatcher runs the four stories260K prompts at once through one
// batcher: every stream must get exactly its reference greedy ids, as if
// it ran alone, and a cancelled fifth request must leave without
// disturbing them.
func TestBatcher(t *testing.T) {
	m := stories(t)
	b := NewBatcher(m, model.SessionOptions{CtxLen: 256, Batch: 4, Threads: 1}, 4)
	defer b.Close()
	ps := prompts(t)
	var wg sync.WaitGroup
	results := make([]*Result, len(ps))
	errs := make([]error, len(ps))
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.Generate(context.Background(), Request{Prompt: p.IDs, MaxTokens: 60}, 0)
		}()
	}
	// A fifth request, cancelled after its third token.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	wg.Add(1)
	var cancelErr error
	go func() {
		defer wg.Done()
		_, cancelErr = b.Generate(ctx, Request{Prompt: ps[0].IDs, MaxTokens: 100,
			OnToken: func(int, string) error {
				if n++; n == 3 {
					cancel()
				}
				return nil
			}}, 0)
	}()
	wg.Wait()
	for i, p := range ps {
		if errs[i] != nil {
			t.Fatalf("prompt %d: %v", i+1, errs[i])
		}
		got := results[i].Tokens
		if len(got) != 60 || results[i].StopReason != StopLength {
			t.Fatalf("prompt %d: %d tokens, stop %q", i+1, len(got), results[i].StopReason)
		}
		for k := range got {
			if got[k] != p.Greedy200[k] {
				t.Fatalf("prompt %d: token %d is %d, want %d", i+1, k, got[k], p.Greedy200[k])
			}
		}
	}
	if !errors.Is(cancelErr, context.Canceled) {
		t.Errorf("cancelled request: got %v, want context.Canceled", cancelErr)
	}
}

func TestBatcherClosed(t *testing.T) {
	b := NewBatcher(stories(t), model.SessionOptions{CtxLen: 32}, 2)
	b.Close()
	if _, err := b.Generate(context.Background(), Request{Prompt: []int{1}}, 0); !errors.Is(err, ErrBatcherClosed) {
		t.Errorf("after Close: got %v, want ErrBatcherClosed", err)
	}
}

// TestBatcherText runs two text requests through Text.Prepare and a
// batcher.
func TestBatcherText(t *testing.T) {
	tx := storiesText(t)
	b := NewBatcher(tx.Model, model.SessionOptions{CtxLen: 64}, 2)
	defer b.Close()
	var wg sync.WaitGroup
	texts := make([]string, 2)
	for i, p := range []string{"Once upon a time", "Lily and Ben went to the park."} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := tx.Prepare(context.Background(), TextRequest{Prompt: p, MaxTokens: 6})
			if err != nil {
				t.Error(err)
				return
			}
			res, err := b.Generate(context.Background(), r, 0)
			if err != nil {
				t.Error(err)
				return
			}
			texts[i] = res.Text
		}()
	}
	wg.Wait()
	if !strings.HasPrefix(texts[0], ", there was a little") || !strings.HasPrefix(texts[1], " They saw a big") {
		t.Errorf("texts %q", texts)
	}
}

// TestBatcherJoinWhileDecoding sends a long prompt (a golden prompt and
// the first 40 tokens of its greedy continuation) while another stream is
// decoding: its prefill goes in chunks of sharedPromptRows between the
// other's decode rows, and both streams must still get exactly their
// reference tokens, the prefill stage reporting every prompt token.
func TestBatcherJoinWhileDecoding(t *testing.T) {
	m := stories(t)
	b := NewBatcher(m, model.SessionOptions{CtxLen: 256, Batch: 128, Threads: 2}, 2)
	defer b.Close()
	ps := prompts(t)
	long := append(append([]int(nil), ps[1].IDs...), ps[1].Greedy200[:40]...)
	if len(long) <= sharedPromptRows {
		t.Fatalf("prompt of %d tokens does not need several chunks", len(long))
	}
	var wg sync.WaitGroup
	var first, second *Result
	var errFirst, errSecond error
	started := make(chan struct{})
	var joining, prefilled atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		n := 0
		first, errFirst = b.Generate(context.Background(), Request{Prompt: ps[0].IDs, MaxTokens: 80,
			OnToken: func(int, string) error {
				if n++; n == 5 {
					close(started)
					// The batch loop (which calls OnToken) waits here until
					// the other request has begun its prefill, a few lines
					// before it joins, however slow its goroutine is to get
					// there on a loaded machine.
					for !joining.Load() {
						time.Sleep(time.Millisecond)
					}
				}
				if n >= 5 && !prefilled.Load() {
					time.Sleep(time.Millisecond) // keep decoding until the other's prefill is done
				}
				return nil
			}}, 0)
	}()
	<-started
	var progress []int64
	var prefillItems int64
	ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{
		StageStart: func(s pipeline.Stage) {
			if s == pipeline.StagePrefill {
				joining.Store(true)
			}
		},
		Progress: func(s pipeline.Stage, done, total int64) {
			if s == pipeline.StagePrefill {
				progress = append(progress, done)
			}
		},
		StageDone: func(s pipeline.Stage, st pipeline.StageStats) {
			if s == pipeline.StagePrefill {
				prefillItems = st.Items
				prefilled.Store(true)
			}
		},
	})
	second, errSecond = b.Generate(ctx, Request{Prompt: long, MaxTokens: 30}, 0)
	wg.Wait()
	if errFirst != nil || errSecond != nil {
		t.Fatalf("errors: %v, %v", errFirst, errSecond)
	}
	if !equalInts(first.Tokens, ps[0].Greedy200[:80]) {
		t.Errorf("decoding stream: got %v, want %v", first.Tokens, ps[0].Greedy200[:80])
	}
	if !equalInts(second.Tokens, ps[1].Greedy200[40:70]) {
		t.Errorf("joining stream: got %v, want %v", second.Tokens, ps[1].Greedy200[40:70])
	}
	// The first stream was decoding throughout, so the prompt went in
	// chunks that fill a step of one decode row to sharedPromptRows.
	chunk := int64(sharedPromptRows - 1)
	if len(progress) < 2 || progress[0] != chunk || progress[len(progress)-1] != int64(len(long)) || prefillItems != int64(len(long)) {
		t.Errorf("prefill progress %v, stage items %d, want chunks of %d up to %d", progress, prefillItems, chunk, len(long))
	}
}

// TestBatcherCancelPrefill cancels a request while its prompt is being
// prefilled (one row per step): it must fail in the prefill stage with the
// context's error, and a request after it must run normally.
func TestBatcherCancelPrefill(t *testing.T) {
	m := stories(t)
	b := NewBatcher(m, model.SessionOptions{CtxLen: 256, Batch: 1}, 2)
	defer b.Close()
	ps := prompts(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = pipeline.WithTrace(ctx, &pipeline.Trace{Progress: func(s pipeline.Stage, done, total int64) {
		if s == pipeline.StagePrefill && done == 2 {
			cancel()
		}
	}})
	_, err := b.Generate(ctx, Request{Prompt: ps[2].IDs, MaxTokens: 10}, 0)
	if st, _ := pipeline.StageOf(err); !errors.Is(err, context.Canceled) || st != pipeline.StagePrefill {
		t.Fatalf("got %v (stage %q), want context.Canceled in prefill", err, st)
	}
	res, err := b.Generate(context.Background(), Request{Prompt: ps[3].IDs, MaxTokens: 10}, 0)
	if err != nil || !equalInts(res.Tokens, ps[3].Greedy200[:10]) {
		t.Fatalf("after the cancel: %v, tokens %v", err, res)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBatcherSampled runs three seeded, temperature-sampled requests
// through a 2-thread batcher, whose picks run in parallel on its pool:
// each must get the tokens it gets alone with the same seed.
func TestBatcherSampled(t *testing.T) {
	m := stories(t)
	ps := prompts(t)
	opts := model.SessionOptions{CtxLen: 256, Batch: 32, Threads: 2}
	b := NewBatcher(m, opts, 3)
	defer b.Close()
	req := func(i int) Request {
		return Request{Prompt: ps[i].IDs, MaxTokens: 40,
			Sampler: sample.New(sample.Params{Temperature: 0.9, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, Seed: uint64(7 + i)})}
	}
	want := make([][]int, 3)
	for i := range want {
		res, err := Generate(context.Background(), newSession(t, m, opts), m.Config().VocabSize, req(i))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res.Tokens
	}
	got := make([][]int, 3)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.Generate(context.Background(), req(i), 0)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = res.Tokens
		}()
	}
	wg.Wait()
	for i := range got {
		if !equalInts(got[i], want[i]) {
			t.Errorf("request %d: batched %v, alone %v", i, got[i], want[i])
		}
	}
}

// cancelLater is a context whose Err reports cancellation from its second
// call on: the batch loop's check before a step passes, the layers' checks
// inside the step fail.
type cancelLater struct {
	context.Context
	calls atomic.Int32
}

func (c *cancelLater) Err() error {
	if c.calls.Add(1) > 1 {
		return context.Canceled
	}
	return nil
}

// TestBatcherCancelInsideStep checks that a step holding only one
// sequence's rows (a lone prompt) stops inside the forward pass when that
// sequence is cancelled, rather than after the whole chunk.
func TestBatcherCancelInsideStep(t *testing.T) {
	m := stories(t)
	b := NewBatcher(m, model.SessionOptions{CtxLen: 256, Batch: 256}, 2)
	defer b.Close()
	ctx := &cancelLater{Context: context.Background()}
	_, err := b.Generate(ctx, Request{Prompt: prompts(t)[1].IDs, MaxTokens: 10}, 0)
	if st, _ := pipeline.StageOf(err); !errors.Is(err, context.Canceled) || st != pipeline.StagePrefill || !strings.Contains(err.Error(), "layer 0") {
		t.Fatalf("got %v (stage %q), want context.Canceled in prefill from layer 0", err, st)
	}
}

// TestBatcherReusesSessions runs requests one after another, each with
// another prompt: the second gets a session of its own (there is room for
// two, and the first one's cache is kept), the third reuses the oldest
// (its cache still holding a longer sequence beyond the third's prompt)
// and must still get exactly its reference tokens; a request with another
// context length gets a session of its own, and the oldest is closed.
func TestBatcherReusesSessions(t *testing.T) {
	m := stories(t)
	b := NewBatcher(m, model.SessionOptions{CtxLen: 256, Batch: 16}, 2)
	defer b.Close()
	ps := prompts(t)
	idle := b.idle.Len
	for i, tc := range []struct {
		p, n, ctx, idle int
	}{{0, 120, 0, 1}, {3, 40, 0, 2}, {1, 30, 0, 2}, {2, 20, 128, 2}} {
		res, err := b.Generate(context.Background(), Request{Prompt: ps[tc.p].IDs, MaxTokens: tc.n}, tc.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !equalInts(res.Tokens, ps[tc.p].Greedy200[:tc.n]) {
			t.Errorf("request %d: got %v, want %v", i, res.Tokens, ps[tc.p].Greedy200[:tc.n])
		}
		if got := idle(); got != tc.idle {
			t.Errorf("after request %d: %d idle sessions, want %d", i, got, tc.idle)
		}
	}
}

// TestBatcherQ8KV: sequences stepped together over q8_0 caches make the
// tokens each makes alone (attention reads only its own sequence's cache,
// and the matrix kernels give a row the same bits in any batch).
func TestBatcherQ8KV(t *testing.T) {
	m := sharedModel(t, "models/tiny-llama-F32.gguf")
	opts := model.SessionOptions{CtxLen: 128, KVQ8: true}
	prompts := [][]int{{1, 300, 301, 302}, {1, 77}, {1, 400, 12, 9, 250, 251}}
	alone := make([][]int, len(prompts))
	for i, p := range prompts {
		s := newSession(t, m, opts)
		res, err := Generate(context.Background(), s, m.Config().VocabSize, Request{Prompt: p, MaxTokens: 24, Decoder: &idText{}})
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = res.Tokens
	}
	b := NewBatcher(m, opts, len(prompts))
	defer b.Close()
	var wg sync.WaitGroup
	together := make([][]int, len(prompts))
	errs := make([]error, len(prompts))
	for i, p := range prompts {
		wg.Go(func() {
			res, err := b.Generate(context.Background(), Request{Prompt: p, MaxTokens: 24, Decoder: &idText{}}, 0)
			if errs[i] = err; err == nil {
				together[i] = res.Tokens
			}
		})
	}
	wg.Wait()
	for i := range prompts {
		if errs[i] != nil {
			t.Fatalf("prompt %d: %v", i, errs[i])
		}
		if !slices.Equal(together[i], alone[i]) {
			t.Errorf("prompt %d: together %v, alone %v", i, together[i], alone[i])
		}
	}
}

// TestBatcherPromptCache: a request that continues an earlier one (its
// prompt, then part of its reply) evaluates only what its session's cache
// does not hold, and still gets the reference tokens — also after another
// conversation ran in between (two sequences: each keeps a session).
func TestBatcherPromptCache(t *testing.T) {
	m := stories(t)
	b := NewBatcher(m, model.SessionOptions{CtxLen: 256, Batch: 16}, 2)
	defer b.Close()
	p := prompts(t)[0]
	first, err := b.Generate(context.Background(), Request{Prompt: p.IDs, MaxTokens: 30}, 0)
	if err != nil {
		t.Fatal(err)
	}
	prompt := slices.Concat(p.IDs, p.Greedy200[:20])
	second, err := b.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 10}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if first.CachedTokens != 0 || second.CachedTokens != len(prompt)-1 {
		t.Errorf("cached tokens: %d then %d, want 0 then %d", first.CachedTokens, second.CachedTokens, len(prompt)-1)
	}
	if !equalInts(second.Tokens, p.Greedy200[20:30]) {
		t.Errorf("continued: got %v, want %v", second.Tokens, p.Greedy200[20:30])
	}
	other := prompts(t)[1]
	if res, err := b.Generate(context.Background(), Request{Prompt: other.IDs, MaxTokens: 10}, 0); err != nil || res.CachedTokens > 1 {
		t.Fatalf("another conversation: %v, %+v", err, res)
	}
	prompt = slices.Concat(p.IDs, p.Greedy200[:28])
	third, err := b.Generate(context.Background(), Request{Prompt: prompt, MaxTokens: 5}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if third.CachedTokens != len(p.IDs)+29-1-1 || !equalInts(third.Tokens, p.Greedy200[28:33]) {
		t.Errorf("continued after another conversation: %d cached (want %d), tokens %v, want %v",
			third.CachedTokens, len(p.IDs)+27, third.Tokens, p.Greedy200[28:33])
	}
}

// TestBatcherJSON: JSON-mode requests stepped together each keep their
// own constraint and make the text each makes alone.
func TestBatcherJSON(t *testing.T) {
	ctx := context.Background()
	tx := storiesText(t)
	opts := model.SessionOptions{CtxLen: 128}
	prompts := []string{"Once upon a time", "Lily and Ben went to the park.", "The little dog was sad because"}
	for _, format := range []string{"json", `{"type": "object", "properties": {"who": {"type": "string", "maxLength": 10}, "n": {"type": "integer"}}}`} {
		alone := make([]string, len(prompts))
		for i, p := range prompts {
			res, err := tx.Generate(ctx, TextRequest{Prompt: p, MaxTokens: 30, Format: format, Session: opts})
			if err != nil {
				t.Fatal(err)
			}
			alone[i] = res.Text
		}
		b := NewBatcher(tx.Model, opts, len(prompts))
		var wg sync.WaitGroup
		together := make([]string, len(prompts))
		for i, p := range prompts {
			wg.Go(func() {
				r, err := tx.Prepare(ctx, TextRequest{Prompt: p, MaxTokens: 30, Format: format})
				if err != nil {
					t.Error(err)
					return
				}
				if res, err := b.Generate(ctx, r, 0); err != nil {
					t.Error(err)
				} else {
					together[i] = res.Text
				}
			})
		}
		wg.Wait()
		b.Close()
		for i := range prompts {
			if together[i] != alone[i] || !strings.HasPrefix(strings.TrimSpace(alone[i]), "{") {
				t.Errorf("format %s, prompt %d: together %q, alone %q", format, i, together[i], alone[i])
			}
		}
	}
}
