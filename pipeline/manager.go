package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// Func is a job's work. It reports its stages through TraceFrom(ctx), must
// return soon after ctx is cancelled, and returns the job's output (any
// JSON-marshalable value) or an error (ideally an *Error).
type Func func(ctx context.Context) (result any, err error)

// Params describe a job for its summary and the journal.
type Params struct {
	ID     string // optional; a time-ordered id is made when empty
	Kind   string // "text", "chat", "image", ...
	Model  string // model name or path
	Params any    // the request, stored as JSON (json.RawMessage is kept as is)
}

// Sink receives every job's summary changes and events, in order, on the
// job's goroutine and under the job's lock. Implementations must not block
// and must not call back into the job: the journal queues the writes for
// its own goroutine, metrics only add numbers.
type Sink interface {
	JobUpdated(j api.Job)
	EventAppended(ev api.Event)
}

// Options configure a Manager. The zero value works.
type Options struct {
	Sinks  []Sink
	Logger *slog.Logger // default slog.Default()
	// KeepEnded is how many ended jobs stay in memory, with their event
	// logs, for late subscribers (the journal keeps them all); default 64.
	KeepEnded int
	Now       func() time.Time // default time.Now; for tests
}

// Manager creates and runs jobs and keeps the live and recently ended
// ones. Its methods are safe for concurrent use.
type Manager struct {
	sinks []Sink
	log   *slog.Logger
	keep  int
	now   func() time.Time

	mu     sync.Mutex
	lastMS int64 // the millisecond in the last id made, which the next exceeds
	jobs   map[string]*Job
	ended  []string // ids of ended jobs, oldest first
	wg     sync.WaitGroup
}

// NewManager returns a manager with the given options.
func NewManager(o Options) *Manager {
	m := &Manager{sinks: o.Sinks, log: o.Logger, keep: o.KeepEnded, now: o.Now, jobs: map[string]*Job{}}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.keep <= 0 {
		m.keep = 64
	}
	if m.now == nil {
		m.now = func() time.Time { return time.Now().UTC() }
	}
	return m
}

// Submit creates a job, records it as queued and runs fn on a new
// goroutine with a context derived from ctx (cancelling ctx cancels the
// job: pass context.Background() for a job that outlives its caller). It
// returns at once.
func (m *Manager) Submit(ctx context.Context, p Params, fn Func) *Job {
	id := p.ID
	if id == "" {
		m.mu.Lock()
		m.lastMS = max(m.now().UnixMilli(), m.lastMS+1)
		id = newID(m.lastMS)
		m.mu.Unlock()
	}
	raw, err := marshalResult(p.Params)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"unmarshalable_params": err.Error()})
	}
	if p.Params == nil {
		raw = nil
	}
	jctx, cancel := context.WithCancelCause(ctx)
	j := &Job{
		m: m, ctx: jctx, cancel: cancel,
		info:    api.Job{ID: id, Kind: p.Kind, Model: p.Model, Created: m.now(), Params: raw},
		changed: make(chan struct{}),
		started: map[Stage]time.Time{},
		done:    make(chan struct{}),
	}
	m.mu.Lock()
	m.jobs[id] = j
	m.wg.Add(1)
	m.mu.Unlock()
	j.setState(api.StateQueued)
	j.stopAfter = context.AfterFunc(jctx, func() {
		j.mu.Lock()
		if j.cancelAt.IsZero() {
			j.cancelAt = m.now()
		}
		j.mu.Unlock()
	})
	go m.run(j, fn)
	return j
}

// Job returns the job with the given id while it is in memory, or nil.
func (m *Manager) Job(id string) *Job {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs[id]
}

// Jobs returns the jobs in memory, oldest first.
func (m *Manager) Jobs() []*Job {
	m.mu.Lock()
	out := make([]*Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		out = append(out, j)
	}
	m.mu.Unlock()
	sort.Slice(out, func(a, b int) bool { return out[a].info.ID < out[b].info.ID })
	return out
}

// Shutdown cancels every running job with reason "shutting down" and waits
// for them to end, or for ctx.
func (m *Manager) Shutdown(ctx context.Context) error {
	for _, j := range m.Jobs() {
		j.Cancel("shutting down")
	}
	waited := make(chan struct{})
	go func() { m.wg.Wait(); close(waited) }()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pipeline: shutdown: jobs still running: %w", ctx.Err())
	}
}

func (m *Manager) run(j *Job, fn Func) {
	defer m.wg.Done()
	defer m.retire(j)
	j.setState(api.StateRunning)
	ctx := WithTrace(j.ctx, j.trace())
	result, err := m.call(ctx, j, fn)
	j.finish(result, err)
}

