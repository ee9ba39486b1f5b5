package sched

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/pipeline"
)

// Config sets a Residency's limits. The zero value has no budget, the
// default keep-alive and the wall clock.
type Config struct {
	Budget    int64     // bytes all resident models may take together; 0: no limit
	KeepAlive KeepAlive // default keep-alive; zero: DefaultKeepAlive
	Clock     Clock     // nil: the wall clock
	// OnEvent receives every event, in order, outside the residency's lock
	// (it may call List). It must not block for long.
	OnEvent func(Event)
}

// Request asks for one model.
type Request[T any] struct {
	Model string // the key: requests with equal Model share one resident value
	// Bytes is the memory the model is planned to take (plan.Memory's
	// total), used to make room before loading; the loader's own count
	// replaces it once loaded.
	Bytes     int64
	Placement string    // shown by List, e.g. "cpu"
	KeepAlive KeepAlive // zero: the residency's default
	// Load loads the model and returns it with the bytes it holds. It runs
	// once for all concurrent requests of the model, with the context of
	// the request that started it.
	Load func(ctx context.Context) (T, int64, error)
}

// ErrClosed is returned by Acquire after Close.
var ErrClosed = errors.New("sched: residency is closed")

// ErrNotResident is returned by Unload for a model that is not loaded.
var ErrNotResident = errors.New("model is not resident")

// Residency keeps loaded values of type T resident under a memory budget.
// Its methods are safe for concurrent use; one mutex guards all state.
type Residency[T any] struct {
	cfg   Config
	clock Clock

	mu      sync.Mutex
	models  map[string]*entry[T]
	used    int64         // bytes of every entry, loading ones included
	changed chan struct{} // closed (and replaced) when memory is released
	closed  bool
	pending []Event // events to deliver once the lock is released

	emitMu sync.Mutex // serializes event delivery
}

// entry is one model, loading or resident.
type entry[T any] struct {
	key       string
	val       T
	bytes     int64
	placement string
	refs      int           // requests holding or waiting for it
	loading   chan struct{} // non-nil while loading; closed when done
	loadErr   error
	loadTime  time.Duration
	loadedAt  time.Time
	lastUsed  time.Time
	keep      KeepAlive // of the latest request
	expires   time.Time // zero while in use or kept forever
	timer     Timer
	gen       uint64 // bumped on each release, so stale timers do nothing
	unloadNow bool   // Unload asked while in use
	gone      bool   // removed from the map
}

// New returns an empty residency.
func New[T any](cfg Config) *Residency[T] {
	r := &Residency[T]{cfg: cfg, clock: cfg.Clock, models: map[string]*entry[T]{}, changed: make(chan struct{})}
	if r.clock == nil {
		r.clock = wallClock{}
	}
	return r
}

// Lease is one request's hold on a resident model. Release it when the job
// is done; the model cannot be evicted while any lease is held.
type Lease[T any] struct {
	r    *Residency[T]
	e    *entry[T]
	once sync.Once
}

// Value is the loaded model.
func (l *Lease[T]) Value() T { return l.e.val }

// Release lets the model go idle (after the last lease) for its keep-alive.
// Calling it more than once does nothing.
func (l *Lease[T]) Release() { l.once.Do(func() { l.r.release(l.e) }) }

// Resize records that the leased model now holds bytes of memory (it kept
// a larger or smaller session between requests, say), reported as an
// EventResize with why; when that takes the total over the budget, idle
// models are evicted, least recently used first, as after a load larger
// than planned. A model unloaded (or to be, once its jobs end) is left
// alone.
func (l *Lease[T]) Resize(bytes int64, why string) {
	r, e := l.r, l.e
	r.mu.Lock()
	if r.models[e.key] != e || e.loading != nil || e.unloadNow || bytes == e.bytes {
		r.mu.Unlock()
		return
	}
	r.used += bytes - e.bytes
	e.bytes = bytes
	r.event(Event{Kind: EventResize, Model: e.key, Bytes: bytes, Reason: why})
	closing := r.trim(e)
	r.mu.Unlock()
	r.deliver()
	for _, v := range closing {
		closeValue(v)
	}
}

