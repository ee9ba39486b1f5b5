package metrics

import (
	"context"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/pipeline"
)

var _ pipeline.Sink = (*Metrics)(nil)

// clock is a time source that moves only when the test says.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestMetricsFromJobs runs jobs on a fake clock (each stage takes 5 ms of
// it), so every speed observed is finite and the same on any machine, and
// waits on the job's own signals rather than for time to pass.
func TestMetricsFromJobs(t *testing.T) {
	m := New()
	clk := &clock{t: time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)}
	mgr := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{m}, Now: clk.now})
	gen := func(ctx context.Context) (any, error) {
		tr := pipeline.TraceFrom(ctx)
		tr.OnStageStart(pipeline.StagePrefill)
		clk.add(5 * time.Millisecond)
		tr.OnStageDone(pipeline.StagePrefill, pipeline.StageStats{Items: 10, Cached: 30, Unit: "tokens"})
		tr.OnStageStart(pipeline.StageGenerate)
		clk.add(5 * time.Millisecond)
		tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{Items: 20, Unit: "tokens"})
		return nil, nil
	}
	mgr.Submit(context.Background(), pipeline.Params{}, gen).Wait(context.Background())
	mgr.Submit(context.Background(), pipeline.Params{}, func(ctx context.Context) (any, error) {
		pipeline.TraceFrom(ctx).OnStageStart(pipeline.StageEncode)
		return nil, pipeline.Errorf(pipeline.StageEncode, "", "bad prompt")
	}).Wait(context.Background())

	// A job waiting in the queue counts in queue_depth, not jobs_running.
	inQueue, release, running := make(chan struct{}), make(chan struct{}), make(chan struct{})
	waiting := mgr.Submit(context.Background(), pipeline.Params{}, func(ctx context.Context) (any, error) {
		tr := pipeline.TraceFrom(ctx)
		tr.OnStageStart(pipeline.StageQueued)
		close(inQueue)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		tr.OnStageDone(pipeline.StageQueued, pipeline.StageStats{}) // the sinks have seen it when this returns
		close(running)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	<-inQueue
	if q, r := val(t, m, "glassbox_queue_depth"), val(t, m, "glassbox_jobs_running"); q != 1 || r != 0 {
		t.Errorf("while queued: queue_depth %v, jobs_running %v", q, r)
	}
	close(release)
	<-running
	if q, r := val(t, m, "glassbox_queue_depth"), val(t, m, "glassbox_jobs_running"); q != 0 || r != 1 {
		t.Errorf("while running: queue_depth %v, jobs_running %v", q, r)
	}
	waiting.Cancel("test")
	waiting.Wait(context.Background())

	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"tokens generate", val(t, m, `glassbox_tokens_total{stage="generate"}`), 20},
		{"tokens prefill", val(t, m, `glassbox_tokens_total{stage="prefill"}`), 10},
		{"tokens cached", val(t, m, `glassbox_tokens_cached_total{stage="prefill"}`), 30},
		{"prefill speed (10 tokens in 5 ms)", val(t, m, `glassbox_tokens_per_second_sum{stage="prefill"}`), 2000},
		{"generate speed (20 tokens, 19 decode passes, in 5 ms)", val(t, m, `glassbox_tokens_per_second_sum{stage="generate"}`), 3800},
		{"jobs done", val(t, m, `glassbox_jobs_total{state="done"}`), 1},
		{"jobs failed", val(t, m, `glassbox_jobs_total{state="failed"}`), 1},
		{"jobs cancelled", val(t, m, `glassbox_jobs_total{state="cancelled"}`), 1},
		{"errors encode", val(t, m, `glassbox_errors_total{stage="encode"}`), 1},
		{"errors queued (a cancel is no error)", val(t, m, `glassbox_errors_total{stage="queued"}`), 0},
		{"queue depth", val(t, m, "glassbox_queue_depth"), 0},
		{"running", val(t, m, "glassbox_jobs_running"), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := val(t, m, `glassbox_stage_duration_seconds_count{stage="queued"}`); n != 1 {
		t.Errorf("queued stage observations = %v, want 1", n)
	}

	m.SetModelResident("stories260K", 1<<20)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`glassbox_stage_duration_seconds_count{stage="generate"} 1`,
		`glassbox_tokens_per_second_count{stage="prefill"} 1`,
		`glassbox_model_resident_bytes{model="stories260K"} 1.048576e+06`,
		`glassbox_queue_depth 0`,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// val scrapes m and returns the value of one series (0 when absent).
func val(t *testing.T, m *Metrics, series string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

func TestWatchJournal(t *testing.T) {
	m := New()
	st := JournalStats{Events: 10, Batches: 2, Errors: 1, Busy: 1500 * time.Millisecond}
	m.WatchJournal(func() JournalStats { return st })
	for series, want := range map[string]float64{
		"glassbox_journal_events_written_total": 10,
		"glassbox_journal_batches_total":        2,
		"glassbox_journal_write_errors_total":   1,
		"glassbox_journal_write_seconds_total":  1.5,
	} {
		if got := val(t, m, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	st.Events = 11
	if got := val(t, m, "glassbox_journal_events_written_total"); got != 11 {
		t.Errorf("not read at scrape time: %v", got)
	}
}
