package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	_ "github.com/glassbox-ai/glassbox/model/all"
	"github.com/glassbox-ai/glassbox/pipeline"
)

func stories(t *testing.T) model.Model { t.Helper(); return sharedModel(t, "models/stories260K.gguf") }

// storiesText loads stories260K with its tokenizer (closed when t ends).
func storiesText(t *testing.T) *Text {
	t.Helper()
	tx, err := LoadText(context.Background(), shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return tx
}

// sharedModel loads the shared model file rel (closed when t ends).
func sharedModel(t *testing.T, rel string) model.Model {
	t.Helper()
	f, err := gguf.Open(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newSession(t *testing.T, m model.Model, o model.SessionOptions) model.Session {
	t.Helper()
	s, err := m.NewSession(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

type promptGolden struct {
	IDs       []int `json:"ids"`
	Greedy200 []int `json:"greedy200"`
}

func prompts(t *testing.T) []promptGolden {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "golden/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Prompts []promptGolden `json:"stories260K_prompts"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Prompts) != 4 {
		t.Fatalf("manifest lists %d prompts, want 4", len(m.Prompts))
	}
	return m.Prompts
}

// TestGenerateGreedy runs the engine (prefill in chunks of 3, then decode)
// on the four stories260K prompts and checks the 200 reference ids.
func TestGenerateGreedy(t *testing.T) {
	m := stories(t)
	for i, p := range prompts(t) {
		s := newSession(t, m, model.SessionOptions{CtxLen: 256, Batch: 3})
		var streamed []int
		res, err := Generate(context.Background(), s, m.Config().VocabSize, Request{
			Prompt: p.IDs, MaxTokens: 200,
			OnToken: func(id int, _ string) error { streamed = append(streamed, id); return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.StopReason != StopLength || len(res.Tokens) != 200 {
			t.Fatalf("prompt %d: stop %q after %d tokens, want length after 200", i+1, res.StopReason, len(res.Tokens))
		}
		for k := range res.Tokens {
			if res.Tokens[k] != p.Greedy200[k] || streamed[k] != p.Greedy200[k] {
				t.Fatalf("prompt %d: token %d is %d (streamed %d), want %d", i+1, k, res.Tokens[k], streamed[k], p.Greedy200[k])
			}
		}
	}
}

// TestContextLimits checks that a prompt too long for the context is an
// encode error with the numbers, and that a generation reaching the end
// of the context stops with a length reason that says so.
func TestContextLimits(t *testing.T) {
	m := stories(t)
	vocab := m.Config().VocabSize
	p := prompts(t)[1].IDs // 13 tokens
	s := newSession(t, m, model.SessionOptions{CtxLen: 8})
	_, err := Generate(context.Background(), s, vocab, Request{Prompt: p})
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Stage != pipeline.StageEncode || pe.Numbers["tokens"] != 13 || pe.Numbers["ctx"] != 8 {
		t.Fatalf("long prompt: got %v, want an encode error with tokens 13, ctx 8", err)
	}
	if !strings.Contains(err.Error(), "13 tokens") || !strings.Contains(err.Error(), "8") {
		t.Errorf("message %q does not give the numbers", err)
	}

	s = newSession(t, m, model.SessionOptions{CtxLen: 20})
	res, err := Generate(context.Background(), s, vocab, Request{Prompt: p})
	if err != nil {
		t.Fatal(err)
	}
	// 13 prompt tokens fill positions 0..12; generated tokens 1..7 are
	// evaluated at 13..19, and the 8th is sampled from position 19.
	if res.StopReason != StopLength || len(res.Tokens) != 8 || !strings.Contains(res.StopDetail, "context holds 20") {
		t.Errorf("full context: stop %q (%s) after %d tokens, want length after 8", res.StopReason, res.StopDetail, len(res.Tokens))
	}
}

// TestStopsAndEOG checks the EOG stop and that a stop string is cut from
// the streamed text.
func TestStopsAndEOG(t *testing.T) {
	m := stories(t)
	vocab := m.Config().VocabSize
	g := prompts(t)[0]
	s := newSession(t, m, model.SessionOptions{CtxLen: 64})
	eogAt := g.Greedy200[5]
	res, err := Generate(context.Background(), s, vocab, Request{Prompt: g.IDs, IsEOG: func(id int) bool { return id == eogAt }})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopEOG || res.Tokens[len(res.Tokens)-1] != eogAt {
		t.Errorf("EOG: stop %q, tokens %v", res.StopReason, res.Tokens)
	}

	// A decoder that spells each id as "<id>": stop on the text of the
	// third token, which arrives split across the stream.
	s = newSession(t, m, model.SessionOptions{CtxLen: 64})
	stop := itoa(g.Greedy200[2]) + "><"
	var streamed strings.Builder
	res, err = Generate(context.Background(), s, vocab, Request{
		Prompt: g.IDs, MaxTokens: 50, Decoder: &idText{}, Stops: []string{stop},
		OnToken: func(_ int, text string) error { streamed.WriteString(text); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "<" + itoa(g.Greedy200[0]) + "><" + itoa(g.Greedy200[1]) + "><"
	if res.StopReason != StopString || res.Text != want || streamed.String() != want {
		t.Errorf("stop string: reason %q, text %q, streamed %q, want %q", res.StopReason, res.Text, streamed.String(), want)
	}
}

type idText struct{}

func (idText) Add(id int) string { return "<" + itoa(id) + ">" }
func (idText) Flush() string     { return "" }

func itoa(n int) string { return strconv.Itoa(n) }

// TestPerplexity reproduces llama-perplexity on ppl.ids: 3.8827 ± 0.002
// and the cumulative value after every window.
func TestPerplexity(t *testing.T) {
	m := stories(t)
	ids := readIDs(t, "golden/ppl.ids")
	if len(ids) != 1444 {
		t.Fatalf("ppl.ids has %d ids, want 1444", len(ids))
	}
	s := newSession(t, m, model.SessionOptions{CtxLen: 128, Batch: 128})
	res, err := Perplexity(context.Background(), s, m.Config().VocabSize, ids, 128, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{2.7581, 3.0098, 3.2367, 3.3748, 3.6112, 3.6207, 3.6097, 3.6646, 3.8074, 3.9097, 3.8827}
	if len(res.Cumulative) != len(want) || res.Scored != 693 || res.Dropped != 36 {
		t.Fatalf("%d windows, %d scored, %d dropped; want 11, 693, 36", len(res.Cumulative), res.Scored, res.Dropped)
	}
	for i, w := range want {
		if math.Abs(res.Cumulative[i]-w) > 0.002 {
			t.Errorf("after window %d: PPL %.4f, want %.4f ± 0.002", i+1, res.Cumulative[i], w)
		}
	}
	if math.Abs(res.StdErr-0.24654) > 0.002 {
		t.Errorf("stderr %.5f, want 0.24654", res.StdErr)
	}
	t.Logf("PPL %.4f ± %.5f", res.PPL, res.StdErr)
}

// TestCancel checks that cancelling the context stops a generation within
// a decode step and returns the context's error attributed to a stage.
func TestCancel(t *testing.T) {
	m := stories(t)
	s := newSession(t, m, model.SessionOptions{CtxLen: 256})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	res, err := Generate(ctx, s, m.Config().VocabSize, Request{
		Prompt: prompts(t)[0].IDs, MaxTokens: 200,
		OnToken: func(int, string) error {
			if n++; n == 3 {
				cancel()
			}
			return nil
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if st, ok := pipeline.StageOf(err); !ok || st != pipeline.StageGenerate {
		t.Errorf("stage %q, want generate", st)
	}
	if len(res.Tokens) != 3 {
		t.Errorf("%d tokens after cancelling at the third, want 3", len(res.Tokens))
	}
}

// TestDecodeRate: the first token comes from the prompt's pass, so N
// tokens are N−1 decode passes, and a one-token reply has no decode rate.
func TestDecodeRate(t *testing.T) {
	for _, tc := range []struct {
		tokens int
		d      time.Duration
		steps  int
		rate   float64
	}{
		{0, time.Second, 0, 0},
		{1, time.Millisecond, 0, 0},
		{2, 500 * time.Millisecond, 1, 2},
		{65, 2 * time.Second, 64, 32},
		{5, 0, 4, 0},
	} {
		r := &Result{Tokens: make([]int, tc.tokens), GenerateTime: tc.d}
		if r.DecodeSteps() != tc.steps || r.DecodeRate() != tc.rate {
			t.Errorf("%d tokens in %v: %d steps at %g/s, want %d at %g", tc.tokens, tc.d, r.DecodeSteps(), r.DecodeRate(), tc.steps, tc.rate)
		}
	}
}

// TestClosedSession checks that Close releases a session's memory at once
// (its peak is not held until the collector runs) and that a closed session
// refuses work with an error, not a crash.
func TestClosedSession(t *testing.T) {
	m := stories(t)
	s, err := m.NewSession(model.SessionOptions{CtxLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.Config().VocabSize)
	if err := s.Forward(context.Background(), []int{1, 2, 3}, 0, logits); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := s.KVBytes(); n != 0 {
		t.Errorf("KVBytes() = %d after Close", n)
	}
	if err := s.Forward(context.Background(), []int{4}, 3, logits); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Forward after Close: %v, want a closed-session error", err)
	}
	s.Close()
}
