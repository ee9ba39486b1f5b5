package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// textStages are the stages a fake text engine walks through: all of them.
var textStages = Stages

// fakeEngine walks the stages like a text engine: the load is skipped
// (model resident), generate emits two tokens, decode is skipped.
// failAt makes the stage fail, panicAt panic, blockAt wait for
// cancellation (closing reached first); with a clock, the blocked stage
// takes stopTakes of that clock to stop once cancelled.
type fakeEngine struct {
	failAt, panicAt, blockAt Stage
	reached                  chan struct{}
	clk                      *clock
	stopTakes                time.Duration
}

func (e *fakeEngine) run(ctx context.Context) (any, error) {
	tr := TraceFrom(ctx)
	for _, s := range textStages {
		targeted := e.failAt == s || e.panicAt == s || e.blockAt == s
		if s == StageLoad && !targeted {
			tr.OnStageSkipped(s, "model already loaded, 0 ms")
			continue
		}
		if s == StageDecode && !targeted {
			tr.OnStageSkipped(s, "text is decoded while generating")
			continue
		}
		tr.OnStageStart(s)
		if s == StageQueued {
			tr.OnProgress(s, 0, 1) // next in a queue of one
		}
		switch s {
		case e.failAt:
			return nil, Errorf(s, "try --ctx 8192", "prompt has %d tokens but the context holds %d", 5000, 4096).
				With("tokens", 5000).With("ctx", 4096)
		case e.panicAt:
			var m map[string]int
			m["boom"]++ // a real nil-map panic
		case e.blockAt:
			close(e.reached)
			<-ctx.Done()
			if e.clk != nil {
				e.clk.add(e.stopTakes)
			}
			return nil, fmt.Errorf("%s interrupted: %w", s, ctx.Err())
		}
		switch s {
		case StagePrefill:
			tr.OnProgress(s, 3, 3)
		case StageGenerate:
			tr.OnToken(1, "Once")
			tr.OnToken(2, " upon")
			tr.OnWarning("ctx_nearly_full", "context is 90% full")
		}
		tr.OnStageDone(s, StageStats{Items: 2, Unit: "tokens"})
	}
	return map[string]string{"text": "Once upon"}, nil
}

