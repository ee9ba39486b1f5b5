package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/compute/roofline"
	"github.com/glassbox-ai/glassbox/journal"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// journalHome makes a glassbox home whose journal holds a finished job and
// a job that failed in encode, and returns the home and the two ids. The
// jobs run on a clock that moves only as the work says (the load takes
// 30 ms of it, the second job starts 2 ms after the first ends).
func journalHome(t *testing.T) (dir, done, failed string) {
	t.Helper()
	dir = t.TempDir()
	jr, err := journal.Open(filepath.Join(dir, journal.FileName), journal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	clock := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	m := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr}, Now: now})
	j1 := m.Submit(context.Background(), pipeline.Params{Kind: "text", Model: "stories260K"}, func(ctx context.Context) (any, error) {
		tr := pipeline.TraceFrom(ctx)
		tr.OnStageStart(pipeline.StageLoad)
		advance(30 * time.Millisecond)
		tr.OnStageDone(pipeline.StageLoad, pipeline.StageStats{Bytes: 1 << 20})
		tr.OnStageStart(pipeline.StageGenerate)
		tr.OnToken(9038, "Once")
		tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{Items: 1, Unit: "tokens"})
		return map[string]string{"text": "Once"}, nil
	})
	j1.Wait(context.Background())
	advance(2 * time.Millisecond)
	j2 := m.Submit(context.Background(), pipeline.Params{Kind: "text", Model: "stories260K"}, func(ctx context.Context) (any, error) {
		pipeline.TraceFrom(ctx).OnStageStart(pipeline.StageEncode)
		return nil, pipeline.Errorf(pipeline.StageEncode, "try --ctx 8192", "prompt has 5000 tokens but the context holds 4096").
			With("tokens", 5000).With("ctx", 4096)
	})
	j2.Wait(context.Background())
	if err := jr.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, j1.ID(), j2.ID()
}

func jobsCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(context.Background(), &cmdEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, args)
	return out.String(), errb.String(), code
}