// Acquire returns a lease on req.Model, loading it if it is not resident.
// A model too large for the budget fails at once in stage "plan"; one that
// fits only after running jobs release memory waits for them (stage
// "queued" if ctx ends first). Load errors are returned to every request
// that shared the load.
func (r *Residency[T]) Acquire(ctx context.Context, req Request[T]) (*Lease[T], error) {
	if req.Load == nil || req.Model == "" {
		return nil, fmt.Errorf("sched: Acquire needs a model name and a Load function")
	}
	tr := pipeline.TraceFrom(ctx)
	var waitStart time.Time
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, ErrClosed
		}
		if e, ok := r.models[req.Model]; ok {
			l, err := r.join(ctx, e, req, tr)
			if err == errRetry {
				continue
			}
			return l, err
		}
		if err := r.tooBig(req); err != nil {
			r.mu.Unlock()
			return nil, err
		}
		victims, fits := r.makeRoom(req)
		if !fits {
			wake := r.changed
			if waitStart.IsZero() {
				waitStart = r.clock.Now()
				msg := fmt.Sprintf("needs %s; %s of the %s budget is held by running jobs", fmtBytes(req.Bytes), fmtBytes(r.used), fmtBytes(r.cfg.Budget))
				r.event(Event{Kind: EventWait, Model: req.Model, Bytes: req.Bytes, Reason: msg})
				r.mu.Unlock()
				r.deliver()
				tr.OnWarning("waiting_for_memory", req.Model+" "+msg)
			} else {
				r.mu.Unlock()
			}
			select {
			case <-wake:
				continue
			case <-ctx.Done():
				return nil, pipeline.Errorf(pipeline.StageQueued, "", "waited %s for memory to load %s: %w",
					r.clock.Now().Sub(waitStart).Round(time.Millisecond), req.Model, ctx.Err())
			}
		}
		return r.load(ctx, req, victims, tr)
	}
}

// errRetry tells Acquire to start over: a shared load failed because the
// request that started it went away.
var errRetry = errors.New("retry")

// join attaches a request to an existing entry (resident or loading). It
// is called with r.mu held and releases it.
func (r *Residency[T]) join(ctx context.Context, e *entry[T], req Request[T], tr *pipeline.Trace) (*Lease[T], error) {
	e.refs++
	e.keep = req.KeepAlive // each request sets its own keep-alive (zero: the default), the last one wins
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.expires = time.Time{}
	e.gen++
	loading := e.loading
	if loading == nil {
		e.lastUsed = r.clock.Now()
		r.event(Event{Kind: EventReuse, Model: e.key, Bytes: e.bytes,
			Reason: fmt.Sprintf("resident since %s, %d request(s) using it", e.loadedAt.Format(time.TimeOnly), e.refs)})
		r.mu.Unlock()
		r.deliver()
		tr.OnStageSkipped(pipeline.StageLoad, "model already resident")
		return &Lease[T]{r: r, e: e}, nil
	}
	r.mu.Unlock()
	select {
	case <-loading:
	case <-ctx.Done():
		r.release(e)
		return nil, pipeline.Errorf(pipeline.StageLoad, "", "waiting for %s to load: %w", req.Model, ctx.Err())
	}
	if e.loadErr != nil {
		r.mu.Lock()
		e.refs--
		r.mu.Unlock()
		if ctx.Err() == nil && (errors.Is(e.loadErr, context.Canceled) || errors.Is(e.loadErr, context.DeadlineExceeded)) {
			return nil, errRetry // its starter went away; load again for us
		}
		return nil, e.loadErr
	}
	r.mu.Lock()
	e.lastUsed = r.clock.Now()
	r.event(Event{Kind: EventReuse, Model: e.key, Bytes: e.bytes, Reason: "shared a load in progress for another request"})
	r.mu.Unlock()
	r.deliver()
	tr.OnStageSkipped(pipeline.StageLoad, fmt.Sprintf("shared a load in progress (took %s)", e.loadTime.Round(time.Millisecond)))
	return &Lease[T]{r: r, e: e}, nil
}

// tooBig refuses a model that exceeds the whole budget.
func (r *Residency[T]) tooBig(req Request[T]) error {
	if r.cfg.Budget > 0 && req.Bytes > r.cfg.Budget {
		return pipeline.Errorf(pipeline.StagePlan, "raise the memory budget or plan a shorter context or smaller format",
			"%s needs %s, more than the memory budget of %s", req.Model, fmtBytes(req.Bytes), fmtBytes(r.cfg.Budget)).
			With("needed_bytes", req.Bytes).With("budget_bytes", r.cfg.Budget)
	}
	return nil
}

// makeRoom picks the idle models to evict, least recently used first, so
// that req fits the budget. fits is false when even evicting every idle
// model would not be enough; then nothing is evicted.
func (r *Residency[T]) makeRoom(req Request[T]) (victims []*entry[T], fits bool) {
	if r.cfg.Budget <= 0 || r.used+req.Bytes <= r.cfg.Budget {
		return nil, true
	}
	var idle []*entry[T]
	for _, e := range r.models {
		if e.refs == 0 && e.loading == nil {
			idle = append(idle, e)
		}
	}
	sort.Slice(idle, func(i, j int) bool {
		if !idle[i].lastUsed.Equal(idle[j].lastUsed) {
			return idle[i].lastUsed.Before(idle[j].lastUsed)
		}
		return idle[i].key < idle[j].key
	})
	free := r.cfg.Budget - r.used
	for _, e := range idle {
		if free >= req.Bytes {
			break
		}
		victims = append(victims, e)
		free += e.bytes
	}
	if free < req.Bytes {
		return nil, false
	}
	return victims, true
}

