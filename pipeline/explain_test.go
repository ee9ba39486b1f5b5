package pipeline

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake time source the test engine advances.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func explained(t *testing.T, fn func(ctx context.Context, clk *clock) (any, error)) string {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)}
	m := NewManager(Options{Now: clk.now})
	j := m.Submit(context.Background(), Params{ID: "j1", Kind: "text", Model: "stories260K"},
		func(ctx context.Context) (any, error) { return fn(ctx, clk) })
	j.Wait(context.Background())
	var b strings.Builder
	if err := j.Explain(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestExplain(t *testing.T) {
	tests := []struct {
		name string
		fn   func(ctx context.Context, clk *clock) (any, error)
		want string
	}{
		{"done, load-bound", func(ctx context.Context, clk *clock) (any, error) {
			tr := TraceFrom(ctx)
			tr.OnStageStart(StagePlan)
			clk.add(2 * time.Millisecond)
			tr.OnStageDone(StagePlan, StageStats{})
			tr.OnStageStart(StageLoad)
			clk.add(3100 * time.Millisecond)
			tr.OnStageDone(StageLoad, StageStats{Bytes: 1 << 30, PeakRSS: 1100 << 20, Placement: "cpu"})
			tr.OnStageStart(StagePrefill)
			clk.add(200 * time.Millisecond)
			tr.OnStageDone(StagePrefill, StageStats{Items: 12, Unit: "tokens"})
			tr.OnStageStart(StageGenerate)
			tr.OnWarning("ctx_nearly_full", "the context is 90% full")
			clk.add(698 * time.Millisecond)
			tr.OnStageDone(StageGenerate, StageStats{Items: 128, Unit: "tokens", Roofline: 210, Limiter: "memory bandwidth",
				Note: "a Q4_K_M file would be ~1.8× faster"})
			tr.OnStageSkipped(StageDecode, "text is decoded while generating")
			return "ok", nil
		}, `job j1 (text, stories260K): done in 4.00 s
  plan      ▏                                  2 ms
  load      ███████████████████████▎         3.10 s  1.0 GiB read (330.3 MiB/s) · peak 1.1 GiB · cpu
  prefill   █▌                               200 ms  12 tokens, 60.0 tokens/s
  generate  █████▏                           698 ms  128 tokens, 182 tokens/s · 87% of roofline
  decode                                   skipped: text is decoded while generating
  warning: ctx_nearly_full: the context is 90% full
verdict: 3.10 s of 4.00 s was loading the model (reading the file, laying out its weights for the kernels): it was not resident (glassbox serve keeps a model loaded between jobs; each CLI run loads it again).
  generation ran at 182 tokens/s, 87% of this machine's roofline (210 tokens/s), limited by memory bandwidth; a Q4_K_M file would be ~1.8× faster.
`},
		{"failed in encode", func(ctx context.Context, clk *clock) (any, error) {
			tr := TraceFrom(ctx)
			tr.OnStageSkipped(StageLoad, "model already loaded, 0 ms")
			tr.OnStageStart(StageEncode)
			clk.add(12 * time.Millisecond)
			return nil, Errorf(StageEncode, "try --ctx 8192", "prompt has 5000 tokens but the context holds 4096").
				With("tokens", 5000).With("ctx", 4096)
		}, `job j1 (text, stories260K): failed in 12 ms
  load                                     skipped: model already loaded, 0 ms
  encode    ██████████████████████████████    12 ms  ← failed here
verdict: failed in encode after 12 ms: prompt has 5000 tokens but the context holds 4096
  numbers: ctx=4096 tokens=5000
  hint: try --ctx 8192
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := explained(t, tt.fn); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestExplainCancelledAndInternal(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)}
	m := NewManager(Options{Now: clk.now, Logger: slog.New(slog.DiscardHandler)})
	reached := make(chan struct{})
	j := m.Submit(context.Background(), Params{ID: "jc"}, func(ctx context.Context) (any, error) {
		tr := TraceFrom(ctx)
		tr.OnStageStart(StagePrefill)
		tr.OnProgress(StagePrefill, 512, 4096)
		clk.add(1500 * time.Millisecond)
		close(reached)
		<-ctx.Done()
		clk.add(3 * time.Millisecond) // the stop takes one chunk
		return nil, ctx.Err()
	})
	<-reached
	j.Cancel("cancelled by client")
	j.Wait(context.Background())
	var b strings.Builder
	j.Explain(&b)
	for _, want := range []string{
		"job jc: cancelled in 1.50 s",
		"prefill   ██████████████████████████████   1.50 s  512 tokens, 341 tokens/s  ← stopped here",
		"verdict: cancelled in prefill after 1.50 s: context canceled: cancelled by client, stopped in 3ms",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("explanation lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "numbers:") {
		t.Errorf("a cancellation lists numbers:\n%s", b.String())
	}

	j = m.Submit(context.Background(), Params{ID: "jp"}, func(ctx context.Context) (any, error) {
		TraceFrom(ctx).OnStageStart(StageDecode)
		var s []int
		_ = s[3]
		return nil, nil
	})
	j.Wait(context.Background())
	b.Reset()
	j.Explain(&b)
	for _, want := range []string{
		"verdict: failed in decode after 0.00 ms: internal error: panic: runtime error: index out of range [3] with length 0",
		"hint: this is a bug in glassbox; the log has the stack trace",
		"this is a bug in glassbox: please report it with this job's events (glassbox events jp --json)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("explanation lacks %q:\n%s", want, b.String())
		}
	}
}

// TestExplainParts checks that a stage's parts (components loaded,
// sampling steps) are listed under it, with their numbers.
func TestExplainParts(t *testing.T) {
	got := explained(t, func(ctx context.Context, clk *clock) (any, error) {
		tr := TraceFrom(ctx)
		tr.OnStageStart(StageLoad)
		clk.add(300 * time.Millisecond)
		tr.OnPartDone(StageLoad, "UNet", 300*time.Millisecond, StageStats{Bytes: 1 << 30, Note: "F16"})
		tr.OnStageDone(StageLoad, StageStats{Bytes: 1 << 30})
		tr.OnStageStart(StageGenerate)
		clk.add(2 * time.Second)
		tr.OnPartDone(StageGenerate, "step 1/1", 2*time.Second, StageStats{})
		tr.OnStageDone(StageGenerate, StageStats{Items: 1, Unit: "steps"})
		return "ok", nil
	})
	for _, want := range []string{
		"\n    UNet                                     300 ms  1.0 GiB · F16\n",
		"\n    step 1/1                                 2.00 s\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explain lacks %q:\n%s", want, got)
		}
	}
}
