package engine

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// logitsRecorder is a greedy Sampler that keeps the logits of every pick.
type logitsRecorder struct{ seen [][]float32 }

func (r *logitsRecorder) Sample(logits []float32, _ []int) int {
	r.seen = append(r.seen, slices.Clone(logits))
	return greedy(logits)
}

// sameBits reports whether two logit rows are bit for bit equal.
func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestPromptCache: a chat's turns through a SessionCache. Each turn's
// prompt repeats the previous turn's prompt and reply, then adds tokens;
// the cache must evaluate only those, and the run must give the tokens and
// the logits a fresh session gives the whole prompt: the same bits for
// quantized weights, whose kernels give a row the same bits in any batch;
// within rounding for float weights, whose rows sum in another order in
// a batch of four or more (stories260K, F32) — as on a fresh session
// whose prompt is cut into other chunks. The sessions prefill in chunks
// of 16, so positions the cache took from one-token decode steps are, on
// the fresh session, rows of a batch.
func TestPromptCache(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		nmse float64 // 0: the same bits
		kvq8 bool    // a q8_0 KV cache (positions written into key blocks others already hold)
	}{{"models/stories260K.gguf", 1e-6, false}, {"models/tiny-llama-Q4_K_M.gguf", 0, false},
		{"models/tiny-llama-Q8_0.gguf", 0, false}, {"models/tiny-llama-Q8_0.gguf", 0, true},
		{"models/tiny-qwen2-Q8_0.gguf", 0, false}, {"models/tiny-phi3-F32.gguf", 1e-6, false}} {
		rel := tc.rel
		name := rel
		if tc.kvq8 {
			name += "/kv-q8_0"
		}
		t.Run(name, func(t *testing.T) {
			m := sharedModel(t, rel)
			vocab := m.Config().VocabSize
			opts := model.SessionOptions{CtxLen: 192, Batch: 16, KVQ8: tc.kvq8}.Fill(m.Config())
			run := func(c *SessionCache, prompt []int) (*Result, [][]float32) {
				t.Helper()
				rec := &logitsRecorder{}
				req := Request{Prompt: prompt, MaxTokens: 24, Sampler: rec}
				var s model.Session
				cached := 0
				if c != nil {
					s, cached = c.Take(opts, prompt)
				}
				if s == nil {
					s = newSession(t, m, opts)
				}
				q, res, err := generate(context.Background(), s, vocab, req, cached)
				if err != nil {
					t.Fatal(err)
				}
				if c != nil {
					c.Put(s, q.history[:q.evaluated()])
				}
				return res, rec.seen
			}
			c := NewSessionCache(1)
			defer c.Close()
			prompt := []int{1, 300, 301, 302, 303, 40, 41}
			next := []int{13, 77, 78, 79, 500}
			wantCached := 0
			for turn := range 4 {
				got, gotLogits := run(c, prompt)
				want, wantLogits := run(nil, prompt)
				if !slices.Equal(got.Tokens, want.Tokens) {
					t.Fatalf("turn %d: tokens %v with the cache, %v fresh", turn, got.Tokens, want.Tokens)
				}
				for i := range wantLogits {
					if sameBits(gotLogits[i], wantLogits[i]) {
						continue
					}
					var num, den float64
					for k := range wantLogits[i] {
						d := float64(gotLogits[i][k] - wantLogits[i][k])
						num += d * d
						den += float64(wantLogits[i][k]) * float64(wantLogits[i][k])
					}
					if num/den > tc.nmse {
						t.Fatalf("turn %d: the logits of token %d differ from a fresh session's: NMSE %.3g (allowed %g)", turn, i, num/den, tc.nmse)
					}
				}
				if got.CachedTokens != wantCached || want.CachedTokens != 0 {
					t.Fatalf("turn %d: %d prompt tokens cached, want %d", turn, got.CachedTokens, wantCached)
				}
				if c.Len() != 1 {
					t.Fatalf("turn %d: %d kept sessions, want 1", turn, c.Len())
				}
				// The next turn: this prompt, the reply but its last token
				// (never evaluated), and a new message.
				reply := got.Tokens[:len(got.Tokens)-1]
				wantCached = len(prompt) + len(reply)
				prompt = slices.Concat(prompt, reply, next)
				next[0]++ // never the token the model would pick
			}
			// The same prompt again: all but its last token from the cache.
			c2 := NewSessionCache(1)
			defer c2.Close()
			run(c2, prompt)
			if got, _ := run(c2, prompt); got.CachedTokens != len(prompt)-1 {
				t.Errorf("same prompt again: %d of %d tokens cached, want %d", got.CachedTokens, len(prompt), len(prompt)-1)
			}
			// Another conversation shares only BOS.
			if got, _ := run(c2, []int{1, 400, 401}); got.CachedTokens != 1 {
				t.Errorf("new conversation: %d tokens cached, want 1", got.CachedTokens)
			}
		})
	}
}