// load evicts victims, then runs the loader. Called with r.mu held; it
// releases it.
func (r *Residency[T]) load(ctx context.Context, req Request[T], victims []*entry[T], tr *pipeline.Trace) (*Lease[T], error) {
	now := r.clock.Now()
	var closing []T
	for _, v := range victims {
		reason := fmt.Sprintf("idle since %s; its %s were needed for %s (%s)", v.lastUsed.Format(time.TimeOnly),
			fmtBytes(v.bytes), req.Model, fmtBytes(req.Bytes))
		closing = append(closing, r.remove(v, Event{Kind: EventEvict, Reason: reason, Duration: now.Sub(v.lastUsed)}))
		tr.OnWarning("evicted", v.key+" unloaded: "+reason)
	}
	e := &entry[T]{key: req.Model, bytes: req.Bytes, placement: req.Placement, refs: 1, keep: req.KeepAlive,
		loading: make(chan struct{})}
	r.models[req.Model] = e
	r.used += e.bytes
	r.mu.Unlock()
	r.deliver()
	for _, v := range closing {
		closeValue(v)
	}

	start := r.clock.Now()
	val, n, err := req.Load(ctx)
	r.mu.Lock()
	e.loadTime = r.clock.Now().Sub(start)
	if err != nil {
		e.loadErr = pipeline.Wrap(pipeline.StageLoad, err, "")
		e.refs--
		r.remove(e, Event{Kind: EventLoadFailed, Reason: oneLine(err.Error()), Duration: e.loadTime})
		close(e.loading)
		r.mu.Unlock()
		r.deliver()
		return nil, e.loadErr
	}
	e.val, e.loadedAt, e.lastUsed = val, r.clock.Now(), r.clock.Now()
	if n > 0 {
		r.used += n - e.bytes
		e.bytes = n
	}
	reason := "first request"
	if req.Bytes > 0 && n > req.Bytes*21/20 {
		reason += fmt.Sprintf("; %s resident, more than the %s planned", fmtBytes(n), fmtBytes(req.Bytes))
	}
	r.event(Event{Kind: EventLoad, Model: e.key, Bytes: e.bytes, Reason: reason, Duration: e.loadTime})
	close(e.loading)
	e.loading = nil
	closing = r.trim(e)
	r.mu.Unlock()
	r.deliver()
	for _, v := range closing {
		closeValue(v)
	}
	return &Lease[T]{r: r, e: e}, nil
}

// trim evicts idle models, least recently used first, while a model that
// turned out larger than planned keeps the total over the budget (r.mu
// held). It returns the values to close.
func (r *Residency[T]) trim(grown *entry[T]) []T {
	if r.cfg.Budget <= 0 || r.used <= r.cfg.Budget {
		return nil
	}
	victims, _ := r.makeRoom(Request[T]{}) // room for nothing more: back under the budget
	var closing []T
	for _, v := range victims {
		if r.used <= r.cfg.Budget {
			break
		}
		reason := fmt.Sprintf("%s holds %s, more than planned, and the budget is %s", grown.key, fmtBytes(grown.bytes), fmtBytes(r.cfg.Budget))
		closing = append(closing, r.remove(v, Event{Kind: EventEvict, Reason: reason}))
	}
	return closing
}

// release drops one reference; the last one starts the keep-alive.
func (r *Residency[T]) release(e *entry[T]) {
	r.mu.Lock()
	e.refs--
	if e.refs > 0 || e.gone || e.loading != nil {
		r.mu.Unlock()
		return
	}
	now := r.clock.Now()
	e.lastUsed = now
	e.gen++
	keep := e.keep
	if !keep.IsSet() {
		keep = r.cfg.KeepAlive
	}
	if !keep.IsSet() {
		keep = Keep(DefaultKeepAlive)
	}
	var closing []T
	switch {
	case e.unloadNow || r.closed:
		closing = append(closing, r.remove(e, Event{Kind: EventUnload, Reason: "unload requested; the last job using it finished"}))
	case keep.d == 0:
		closing = append(closing, r.remove(e, Event{Kind: EventUnload, Reason: "keep-alive 0: unloaded when its job finished"}))
	case keep.d > 0:
		e.expires = now.Add(keep.d)
		gen := e.gen
		e.timer = r.clock.AfterFunc(keep.d, func() { r.expire(e, gen, keep.d) })
	}
	r.signal()
	r.mu.Unlock()
	r.deliver()
	for _, v := range closing {
		closeValue(v)
	}
}

