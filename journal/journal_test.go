package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
)

var _ pipeline.Sink = (*Journal)(nil)

var quiet = slog.New(slog.DiscardHandler)

func openTemp(t *testing.T, o Options) (*Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	o.Logger = quiet
	j, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return j, path
}

// work is a small text job: it fails in stage failAt when set, waits for
// cancellation in blockAt when set.
func work(failAt, blockAt pipeline.Stage, reached chan<- struct{}) pipeline.Func {
	return func(ctx context.Context) (any, error) {
		tr := pipeline.TraceFrom(ctx)
		tr.OnStageSkipped(pipeline.StageLoad, "model already loaded, 0 ms")
		for _, s := range []pipeline.Stage{pipeline.StageEncode, pipeline.StagePrefill, pipeline.StageGenerate} {
			tr.OnStageStart(s)
			if s == failAt {
				return nil, pipeline.Errorf(s, "try --ctx 8192", "prompt has 5000 tokens but the context holds 4096").
					With("tokens", 5000).With("ctx", 4096)
			}
			if s == blockAt {
				close(reached)
				<-ctx.Done()
				return nil, ctx.Err()
			}
			if s == pipeline.StageGenerate {
				for i := range 5 {
					tr.OnToken(i, fmt.Sprint(" t", i))
				}
			}
			tr.OnStageDone(s, pipeline.StageStats{Items: 5, Unit: "tokens"})
		}
		return map[string]string{"text": " t0 t1 t2 t3 t4"}, nil
	}
}

func TestRoundTrip(t *testing.T) {
	jr, path := openTemp(t, Options{})
	m := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr}})
	done := m.Submit(context.Background(), pipeline.Params{Kind: "text", Model: "stories260K", Params: map[string]int{"n": 5}}, work("", "", nil))
	failed := m.Submit(context.Background(), pipeline.Params{Kind: "text"}, work(pipeline.StagePrefill, "", nil))
	reached := make(chan struct{})
	cancelled := m.Submit(context.Background(), pipeline.Params{Kind: "text"}, work("", pipeline.StageGenerate, reached))
	<-reached
	cancelled.Cancel("cancelled by client")
	for _, job := range []*pipeline.Job{done, failed, cancelled} {
		job.Wait(context.Background())
	}
	if err := jr.Flush(); err != nil {
		t.Fatal(err)
	}
	// Read back through a second, read-only handle, as the CLI does.
	ro, err := Open(path, Options{ReadOnly: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, job := range []*pipeline.Job{done, failed, cancelled} {
		mem := job.Info()
		got, err := ro.Job(job.ID())
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(mem)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Errorf("job %s:\nmemory  %s\njournal %s", job.ID(), a, b)
		}
		evs, err := ro.Events(job.ID(), 0)
		if err != nil {
			t.Fatal(err)
		}
		a, _ = json.Marshal(job.Events(0))
		b, _ = json.Marshal(evs)
		if string(a) != string(b) {
			t.Errorf("events of %s:\nmemory  %s\njournal %s", job.ID(), a, b)
		}
		tail, err := ro.Events(job.ID(), 4)
		if err != nil || len(tail) != len(evs)-3 || tail[0].Seq != 4 {
			t.Errorf("events from seq 4: %d events (of %d), err %v", len(tail), len(evs), err)
		}
	}
	if got, _ := ro.Job(failed.ID()); got.Error == nil || got.Error.Numbers["tokens"] != 5000 || got.Stage != "prefill" {
		t.Errorf("failed job = %+v", got)
	}
	list, err := ro.Jobs(2)
	if err != nil || len(list) != 2 || list[0].ID != cancelled.ID() || list[1].ID != failed.ID() {
		t.Errorf("Jobs(2) = %v, %v", list, err)
	}
	if _, err := ro.Job("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if got, err := ro.Job(done.ID()[:len(done.ID())-3]); err != nil && !errors.Is(err, ErrAmbiguous) || err == nil && got.ID != done.ID() {
		t.Errorf("prefix lookup: %v %v", got.ID, err)
	}
	var mode string
	if err := jr.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	if err := jr.Close(); err != nil {
		t.Fatal(err)
	}
	if jr.Close() == nil {
		t.Error("second Close succeeded")
	}
}

// TestRetention keeps the newest jobs. The clock stands still, so every job
// has the same creation time and the ids (which a Manager makes in
// submission order) decide which are newest, as they do for jobs made
// within one tick of a coarse clock.
func TestRetention(t *testing.T) {
	jr, path := openTemp(t, Options{Retention: 3})
	t0 := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	m := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr}, Now: func() time.Time { return t0 }})
	var ids []string
	for range 5 {
		job := m.Submit(context.Background(), pipeline.Params{}, work("", "", nil))
		job.Wait(context.Background())
		ids = append(ids, job.ID())
	}
	jr.Close()
	jr, err := Open(path, Options{Retention: 3, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	list, _ := jr.Jobs(0)
	if len(list) != 3 || list[0].ID != ids[4] || list[2].ID != ids[2] {
		t.Fatalf("kept %d jobs: %v", len(list), list)
	}
	if evs, _ := jr.Events(ids[0], 0); len(evs) != 0 {
		t.Errorf("the trimmed job kept %d events", len(evs))
	}
}

func TestReadOnlyMissing(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "none.db"), Options{ReadOnly: true})
	if !errors.Is(err, ErrNoJournal) {
		t.Fatalf("err = %v", err)
	}
}