// TestSessionCache: Take matches options and the longest prefix; Put
// beyond the limit closes the oldest; Close closes what is kept.
func TestSessionCache(t *testing.T) {
	m := stories(t)
	a := model.SessionOptions{CtxLen: 64}.Fill(m.Config())
	b := model.SessionOptions{CtxLen: 32}.Fill(m.Config())
	mk := func(o model.SessionOptions) model.Session {
		s, err := m.NewSession(o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	c := NewSessionCache(2)
	s1, s2 := mk(a), mk(a)
	c.Put(s1, []int{1, 2, 3, 4})
	c.Put(s2, []int{1, 2, 9})
	if s, n := c.Take(b, []int{1, 2, 3}); s != nil || n != 0 {
		t.Fatalf("other options: got a session with %d tokens", n)
	}
	c.Put(nil, nil) // making one failed
	if s, n := c.Take(a, []int{1, 2, 3, 4, 5}); s != s1 || n != 4 {
		t.Fatalf("longest prefix: got %d tokens (want s1, 4)", n)
	}
	if s, n := c.Take(a, []int{1, 2, 9}); s != s2 || n != 2 {
		t.Fatalf("whole prompt cached: got %d tokens, want 2 (the last is evaluated)", n)
	}
	c.Put(s1, []int{1, 2, 3, 4, 5, 6, 7, 8})
	c.Put(s2, []int{1, 5, 9, 9})
	// A prompt that would reuse less than half of every cache: no room
	// for a new session (two kept, max two), so the oldest is taken.
	if s, n := c.Take(a, []int{1, 2, 3, 7}); s != s1 || n != 3 {
		t.Fatalf("no room: got %d tokens (want s1, the oldest, 3)", n)
	}
	c.Put(s1, []int{1, 2, 3, 4, 5, 6, 7, 8})
	// With one session in use and room for two, such a prompt gets a new
	// session.
	roomy := NewSessionCache(2)
	s1, _ = c.Take(a, []int{1, 2, 3, 4})
	roomy.Put(s1, []int{1, 2, 3, 4, 5, 6, 7, 8})
	if s, n := roomy.Take(a, []int{1, 2, 3, 7}); s != nil || n != 0 {
		t.Fatalf("room for a new session: got a kept one with %d tokens", n)
	}
	roomy.Put(nil, nil)
	s1, _ = roomy.Take(a, []int{1, 2, 3, 4, 5, 6, 7, 8, 9})
	c.Put(s1, []int{1})
	s3 := mk(b)
	c.Put(s3, []int{3}) // three kept: closes s2, the oldest
	ctx := context.Background()
	logits := make([]float32, m.Config().VocabSize)
	if err := s2.Forward(ctx, []int{1}, 0, logits); err == nil {
		t.Fatal("the oldest session was not closed")
	}
	if err := s1.Forward(ctx, []int{1}, 0, logits); err != nil {
		t.Fatalf("a kept session: %v", err)
	}
	c.Close()
	if err := s3.Forward(ctx, []int{1}, 0, logits); err == nil {
		t.Fatal("Close did not close the kept sessions")
	}
	s4 := mk(a)
	c.Put(s4, nil) // after Close: closed at once
	if err := s4.Forward(ctx, []int{1}, 0, logits); err == nil {
		t.Fatal("Put after Close kept the session")
	}
}

// TestTextPromptCache: Text.Generate with a SessionCache reuses the
// session and reports the cached tokens in its result and its prefill
// stage; a prompt that does not fit leaves the cache intact.
func TestTextPromptCache(t *testing.T) {
	ctx := context.Background()
	tx := storiesText(t)
	c := NewSessionCache(1)
	defer c.Close()
	opts := model.SessionOptions{CtxLen: 128, Batch: 8}
	first, err := tx.Generate(ctx, TextRequest{Prompt: "Once upon a time", MaxTokens: 20, Session: opts, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	var prefill pipeline.StageStats
	tr := &pipeline.Trace{StageDone: func(st pipeline.Stage, s pipeline.StageStats) {
		if st == pipeline.StagePrefill {
			prefill = s
		}
	}}
	second, err := tx.Generate(pipeline.WithTrace(ctx, tr), TextRequest{Prompt: "Once upon a time there was", MaxTokens: 20, Session: opts, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	if first.CachedTokens != 0 || second.CachedTokens == 0 || second.CachedTokens >= second.PromptTokens {
		t.Fatalf("cached tokens: first %d, second %d of %d", first.CachedTokens, second.CachedTokens, second.PromptTokens)
	}
	if prefill.Note == "" || prefill.Cached != int64(second.CachedTokens) || prefill.Items != int64(second.PromptTokens-second.CachedTokens) {
		t.Errorf("prefill stage: %+v, want %d cached and %d evaluated tokens with a note", prefill,
			second.CachedTokens, second.PromptTokens-second.CachedTokens)
	}
	fresh, err := tx.Generate(ctx, TextRequest{Prompt: "Once upon a time there was", MaxTokens: 20, Session: opts})
	if err != nil {
		t.Fatal(err)
	}
	if second.Text != fresh.Text {
		t.Errorf("with the cache %q, fresh %q", second.Text, fresh.Text)
	}
	long := make([]int, 200)
	for i := range long {
		long[i] = 1
	}
	if _, err := tx.Generate(ctx, TextRequest{PromptIDs: long, Session: opts, Cache: c}); err == nil {
		t.Fatal("a prompt longer than the context was accepted")
	}
	if c.Len() != 1 {
		t.Errorf("after a refused prompt: %d kept sessions, want 1", c.Len())
	}
}