// expire unloads e if it is still idle since the release that set the timer.
func (r *Residency[T]) expire(e *entry[T], gen uint64, keep time.Duration) {
	r.mu.Lock()
	if e.gone || e.refs > 0 || e.gen != gen {
		r.mu.Unlock()
		return
	}
	v := r.remove(e, Event{Kind: EventExpire, Reason: fmt.Sprintf("idle for its keep-alive of %s", keep), Duration: keep})
	r.mu.Unlock()
	r.deliver()
	closeValue(v)
}

// remove takes e out (with r.mu held), records ev for it and returns the
// value to close once the lock is released.
func (r *Residency[T]) remove(e *entry[T], ev Event) T {
	if r.models[e.key] == e {
		delete(r.models, e.key)
	}
	if !e.gone {
		r.used -= e.bytes
	}
	e.gone = true
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	ev.Model, ev.Bytes = e.key, e.bytes
	r.event(ev)
	r.signal()
	v := e.val
	var zero T
	e.val = zero
	return v
}

// signal wakes requests waiting for memory.
func (r *Residency[T]) signal() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Residency[T]) event(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = r.clock.Now()
	}
	r.pending = append(r.pending, ev)
}

// deliver hands pending events to OnEvent, in order, without r.mu held.
func (r *Residency[T]) deliver() {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.mu.Lock()
	evs := r.pending
	r.pending = nil
	r.mu.Unlock()
	if r.cfg.OnEvent == nil {
		return
	}
	for _, ev := range evs {
		r.cfg.OnEvent(ev)
	}
}

func closeValue(v any) {
	switch c := v.(type) {
	case io.Closer:
		c.Close()
	case interface{ Close() }:
		c.Close()
	}
}

// Unload unloads model now if it is idle, or as soon as its last job
// finishes if it is in use.
func (r *Residency[T]) Unload(model string) error {
	r.mu.Lock()
	e, ok := r.models[model]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("sched: unload %s: %w", model, ErrNotResident)
	}
	if e.refs > 0 || e.loading != nil {
		e.unloadNow = true
		r.mu.Unlock()
		return nil
	}
	v := r.remove(e, Event{Kind: EventUnload, Reason: "unload requested"})
	r.mu.Unlock()
	r.deliver()
	closeValue(v)
	return nil
}

// Close unloads every idle model and refuses new requests; models in use
// are unloaded when their jobs finish.
func (r *Residency[T]) Close() error {
	r.mu.Lock()
	r.closed = true
	var closing []T
	for _, e := range r.models {
		if e.refs == 0 && e.loading == nil {
			closing = append(closing, r.remove(e, Event{Kind: EventUnload, Reason: "shutting down"}))
		}
	}
	r.mu.Unlock()
	r.deliver()
	for _, v := range closing {
		closeValue(v)
	}
	return nil
}

// Status is one resident model as List reports it (the JSON of GET /v1/ps).
type Status struct {
	Model     string     `json:"model"`
	Bytes     int64      `json:"bytes"`
	Placement string     `json:"placement,omitempty"`
	State     string     `json:"state"` // "loading", "in use" or "idle"
	InUse     int        `json:"in_use"`
	LoadedAt  time.Time  `json:"loaded_at,omitzero"`
	LastUsed  time.Time  `json:"last_used,omitzero"`
	KeepAlive string     `json:"keep_alive"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"` // nil: in use, loading, or kept forever
}

// List returns the resident (and loading) models, most recently used first.
func (r *Residency[T]) List() []Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Status, 0, len(r.models))
	for _, e := range r.models {
		s := Status{Model: e.key, Bytes: e.bytes, Placement: e.placement, InUse: e.refs, LoadedAt: e.loadedAt, LastUsed: e.lastUsed}
		keep := e.keep
		if !keep.IsSet() {
			keep = r.cfg.KeepAlive
		}
		if !keep.IsSet() {
			keep = Keep(DefaultKeepAlive)
		}
		s.KeepAlive = keep.String()
		switch {
		case e.loading != nil:
			s.State = "loading"
		case e.refs > 0:
			s.State = "in use"
		default:
			s.State = "idle"
			if !e.expires.IsZero() {
				t := e.expires
				s.ExpiresAt = &t
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastUsed.Equal(out[j].LastUsed) {
			return out[i].LastUsed.After(out[j].LastUsed)
		}
		return out[i].Model < out[j].Model
	})
	return out
}

// Used returns the bytes held by resident and loading models.
func (r *Residency[T]) Used() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used
}

// Reclaimable returns the bytes held by idle models: what loading another
// model could free by evicting them (plan.Device.WithReclaimable).
func (r *Residency[T]) Reclaimable() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, e := range r.models {
		if e.refs == 0 && e.loading == nil {
			n += e.bytes
		}
	}
	return n
}

// Budget returns the configured budget (0: none).
func (r *Residency[T]) Budget() int64 { return r.cfg.Budget }