func TestJobsEventsExplain(t *testing.T) {
	dir, done, failed := journalHome(t)
	tests := []struct {
		name string
		args []string
		code int
		want []string // substrings of stdout, in order
	}{
		{"jobs", []string{"jobs", "--home", dir}, 0, []string{"ID", "STATE", failed, "failed", "encode", done, "done", "generate"}},
		{"events", []string{"events", done, "--home", dir}, 0, []string{"1  ", "state", "queued", "stage_start", "load", `9038 "Once"`, "result", `{"text":"Once"}`, "state", "done after"}},
		{"events from", []string{"events", failed, "--from", "4", "--home", dir}, 0, []string{"    4  ", "error", "encode: prompt has 5000 tokens"}},
		{"explain done", []string{"explain", done, "--home", dir}, 0, []string{"job " + done + " (text, stories260K): done in 30 ms", "load", "30 ms  1.0 MiB read (33.3 MiB/s)", "verdict: 30 ms of 30 ms was loading"}},
		{"explain failed", []string{"explain", "--home", dir}, 0, []string{"failed in", "encode", "← failed here",
			"verdict: failed in encode after", "prompt has 5000 tokens but the context holds 4096", "numbers: ctx=4096 tokens=5000", "hint: try --ctx 8192"}},
		{"unknown job", []string{"explain", "nope", "--home", dir}, 1, nil},
		{"no journal", []string{"jobs", "--home", t.TempDir()}, 1, nil},
		{"events needs a job", []string{"events", "--home", dir}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := jobsCmd(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, errOut)
			}
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestEventsJSON(t *testing.T) {
	dir, done, _ := journalHome(t)
	out, errOut, code := jobsCmd(t, "events", done, "--json", "--home", dir)
	if code != 0 {
		t.Fatal(errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last api.Event
	for i, l := range lines {
		var ev api.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if ev.Seq != int64(i+1) || ev.Job != done {
			t.Fatalf("line %d: seq %d job %s", i, ev.Seq, ev.Job)
		}
		last = ev
	}
	if last.Type != api.TypeState || last.State != api.StateDone {
		t.Errorf("last event %+v", last)
	}
	out, _, _ = jobsCmd(t, "jobs", "--json", "--home", dir)
	var jobs []api.Job
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || len(jobs) != 2 || jobs[1].ID != done {
		t.Errorf("jobs --json: %v %v", jobs, err)
	}
}

func TestEventsFollow(t *testing.T) {
	dir := t.TempDir()
	jr, err := journal.Open(filepath.Join(dir, journal.FileName), journal.Options{Logger: slog.New(slog.DiscardHandler), FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	m := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr}})
	release := make(chan struct{})
	j := m.Submit(context.Background(), pipeline.Params{}, func(ctx context.Context) (any, error) {
		pipeline.TraceFrom(ctx).OnStageStart(pipeline.StageGenerate)
		<-release
		pipeline.TraceFrom(ctx).OnToken(1, "late")
		return nil, nil
	})
	jr.Flush()
	old := followPoll
	followPoll = 10 * time.Millisecond
	defer func() { followPoll = old }()
	type result struct {
		out  string
		code int
	}
	res := make(chan result, 1)
	go func() {
		out, _, code := jobsCmd(t, "events", j.ID(), "--follow", "--home", dir)
		res <- result{out, code}
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	select {
	case r := <-res:
		if r.code != 0 || !strings.Contains(r.out, `"late"`) || !strings.Contains(r.out, "done") {
			t.Errorf("follow output (exit %d):\n%s", r.code, r.out)
		}
	case <-time.After(time.Minute):
		t.Fatal("events --follow did not return after the job ended")
	}
}

func TestRunJournaled(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GLASSBOX_HOME", dir)
	var live []string
	ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{Token: func(tok api.Token) { live = append(live, tok.Text) }})
	var out, errb bytes.Buffer
	env := &cmdEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	job, err := runJournaled(ctx, env, pipeline.Params{Kind: "text", Model: "m"}, func(ctx context.Context) (any, error) {
		tr := pipeline.TraceFrom(ctx)
		tr.OnStageStart(pipeline.StageGenerate)
		tr.OnToken(1, "hi")
		return nil, pipeline.Errorf(pipeline.StageGenerate, "", "out of memory")
	})
	if s, _ := pipeline.StageOf(err); s != pipeline.StageGenerate {
		t.Fatalf("err = %v", err)
	}
	if len(live) != 1 || live[0] != "hi" {
		t.Errorf("the caller's trace saw %v", live)
	}
	got, _, code := jobsCmd(t, "explain", job.ID(), "--home", dir)
	if code != 0 || !strings.Contains(got, "verdict: failed in generate") || errb.Len() != 0 {
		t.Errorf("explain (exit %d):\n%s\nstderr: %s", code, got, errb.String())
	}
}

func TestAddRoofline(t *testing.T) {
	evs := []api.Event{
		{Type: api.TypeStageDone, Stage: "prefill", Stats: &api.StageStats{Items: 5, Bytes: 5 << 20}},
		{Type: api.TypeStageDone, Stage: "generate", Stats: &api.StageStats{Items: 100, Bytes: 100 << 20, Placement: "cpu:2 threads"}},
		{Type: api.TypeStageDone, Stage: "generate", Stats: &api.StageStats{Items: 100, Roofline: 7, Bytes: 1}},
	}
	var asked int
	addRoofline(evs, func(threads int) (roofline.Result, error) {
		asked = threads
		return roofline.Result{Threads: 2, ReadGBs1: 5, ReadGBsN: 3.145728}, nil
	})
	if asked != 2 {
		t.Errorf("asked the cache for %d threads, want 2", asked)
	}
	if evs[0].Stats.Roofline != 0 {
		t.Error("prefill got a decode roofline")
	}
	// 3.145728 GB/s over 1 MiB per token = 3000 tokens/s.
	if got := evs[1].Stats.Roofline; got < 2999.99 || got > 3000.01 || evs[1].Stats.Limiter != "memory bandwidth (3.1 GB/s measured)" {
		t.Errorf("roofline %v, limiter %q", got, evs[1].Stats.Limiter)
	}
	if evs[2].Stats.Roofline != 7 {
		t.Error("a recorded roofline was replaced")
	}
	evs[1].Stats.Roofline = 0
	addRoofline(evs, func(int) (roofline.Result, error) { return roofline.Result{}, roofline.ErrNotCached })
	if evs[1].Stats.Roofline != 0 {
		t.Error("a roofline appeared without a cached probe")
	}
}

func TestFollowWaitsForANewJob(t *testing.T) {
	dir, _, _ := journalHome(t)
	old := followWait
	followWait = 300 * time.Millisecond
	defer func() { followWait = old }()
	start := time.Now()
	_, errOut, code := jobsCmd(t, "events", "jnotyet", "--follow", "--home", dir)
	if code != 1 || !strings.Contains(errOut, "no such job") || time.Since(start) < 250*time.Millisecond {
		t.Errorf("exit %d after %s: %s", code, time.Since(start), errOut)
	}
}

// TestEventDetailToken: events' text view shows a token's thinking and its
// probability when the event carries them.
func TestEventDetailToken(t *testing.T) {
	for _, tc := range []struct {
		tok  api.Token
		want string
	}{
		{api.Token{ID: 7, Text: "Once"}, `7 "Once"`},
		{api.Token{ID: 8, Thinking: "Hmm"}, `8 "" thinking "Hmm"`},
		{api.Token{ID: 9, Text: " upon", Logprob: &api.Logprob{Logprob: -0.5}}, `9 " upon" p=0.6065`},
	} {
		if got := eventDetail(api.Event{Type: api.TypeToken, Token: &tc.tok}); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.tok, got, tc.want)
		}
	}
}