// call runs fn, turning a panic into the current stage's internal error.
func (m *Manager) call(ctx context.Context, j *Job, fn Func) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			stage := j.Stage()
			if stage == "" {
				stage = StagePlan
			}
			m.log.Error("pipeline: panic in job", "job", j.ID(), "stage", stage, "panic", r, "stack", string(debug.Stack()))
			err = &Error{Stage: stage, Err: fmt.Errorf("%w: panic: %v", ErrInternal, r),
				Hint: "this is a bug in glassbox; the log has the stack trace"}
		}
	}()
	return fn(ctx)
}

// retire drops the oldest ended jobs from memory beyond the limit.
func (m *Manager) retire(j *Job) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended = append(m.ended, j.ID())
	for len(m.ended) > m.keep {
		delete(m.jobs, m.ended[0])
		m.ended = m.ended[1:]
	}
}

// newID returns a job id that sorts by creation time: "j" + milliseconds
// since 1970 in base 36 + 6 random base-36 digits. A Manager gives each of
// its jobs a later millisecond than the one before (a burst of jobs is
// spread over the next milliseconds), so its ids sort in submission order
// even within one millisecond of the clock.
func newID(ms int64) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	r := strconv.FormatUint(binary.LittleEndian.Uint64(b[:])%2176782336, 36) // 36^6
	for len(r) < 6 {
		r = "0" + r
	}
	return "j" + strconv.FormatInt(ms, 36) + r
}

// finish records the job's end: result and done, or error and failed or
// cancelled.
func (j *Job) finish(result any, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	defer close(j.done)
	// Release the job's context (a long-lived parent, such as a server's,
	// would otherwise keep every ended job's context registered).
	defer j.cancel(errEnded)
	defer j.stopAfter()
	stage := j.current
	if stage == "" {
		stage = StagePlan
	}
	if err == nil {
		raw, merr := marshalResult(result)
		if merr == nil {
			j.result = result
			j.info.Result = raw
			j.emitLocked(api.Event{Type: api.TypeResult, Result: raw})
			j.setStateLocked(api.StateDone, api.Event{})
			return
		}
		err = Errorf(StageDeliver, "", "result cannot be encoded as JSON: %w", merr)
	}
	// After a cancellation, an error that is context.Canceled, or a plain
	// error with no stage of its own (an engine that does not wrap
	// ctx.Err()), is the cancellation's doing. A stage-attributed failure
	// is a failure, even if the caller left right after seeing it.
	if cause := context.Cause(j.ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) &&
		(errors.Is(err, context.Canceled) || !hasStage(err)) {
		j.finishCancelled(stage, cause, err)
		return
	}
	if errors.Is(err, context.DeadlineExceeded) && !hasStage(err) {
		err = &Error{Stage: stage, Err: err, Hint: "allow more time"}
	}
	j.err = err
	ae := APIError(err, stage)
	j.info.Error = ae
	j.emitLocked(api.Event{Type: api.TypeError, Stage: ae.Stage, Error: ae})
	j.setStateLocked(api.StateFailed, api.Event{})
}

func hasStage(err error) bool { _, ok := StageOf(err); return ok }

func (j *Job) finishCancelled(stage Stage, cause, err error) {
	now := j.m.now()
	stop := time.Duration(0)
	if !j.cancelAt.IsZero() {
		stop = now.Sub(j.cancelAt)
	}
	reason := "cancelled by the caller (its context ended)"
	var ce *cancelError
	if errors.As(cause, &ce) {
		reason = ce.reason
	} else if cause != context.Canceled {
		reason = cause.Error()
	}
	// Where the engine stopped, when its error is attributed to a stage and
	// says more than the cancellation ("generate: euler step 3/20 (sigma
	// 2.9): context canceled" → "in euler step 3/20 (sigma 2.9)"); a plain
	// error's cause stays the cancellation's.
	where := ""
	if err != nil && hasStage(err) {
		w := strings.TrimPrefix(err.Error(), string(stage)+": ")
		w = strings.TrimSuffix(strings.TrimSuffix(w, context.Canceled.Error()), ": ")
		if w != "" && w != context.Canceled.Error() {
			where = ", in " + oneLine(w)
		}
	}
	e := &Error{Stage: stage, Err: fmt.Errorf("%w: %s, stopped in %s%s", context.Canceled, reason, stop.Round(time.Microsecond), where),
		Numbers: map[string]int64{"stop_us": stop.Microseconds()}}
	j.err = e
	ae := APIError(e, stage)
	ae.Stage = string(stage) // where it stopped, whatever the error chain says
	ae.Message = string(stage) + ": " + ae.Cause
	j.info.Error = ae
	j.emitLocked(api.Event{Type: api.TypeError, Stage: string(stage), Error: ae})
	j.setStateLocked(api.StateCancelled, api.Event{StopMS: ms(stop), Reason: reason})
}
