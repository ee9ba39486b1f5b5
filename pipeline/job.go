package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// Job is one unit of work moving through the stages. Its methods are safe
// for concurrent use. A Job is created by Manager.Submit.
type Job struct {
	m      *Manager
	ctx    context.Context
	cancel context.CancelCauseFunc
	// stopAfter unregisters the hook that notes when the context is cancelled.
	stopAfter func() bool

	mu       sync.Mutex
	info     api.Job
	events   eventLog
	changed  chan struct{} // closed and replaced when an event comes and a subscriber waits
	watched  bool          // a subscriber holds changed
	started  map[Stage]time.Time
	current  Stage // the stage last started
	cancelAt time.Time
	result   any
	err      error
	done     chan struct{} // closed after the terminal state event
}

// ID returns the job's id.
func (j *Job) ID() string { return j.info.ID }

// Info returns the job's summary as it stands now.
func (j *Job) Info() api.Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.snapshot()
}

func (j *Job) snapshot() api.Job {
	info := j.info
	end := info.Finished
	if end.IsZero() {
		end = j.m.now()
	}
	info.DurationMS = ms(end.Sub(info.Created))
	return info
}

// Stage returns the stage the job is in (or last reached).
func (j *Job) Stage() Stage {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.current
}

// Done returns a channel closed when the job has ended and its last event
// has been recorded.
func (j *Job) Done() <-chan struct{} { return j.done }

// Wait blocks until the job ends or ctx is done, and returns the job's
// result and error (nil for a job that is done).
func (j *Job) Wait(ctx context.Context) (any, error) {
	select {
	case <-j.done:
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.result, j.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Cancel asks the job to stop; reason ("cancelled by client") goes into its
// error event. It returns at once: the job stops at its next check of the
// context, and its log records how long that took. Cancelling an ended
// job does nothing.
func (j *Job) Cancel(reason string) {
	if reason == "" {
		reason = "cancelled"
	}
	j.mu.Lock()
	if j.cancelAt.IsZero() && !api.Terminal(j.info.State) {
		j.cancelAt = j.m.now()
	}
	j.mu.Unlock()
	j.cancel(&cancelError{reason: reason})
}

// errEnded is the cause of a job's context once the job has ended.
var errEnded = errors.New("job ended")

// cancelError is the cause a job's context carries after Cancel.
type cancelError struct{ reason string }

func (e *cancelError) Error() string { return e.reason }
func (e *cancelError) Unwrap() error { return context.Canceled }

// Events returns a copy of the job's events with Seq >= fromSeq.
func (j *Job) Events(fromSeq int64) []api.Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []api.Event
	for _, c := range j.events.from(index(fromSeq, j.events.len())) {
		out = append(out, c...)
	}
	return out
}

func index(fromSeq int64, n int) int {
	if fromSeq <= 1 {
		return 0
	}
	if fromSeq > int64(n) {
		return n
	}
	return int(fromSeq - 1)
}

// Subscribe returns a channel delivering the job's events from fromSeq on
// (1 or less: from the start): the recorded ones first, then live ones, and
// closed after the terminal state event or when cancel is called. A slow
// reader never slows the job: each subscriber has its own goroutine
// reading the job's log at its own pace.
func (j *Job) Subscribe(fromSeq int64) (<-chan api.Event, func()) {
	out := make(chan api.Event, 64)
	stop := make(chan struct{})
	var once sync.Once
	cancel := func() { once.Do(func() { close(stop) }) }
	go func() {
		defer close(out)
		next := index(fromSeq, 1<<62)
		for {
			j.mu.Lock()
			batch := j.events.from(next)
			changed := j.changed
			j.watched = true
			ended := api.Terminal(j.info.State)
			j.mu.Unlock()
			for _, c := range batch {
				for _, ev := range c {
					select {
					case out <- ev:
						next++
					case <-stop:
						return
					}
				}
			}
			if ended && len(batch) == 0 {
				return
			}
			if len(batch) > 0 {
				continue
			}
			select {
			case <-changed:
			case <-stop:
				return
			}
		}
	}()
	return out, cancel
}

// emit numbers, stamps and records ev, wakes subscribers and hands it to
// the sinks, in order.
func (j *Job) emit(ev api.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.emitLocked(ev)
}

func (j *Job) emitLocked(ev api.Event) {
	ev.Seq = int64(j.events.len()) + 1
	ev.Time = j.m.now()
	ev.Job = j.info.ID
	j.events.append(ev)
	j.info.LastSeq = ev.Seq
	if ev.Type == api.TypeStageStart {
		j.info.Stage = ev.Stage
	}
	for _, s := range j.m.sinks {
		j.m.toSink(s, func() { s.EventAppended(ev) })
	}
	if j.watched {
		close(j.changed)
		j.changed = make(chan struct{})
		j.watched = false
	}
}

func (j *Job) setState(state string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.setStateLocked(state, api.Event{})
}

// setStateLocked records a state change: the job summary goes to the
// sinks first, then the state event (extra carries duration/stop fields).
func (j *Job) setStateLocked(state string, extra api.Event) {
	now := j.m.now()
	j.info.State = state
	switch {
	case state == api.StateRunning:
		j.info.Started = now
	case api.Terminal(state):
		j.info.Finished = now
	}
	j.info.LastSeq++ // the state event about to be emitted
	info := j.snapshot()
	j.info.LastSeq--
	for _, s := range j.m.sinks {
		j.m.toSink(s, func() { s.JobUpdated(info) })
	}
	extra.Type = api.TypeState
	extra.State = state
	if api.Terminal(state) {
		extra.DurationMS = info.DurationMS
	}
	j.emitLocked(extra)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// marshalResult turns a job's result into JSON for its result event.
func marshalResult(v any) (json.RawMessage, error) {
	switch r := v.(type) {
	case json.RawMessage:
		if json.Valid(r) {
			return r, nil
		}
	case nil:
		return json.RawMessage("null"), nil
	}
	return json.Marshal(v)
}

// toSink calls a sink, containing a panic in it: the job holds its lock
// here, and a broken sink must not take the job (or the process) down.
func (m *Manager) toSink(s Sink, call func()) {
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("pipeline: sink panicked; the event is lost to it", "sink", fmt.Sprintf("%T", s), "panic", r)
		}
	}()
	call()
}