func TestRecoverOwnStaleJobs(t *testing.T) {
	// A job row left "running" by a process whose pid we now have (or
	// that is gone) is recovered on open.
	jr, path := openTemp(t, Options{})
	created := time.Now().UTC().Add(-time.Second)
	jr.JobUpdated(api.Job{ID: "jstale", Created: created, State: api.StateRunning, Stage: "load", LastSeq: 3})
	for i, typ := range []string{api.TypeState, api.TypeState, api.TypeStageStart} {
		jr.EventAppended(api.Event{Seq: int64(i + 1), Time: created.Add(time.Duration(i) * time.Millisecond), Job: "jstale", Type: typ, Stage: "load"})
	}
	jr.Close()
	jr, err := Open(path, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	if r := jr.Recovered(); len(r) != 1 || r[0] != "jstale" {
		t.Fatalf("Recovered = %v", r)
	}
	job, _ := jr.Job("jstale")
	if job.State != api.StateFailed || job.Error == nil || job.Error.Stage != "load" || job.Error.Cause != Interrupted || job.LastSeq != 5 {
		t.Errorf("job = %+v, error %+v", job, job.Error)
	}
	evs, _ := jr.Events("jstale", 4)
	if len(evs) != 2 || evs[0].Type != api.TypeError || evs[1].State != api.StateFailed || evs[1].DurationMS != 2 {
		t.Errorf("recovery events = %+v", evs)
	}
}

func TestHistoryPaging(t *testing.T) {
	jr, _ := openTemp(t, Options{})
	defer jr.Close()
	m := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr}})
	var ids []string
	for range 5 {
		job := m.Submit(context.Background(), pipeline.Params{}, work("", "", nil))
		job.Wait(context.Background())
		ids = append(ids, job.ID())
	}
	jr.Flush()
	h := History{J: jr}
	ctx := context.Background()
	page1, err := h.Jobs(ctx, "", 2)
	if err != nil || len(page1) != 2 || page1[0].ID != ids[4] || page1[1].ID != ids[3] {
		t.Fatalf("page 1: %v %v", page1, err)
	}
	page2, err := h.Jobs(ctx, page1[1].ID, 2)
	if err != nil || len(page2) != 2 || page2[0].ID != ids[2] || page2[1].ID != ids[1] {
		t.Fatalf("page 2: %v %v", page2, err)
	}
	page3, _ := h.Jobs(ctx, page2[1].ID, 2)
	if len(page3) != 1 || page3[0].ID != ids[0] {
		t.Fatalf("page 3: %v", page3)
	}
	evs, err := h.Events(ctx, ids[0], 3)
	if err != nil || len(evs) == 0 || evs[0].Seq != 4 {
		t.Fatalf("events after 3: %v %v", evs, err)
	}
	if _, err := h.Events(ctx, "nope", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}
}

func TestSchemaVersion(t *testing.T) {
	jr, path := openTemp(t, Options{})
	if _, err := jr.db.Exec(`PRAGMA user_version = 7`); err != nil {
		t.Fatal(err)
	}
	jr.Close()
	for _, ro := range []bool{false, true} {
		if _, err := Open(path, Options{ReadOnly: ro, Logger: quiet}); !errors.Is(err, ErrVersion) {
			t.Errorf("read-only %v: err = %v, want ErrVersion", ro, err)
		}
	}
}

func TestRetentionWhileWriting(t *testing.T) {
	jr, _ := openTemp(t, Options{Retention: 5, FlushInterval: time.Millisecond})
	defer jr.Close()
	m := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr}})
	for range trimEvery + 10 {
		m.Submit(context.Background(), pipeline.Params{}, work("", "", nil)).Wait(context.Background())
	}
	jr.Flush()
	jr.Flush() // the pass runs after the batch that crossed the threshold
	list, err := jr.Jobs(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > 5+trimEvery-1 || len(list) < 5 {
		t.Errorf("%d jobs kept with retention 5 (trimmed every %d ended jobs)", len(list), trimEvery)
	}
	var orphans int
	if err := jr.db.QueryRow(`SELECT count(*) FROM events WHERE job NOT IN (SELECT id FROM jobs)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("%d event chunks of deleted jobs remain (%v)", orphans, err)
	}
}

func TestReadWhileWriting(t *testing.T) {
	jr, path := openTemp(t, Options{FlushInterval: 2 * time.Millisecond})
	defer jr.Close()
	m := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr}})
	gen := func(ctx context.Context) (any, error) {
		tr := pipeline.TraceFrom(ctx)
		tr.OnStageStart(pipeline.StageGenerate)
		for i := range 300 {
			tr.OnToken(i, "x")
			if i%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		return nil, nil
	}
	var jobs []*pipeline.Job
	for range 4 {
		jobs = append(jobs, m.Submit(context.Background(), pipeline.Params{}, gen))
	}
	ro, err := Open(path, Options{ReadOnly: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, j := range jobs {
		for ended := false; !ended; {
			ended = api.Terminal(j.Info().State)
			evs, err := ro.Events(j.ID(), 0)
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
			for i, ev := range evs {
				if ev.Seq != int64(i+1) {
					t.Fatalf("job %s: a reader saw seq %d at position %d", j.ID(), ev.Seq, i)
				}
			}
		}
	}
	jr.Flush()
	for _, j := range jobs {
		if evs, _ := ro.Events(j.ID(), 0); len(evs) != len(j.Events(0)) {
			t.Errorf("job %s: %d events in the journal, %d in memory", j.ID(), len(evs), len(j.Events(0)))
		}
	}
}
