package engine

import (
	"context"
	"runtime"
	"testing"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// TestStageStats checks what the prefill and generate stages report: the
// caller's roofline figures on generate (alone and through a Batcher), the
// weight bytes read, and a resident-memory high-water mark where the OS
// gives one.
func TestStageStats(t *testing.T) {
	m := stories(t)
	ids := prompts(t)[0].IDs
	req := Request{Prompt: ids, MaxTokens: 4, WeightBytes: 1000, Roofline: 1234.5, Limiter: "memory bandwidth (1 GB/s, measured)"}
	tests := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"generate", func(ctx context.Context) error {
			s := newSession(t, m, model.SessionOptions{CtxLen: 64})
			_, err := Generate(ctx, s, m.Config().VocabSize, req)
			return err
		}},
		{"batcher", func(ctx context.Context) error {
			b := NewBatcher(m, model.SessionOptions{CtxLen: 64}, 2)
			defer b.Close()
			_, err := b.Generate(ctx, req, 0)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stats := map[pipeline.Stage]pipeline.StageStats{}
			ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{
				StageDone: func(s pipeline.Stage, st pipeline.StageStats) { stats[s] = st },
			})
			if err := tc.run(ctx); err != nil {
				t.Fatal(err)
			}
			g, ok := stats[pipeline.StageGenerate]
			if !ok {
				t.Fatal("no generate stage_done")
			}
			if g.Roofline != req.Roofline || g.Limiter != req.Limiter || g.Items != 4 || g.Bytes != 4000 {
				t.Errorf("generate stats %+v, want roofline %g, limiter %q, 4 tokens, 4000 bytes", g, req.Roofline, req.Limiter)
			}
			if p := stats[pipeline.StagePrefill]; p.Roofline != 0 || p.Items != int64(len(ids)) {
				t.Errorf("prefill stats %+v, want %d tokens and no roofline", p, len(ids))
			}
			if runtime.GOOS == "linux" && (g.PeakRSS <= 0 || stats[pipeline.StagePrefill].PeakRSS <= 0) {
				t.Errorf("no peak RSS on linux: prefill %d, generate %d", stats[pipeline.StagePrefill].PeakRSS, g.PeakRSS)
			}
		})
	}
}

// TestStageCountsTheAnswer: a generation that ends at an end-of-generation
// token reports in its generate stage the answer's tokens, the count the
// result gives (the job page shows both), and flags the end token, whose
// decode pass the stage's rate still counts.
func TestStageCountsTheAnswer(t *testing.T) {
	m := stories(t)
	p := prompts(t)[0]
	eog := p.Greedy200[5] // the sixth greedy token, taken here for the end of generation
	var g pipeline.StageStats
	ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{
		StageDone: func(s pipeline.Stage, st pipeline.StageStats) {
			if s == pipeline.StageGenerate {
				g = st
			}
		},
	})
	s := newSession(t, m, model.SessionOptions{CtxLen: 64})
	res, err := Generate(ctx, s, m.Config().VocabSize, Request{Prompt: p.IDs, MaxTokens: 50, IsEOG: func(id int) bool { return id == eog }})
	if err != nil {
		t.Fatal(err)
	}
	first := 0
	for first < len(p.Greedy200) && p.Greedy200[first] != eog {
		first++
	}
	if res.StopReason != StopEOG || len(res.Tokens) != first+1 {
		t.Fatalf("stopped %q after %d tokens, want at the end token, after %d", res.StopReason, len(res.Tokens), first+1)
	}
	if g.Items != int64(first) || !g.EndToken {
		t.Errorf("generate stage: %d tokens, end token %v; want the answer's %d and the end token flagged", g.Items, g.EndToken, first)
	}
	// Its rate counts the decode passes: every token after the first,
	// the end token included.
	if r := g.Rate("generate", 2); r != float64(first)/2 {
		t.Errorf("rate %v over 2 s, want %d passes / 2 s", r, first)
	}
}