func sig(evs []api.Event) string {
	var b []string
	for _, ev := range evs {
		s := ev.Type
		switch ev.Type {
		case api.TypeState:
			s += ":" + ev.State
		case api.TypeResult:
		default:
			s += ":" + ev.Stage
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

// recorder is a Sink that keeps everything, checking order.
type recorder struct {
	mu     sync.Mutex
	jobs   []api.Job
	events []api.Event
}

func (r *recorder) JobUpdated(j api.Job) { r.mu.Lock(); r.jobs = append(r.jobs, j); r.mu.Unlock() }
func (r *recorder) EventAppended(ev api.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// head is the sequence up to and including stage s's start.
func head(s Stage) string {
	out := "state:queued state:running"
	for _, t := range textStages {
		if t == s && t == StageQueued {
			return out + " stage_start:queued progress:queued"
		}
		if t == s {
			return out + " stage_start:" + string(t)
		}
		switch t {
		case StageLoad:
			out += " stage_skipped:load"
		case StageDecode:
			out += " stage_skipped:decode"
		case StageQueued:
			out += " stage_start:queued progress:queued stage_done:queued"
		case StagePrefill:
			out += " stage_start:prefill progress:prefill stage_done:prefill"
		case StageGenerate:
			out += " stage_start:generate token:generate token:generate warning:generate stage_done:generate"
		default:
			out += " stage_start:" + string(t) + " stage_done:" + string(t)
		}
	}
	panic("unknown stage " + s)
}

func TestJobDone(t *testing.T) {
	rec := &recorder{}
	m := NewManager(Options{Sinks: []Sink{rec}})
	j := m.Submit(context.Background(), Params{Kind: "text", Model: "stories260K", Params: map[string]any{"prompt": "Once"}}, (&fakeEngine{}).run)
	res, err := j.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.(map[string]string)["text"] != "Once upon" {
		t.Errorf("result = %v", res)
	}
	want := head(StageDeliver) + " stage_done:deliver result state:done"
	evs := j.Events(0)
	if got := sig(evs); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) || ev.Job != j.ID() || ev.Time.IsZero() {
			t.Fatalf("event %d: seq %d job %q time %v", i, ev.Seq, ev.Job, ev.Time)
		}
	}
	info := j.Info()
	if info.State != api.StateDone || info.Stage != "deliver" || string(info.Result) != `{"text":"Once upon"}` ||
		string(info.Params) != `{"prompt":"Once"}` || info.LastSeq != int64(len(evs)) {
		t.Errorf("info = %+v", info)
	}
	if sig(rec.events) != want {
		t.Errorf("sink saw %s", sig(rec.events))
	}
	if n := len(rec.jobs); n != 3 || rec.jobs[n-1].State != api.StateDone || rec.jobs[n-1].LastSeq != int64(len(evs)) {
		t.Errorf("sink job updates: %+v", rec.jobs)
	}
}

func TestJobFailsInEachStage(t *testing.T) {
	for _, s := range textStages {
		t.Run(string(s), func(t *testing.T) {
			m := NewManager(Options{})
			j := m.Submit(context.Background(), Params{}, (&fakeEngine{failAt: s}).run)
			_, err := j.Wait(context.Background())
			if got, _ := StageOf(err); got != s {
				t.Fatalf("StageOf(%v) = %q", err, got)
			}
			if want := head(s) + " error:" + string(s) + " state:failed"; sig(j.Events(0)) != want {
				t.Errorf("events:\n got %s\nwant %s", sig(j.Events(0)), want)
			}
			e := j.Info().Error
			if e == nil || e.Stage != string(s) || e.Numbers["tokens"] != 5000 || e.Numbers["ctx"] != 4096 ||
				e.Hint != "try --ctx 8192" || e.Message != string(s)+": prompt has 5000 tokens but the context holds 4096 (try --ctx 8192)" {
				t.Errorf("error = %+v", e)
			}
			if j.Info().State != api.StateFailed {
				t.Errorf("state = %s", j.Info().State)
			}
		})
	}
}

func TestJobPanicsInEachStage(t *testing.T) {
	for _, s := range textStages {
		t.Run(string(s), func(t *testing.T) {
			m := NewManager(Options{Logger: slog.New(slog.DiscardHandler)})
			j := m.Submit(context.Background(), Params{}, (&fakeEngine{panicAt: s}).run)
			_, err := j.Wait(context.Background())
			if !errors.Is(err, ErrInternal) {
				t.Fatalf("err = %v, want ErrInternal", err)
			}
			if want := head(s) + " error:" + string(s) + " state:failed"; sig(j.Events(0)) != want {
				t.Errorf("events:\n got %s\nwant %s", sig(j.Events(0)), want)
			}
			e := j.Info().Error
			if e == nil || e.Stage != string(s) || !e.Internal || !strings.Contains(e.Cause, "assignment to entry in nil map") {
				t.Errorf("error = %+v", e)
			}
		})
	}
}

// TestJobCancelledInEachStage measures the stop on a fake clock that only
// the engine advances (3 ms once it sees the cancel), so the reported stop
// time is exact whatever the machine's speed: a fast machine observes a
// real cancel in under a microsecond.
func TestJobCancelledInEachStage(t *testing.T) {
	for _, s := range textStages {
		t.Run(string(s), func(t *testing.T) {
			clk := &clock{t: time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)}
			m := NewManager(Options{Now: clk.now})
			eng := &fakeEngine{blockAt: s, reached: make(chan struct{}), clk: clk, stopTakes: 3 * time.Millisecond}
			j := m.Submit(context.Background(), Params{}, eng.run)
			<-eng.reached
			j.Cancel("cancelled by client")
			_, err := j.Wait(context.Background())
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
			want := head(s) + " error:" + string(s) + " state:cancelled"
			evs := j.Events(0)
			if sig(evs) != want {
				t.Errorf("events:\n got %s\nwant %s", sig(evs), want)
			}
			last := evs[len(evs)-1]
			if last.Reason != "cancelled by client" || last.StopMS != 3 {
				t.Errorf("terminal event = %+v, want a stop of 3 ms", last)
			}
			e := j.Info().Error
			if e == nil || e.Stage != string(s) || e.Cause != "context canceled: cancelled by client, stopped in 3ms" {
				t.Errorf("error = %+v", e)
			}
			if q := evs[3]; q.Progress == nil || q.Progress.Done != 0 || q.Progress.Total != 1 || q.Progress.Unit != "position" {
				t.Errorf("queue progress = %+v", q.Progress)
			}
		})
	}
}

func TestParentContextCancels(t *testing.T) {
	m := NewManager(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	eng := &fakeEngine{blockAt: StagePrefill, reached: make(chan struct{})}
	j := m.Submit(ctx, Params{}, eng.run)
	<-eng.reached
	cancel()
	if _, err := j.Wait(context.Background()); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if st := j.Info().State; st != api.StateCancelled {
		t.Errorf("state = %s", st)
	}
}

// expiring is a context whose deadline passes when done is closed.
type expiring struct {
	context.Context
	done chan struct{}
}

func (c *expiring) Done() <-chan struct{} { return c.done }

func (c *expiring) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestDeadlineFails(t *testing.T) {
	m := NewManager(Options{})
	// The deadline passes once the job is generating, whatever the
	// machine's speed (a real timer could fire while it is still queued).
	ctx := &expiring{Context: context.Background(), done: make(chan struct{})}
	eng := &fakeEngine{blockAt: StageGenerate, reached: make(chan struct{})}
	j := m.Submit(ctx, Params{}, eng.run)
	<-eng.reached
	close(ctx.done)
	_, err := j.Wait(context.Background())
	if s, _ := StageOf(err); s != StageGenerate || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v (stage %q)", err, s)
	}
	if st := j.Info().State; st != api.StateFailed {
		t.Errorf("state = %s", st)
	}
}

func TestSubscribeReplayAndLive(t *testing.T) {
	m := NewManager(Options{})
	eng := &fakeEngine{blockAt: StageGenerate, reached: make(chan struct{})}
	j := m.Submit(context.Background(), Params{}, eng.run)
	<-eng.reached
	// A subscriber that never reads must not block the job.
	_, never := j.Subscribe(1)
	defer never()
	all, stopAll := j.Subscribe(0)
	defer stopAll()
	late, stopLate := j.Subscribe(5)
	defer stopLate()
	j.Cancel("test")
	j.Wait(context.Background())
	var got []api.Event
	for ev := range all {
		got = append(got, ev)
	}
	if sig(got) != sig(j.Events(0)) {
		t.Errorf("subscriber saw %s\nlog is %s", sig(got), sig(j.Events(0)))
	}
	var fromFive []api.Event
	for ev := range late {
		fromFive = append(fromFive, ev)
	}
	if len(fromFive) != len(got)-4 || fromFive[0].Seq != 5 {
		t.Errorf("from seq 5: %d events, first %d", len(fromFive), fromFive[0].Seq)
	}
	// Subscribing after the end replays and closes.
	after, stop := j.Subscribe(int64(len(got)))
	defer stop()
	n := 0
	for range after {
		n++
	}
	if n != 1 {
		t.Errorf("replay of the last event gave %d events", n)
	}
}

func TestUnmarshalableResultFailsInDeliver(t *testing.T) {
	m := NewManager(Options{})
	j := m.Submit(context.Background(), Params{}, func(ctx context.Context) (any, error) {
		TraceFrom(ctx).OnStageStart(StageDeliver)
		return func() {}, nil
	})
	_, err := j.Wait(context.Background())
	if s, _ := StageOf(err); s != StageDeliver {
		t.Fatalf("err = %v", err)
	}
}

func TestShutdownAndRetire(t *testing.T) {
	m := NewManager(Options{KeepEnded: 2})
	var jobs []*Job
	for i := 0; i < 4; i++ {
		eng := &fakeEngine{blockAt: StagePrefill, reached: make(chan struct{})}
		jobs = append(jobs, m.Submit(context.Background(), Params{}, eng.run))
		<-eng.reached
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if e := j.Info().Error; j.Info().State != api.StateCancelled || !strings.Contains(e.Cause, "shutting down") {
			t.Errorf("job %s: %+v", j.ID(), j.Info())
		}
	}
	if n := len(m.Jobs()); n != 2 {
		t.Errorf("%d jobs kept in memory, want 2", n)
	}
}

func TestNewIDSorts(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	a, b := newID(t0.UnixMilli()), newID(t0.Add(time.Millisecond).UnixMilli())
	if !(a < b) || len(a) != len(b) || len(a) != 15 {
		t.Errorf("ids %q, %q", a, b)
	}
	// Jobs submitted within one millisecond (a clock that stands still)
	// still get ids in submission order.
	clk := &clock{t: t0}
	m := NewManager(Options{Now: clk.now})
	prev := ""
	for i := range 50 {
		j := m.Submit(context.Background(), Params{}, (&fakeEngine{}).run)
		j.Wait(context.Background())
		if id := j.ID(); id <= prev || len(id) != 15 {
			t.Fatalf("job %d: id %q after %q", i, id, prev)
		}
		prev = j.ID()
	}
}

func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	m := NewManager(Options{})
	for range 20 {
		eng := &fakeEngine{blockAt: StageGenerate, reached: make(chan struct{})}
		j := m.Submit(context.Background(), Params{}, eng.run)
		ch, stop := j.Subscribe(0)
		_, stop2 := j.Subscribe(3) // never read, cancelled below
		<-eng.reached
		j.Cancel("test")
		for range ch {
		}
		stop()
		stop2()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the jobs ended, %d before", n, before)
	}
}

func TestEndedJobReleasesItsContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := NewManager(Options{})
	j := m.Submit(parent, Params{}, (&fakeEngine{}).run)
	j.Wait(context.Background())
	if !errors.Is(context.Cause(j.ctx), errEnded) {
		t.Errorf("job context after the end: %v", context.Cause(j.ctx))
	}
	j.Cancel("late") // must do nothing
	if st := j.Info().State; st != api.StateDone {
		t.Errorf("state after a late cancel = %s", st)
	}
}

type panicSink struct{}

func (panicSink) JobUpdated(api.Job)      { panic("sink bug") }
func (panicSink) EventAppended(api.Event) { panic("sink bug") }

func TestPanickingSinkDoesNotStopTheJob(t *testing.T) {
	rec := &recorder{}
	m := NewManager(Options{Sinks: []Sink{panicSink{}, rec}, Logger: slog.New(slog.DiscardHandler)})
	j := m.Submit(context.Background(), Params{}, (&fakeEngine{}).run)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rec.events) != len(j.Events(0)) {
		t.Errorf("the healthy sink saw %d of %d events", len(rec.events), len(j.Events(0)))
	}
}

func TestCancelledWhateverTheWorkReturns(t *testing.T) {
	m := NewManager(Options{})
	reached := make(chan struct{})
	j := m.Submit(context.Background(), Params{}, func(ctx context.Context) (any, error) {
		TraceFrom(ctx).OnStageStart(StagePrefill)
		close(reached)
		<-ctx.Done()
		return nil, errors.New("prefill interrupted at chunk 3 of 8") // does not wrap ctx.Err()
	})
	<-reached
	j.Cancel("cancelled by client")
	j.Wait(context.Background())
	if info := j.Info(); info.State != api.StateCancelled || info.Error.Stage != "prefill" {
		t.Errorf("state %s, error %+v", info.State, info.Error)
	}
}

func TestFailureSeenByACallerThatThenLeaves(t *testing.T) {
	// A server hands the error to its client, which leaves (cancelling the
	// request context) before the job has recorded its end: still failed.
	parent, leave := context.WithCancel(context.Background())
	m := NewManager(Options{})
	j := m.Submit(parent, Params{}, func(ctx context.Context) (any, error) {
		TraceFrom(ctx).OnStageStart(StageEncode)
		leave()
		<-ctx.Done()
		return nil, Errorf(StagePrefill, "try --ctx 65", "prompt has 5 tokens but the context holds 4")
	})
	j.Wait(context.Background())
	if info := j.Info(); info.State != api.StateFailed || info.Error.Stage != "prefill" {
		t.Errorf("state %s, error %+v", info.State, info.Error)
	}
}
