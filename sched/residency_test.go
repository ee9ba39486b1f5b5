package sched

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/pipeline"
)

// fakeClock moves only when told; due timers fire in Advance, in order.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// model is a loaded value that records being closed.
type model struct {
	name   string
	closed atomic.Bool
}

func (m *model) Close() error { m.closed.Store(true); return nil }

// harness is a residency with a fake clock, an event log and load counts.
type harness struct {
	t      *testing.T
	r      *Residency[*model]
	clock  *fakeClock
	mu     sync.Mutex
	events []string
	loads  map[string]int
	loaded map[string]*model
}

func newHarness(t *testing.T, cfg Config) *harness {
	h := &harness{t: t, clock: newFakeClock(), loads: map[string]int{}, loaded: map[string]*model{}}
	cfg.Clock = h.clock
	cfg.OnEvent = func(e Event) {
		h.mu.Lock()
		h.events = append(h.events, e.Kind+" "+e.Model)
		h.mu.Unlock()
	}
	h.r = New[*model](cfg)
	return h
}

func (h *harness) req(name string, bytes int64, keep KeepAlive) Request[*model] {
	return Request[*model]{Model: name, Bytes: bytes, KeepAlive: keep, Load: func(ctx context.Context) (*model, int64, error) {
		m := &model{name: name}
		h.mu.Lock()
		h.loads[name]++
		h.loaded[name] = m
		h.mu.Unlock()
		return m, bytes, nil
	}}
}

func (h *harness) acquire(name string, bytes int64, keep KeepAlive) *Lease[*model] {
	h.t.Helper()
	l, err := h.r.Acquire(context.Background(), h.req(name, bytes, keep))
	if err != nil {
		h.t.Fatalf("Acquire(%s): %v", name, err)
	}
	return l
}

// use acquires and releases at once, advancing the clock a second first
// so last-use times differ.
func (h *harness) use(name string, bytes int64) {
	h.t.Helper()
	h.clock.Advance(time.Second)
	h.acquire(name, bytes, KeepAlive{}).Release()
}

func (h *harness) takeEvents() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := strings.Join(h.events, ", ")
	h.events = nil
	return s
}

func (h *harness) resident() string {
	var names []string
	for _, s := range h.r.List() {
		names = append(names, s.Model)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

func TestLoadThenReuse(t *testing.T) {
	h := newHarness(t, Config{})
	l := h.acquire("a", 100, KeepAlive{})
	if l.Value().name != "a" {
		t.Fatalf("value %v", l.Value())
	}
	l.Release()
	l.Release() // a second Release does nothing
	var skipped []string
	ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{StageSkipped: func(s pipeline.Stage, why string) {
		skipped = append(skipped, string(s)+": "+why)
	}})
	l2, err := h.r.Acquire(ctx, h.req("a", 100, KeepAlive{}))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release()
	if h.loads["a"] != 1 || l2.Value() != h.loaded["a"] {
		t.Errorf("loads %d", h.loads["a"])
	}
	if got := h.takeEvents(); got != "load a, reuse a" {
		t.Errorf("events %q", got)
	}
	if len(skipped) != 1 || skipped[0] != "load: model already resident" {
		t.Errorf("trace %q", skipped)
	}
	st := h.r.List()
	if len(st) != 1 || st[0].State != "in use" || st[0].InUse != 1 || st[0].Bytes != 100 || st[0].ExpiresAt != nil {
		t.Errorf("status %+v", st)
	}
}

func TestKeepAlive(t *testing.T) {
	tests := []struct {
		name    string
		cfg     KeepAlive
		req     KeepAlive
		advance time.Duration
		want    string // resident after advance
		events  string
	}{
		{"default 5m, not yet", KeepAlive{}, KeepAlive{}, 5*time.Minute - time.Second, "a", "load a"},
		{"default 5m, expired", KeepAlive{}, KeepAlive{}, 5 * time.Minute, "", "load a, expire a"},
		{"config 1m", Keep(time.Minute), KeepAlive{}, time.Minute, "", "load a, expire a"},
		{"request overrides config", Keep(time.Minute), Keep(time.Hour), 59 * time.Minute, "a", "load a"},
		{"0 unloads at release", KeepAlive{}, Keep(0), 0, "", "load a, unload a"},
		{"forever", KeepAlive{}, KeepForever, 1000 * time.Hour, "a", "load a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{KeepAlive: tc.cfg})
			h.acquire("a", 10, tc.req).Release()
			h.clock.Advance(tc.advance)
			if got := h.resident(); got != tc.want {
				t.Errorf("resident %q, want %q", got, tc.want)
			}
			if got := h.takeEvents(); got != tc.events {
				t.Errorf("events %q, want %q", got, tc.events)
			}
			if closed := h.loaded["a"].closed.Load(); closed != (tc.want == "") {
				t.Errorf("closed = %v", closed)
			}
		})
	}
}

func TestKeepAliveIsPerRequest(t *testing.T) {
	h := newHarness(t, Config{})
	h.acquire("a", 1, KeepForever).Release()
	h.acquire("a", 1, KeepAlive{}).Release() // back to the default
	h.clock.Advance(DefaultKeepAlive)
	if h.resident() != "" {
		t.Error("a request without a keep-alive kept the previous request's 'forever'")
	}
}

func TestExpiryRestartsOnReuse(t *testing.T) {
	h := newHarness(t, Config{})
	h.acquire("a", 10, KeepAlive{}).Release()
	h.clock.Advance(4 * time.Minute)
	l := h.acquire("a", 10, KeepAlive{}) // in use: the old timer must not fire
	h.clock.Advance(10 * time.Minute)
	if h.resident() != "a" {
		t.Fatal("evicted while in use")
	}
	l.Release()
	st := h.r.List()
	if len(st) != 1 || st[0].ExpiresAt == nil || !st[0].ExpiresAt.Equal(h.clock.Now().Add(DefaultKeepAlive)) {
		t.Errorf("status %+v", st)
	}
	h.clock.Advance(DefaultKeepAlive)
	if h.resident() != "" {
		t.Error("not expired after a fresh keep-alive")
	}
}

func TestEvictionOrder(t *testing.T) {
	h := newHarness(t, Config{Budget: 10})
	h.use("a", 4)
	h.use("b", 4)
	h.use("a", 4) // a is now more recent than b
	h.takeEvents()
	h.use("c", 4) // needs 4, 2 free: evicts b (least recently used)
	if got := h.takeEvents(); got != "evict b, load c" {
		t.Errorf("events %q", got)
	}
	if !h.loaded["b"].closed.Load() || h.loaded["a"].closed.Load() {
		t.Error("wrong model closed")
	}
	if got := h.r.Reclaimable(); got != 8 {
		t.Errorf("reclaimable %d, want 8 (a and c idle)", got)
	}
	h.use("d", 8) // evicts a then c, oldest first
	if got := h.takeEvents(); got != "evict a, evict c, load d" {
		t.Errorf("events %q", got)
	}
	if h.r.Used() != 8 || h.resident() != "d" {
		t.Errorf("used %d, resident %q", h.r.Used(), h.resident())
	}
}

func TestEvictionIsTraced(t *testing.T) {
	h := newHarness(t, Config{Budget: 10})
	h.use("a", 6)
	var warned []string
	ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{Warning: func(code, msg string) { warned = append(warned, code+": "+msg) }})
	l, err := h.r.Acquire(ctx, h.req("b", 6, KeepAlive{}))
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "evicted: a unloaded: idle since 10:00:01; its 6 B were needed for b (6 B)") {
		t.Errorf("warnings %q", warned)
	}
}

func TestInUseIsNeverEvicted(t *testing.T) {
	h := newHarness(t, Config{Budget: 10})
	pinned := h.acquire("a", 6, KeepForever)
	h.use("b", 4)
	h.takeEvents()

	// c needs 6: evicting idle b frees only 4, so c waits and nothing is evicted.
	ctx, cancel := context.WithCancel(context.Background())
	var warned []string
	ctx = pipeline.WithTrace(ctx, &pipeline.Trace{Warning: func(code, msg string) { warned = append(warned, code) }})
	done := make(chan error, 1)
	go func() {
		_, err := h.r.Acquire(ctx, h.req("c", 6, KeepAlive{}))
		done <- err
	}()
	waitFor(t, func() bool { return strings.Contains(h.peekEvents(), "wait c") })
	cancel()
	err := <-done
	want := "queued: waited 0s for memory to load c: context canceled"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if s, _ := pipeline.StageOf(err); s != pipeline.StageQueued {
		t.Errorf("stage %q", s)
	}
	if h.resident() != "a b" || len(warned) != 1 || warned[0] != "waiting_for_memory" {
		t.Errorf("resident %q, warnings %q", h.resident(), warned)
	}

	// Once a is released, the waiting request evicts idle models in LRU
	// order until it fits: b (used before a's release), then a.
	go func() {
		l, err := h.r.Acquire(context.Background(), h.req("c", 6, KeepAlive{}))
		if err == nil {
			l.Release()
		}
		done <- err
	}()
	waitFor(t, func() bool { return strings.Count(h.peekEvents(), "wait c") == 2 })
	h.clock.Advance(time.Second)
	pinned.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := h.takeEvents(); !strings.HasSuffix(got, "wait c, evict b, evict a, load c") {
		t.Errorf("events %q", got)
	}
	if h.resident() != "c" {
		t.Errorf("resident %q", h.resident())
	}
}

func (h *harness) peekEvents() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.events, ", ")
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a bound on a failing test, not a measurement
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTooBigForBudget(t *testing.T) {
	h := newHarness(t, Config{Budget: 8 << 30})
	_, err := h.r.Acquire(context.Background(), h.req("llama-70b", 40<<30, KeepAlive{}))
	want := "plan: llama-70b needs 40 GiB, more than the memory budget of 8 GiB (raise the memory budget or plan a shorter context or smaller format)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %q", err, want)
	}
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Numbers["needed_bytes"] != 40<<30 || pe.Numbers["budget_bytes"] != 8<<30 {
		t.Errorf("numbers %+v", pe)
	}
	if h.loads["llama-70b"] != 0 {
		t.Error("loaded anyway")
	}
}

func TestConcurrentRequestsShareOneLoad(t *testing.T) {
	h := newHarness(t, Config{})
	release := make(chan struct{})
	var calls atomic.Int32
	req := Request[*model]{Model: "a", Bytes: 10, Load: func(ctx context.Context) (*model, int64, error) {
		calls.Add(1)
		<-release
		return &model{name: "a"}, 12, nil
	}}
	const n = 8
	leases := make(chan *Lease[*model], n)
	errs := make(chan error, n)
	for range n {
		go func() {
			l, err := h.r.Acquire(context.Background(), req)
			if err != nil {
				errs <- err
				return
			}
			leases <- l
		}()
	}
	waitFor(t, func() bool { st := h.r.List(); return len(st) == 1 && st[0].InUse == n })
	if st := h.r.List(); st[0].State != "loading" {
		t.Errorf("state %q", st[0].State)
	}
	close(release)
	var first *model
	for range n {
		select {
		case l := <-leases:
			if first == nil {
				first = l.Value()
			}
			if l.Value() != first {
				t.Error("requests got different values")
			}
			l.Release()
		case err := <-errs:
			t.Fatal(err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("%d loads, want 1", calls.Load())
	}
	ev := h.takeEvents()
	if strings.Count(ev, "load a") != 1 || strings.Count(ev, "reuse a") != n-1 {
		t.Errorf("events %q", ev)
	}
	if h.r.Used() != 12 {
		t.Errorf("used %d: the loader's count should replace the plan's", h.r.Used())
	}
}

func TestLargerThanPlannedTrims(t *testing.T) {
	h := newHarness(t, Config{Budget: 10})
	h.use("a", 4)
	h.takeEvents()
	l, err := h.r.Acquire(context.Background(), Request[*model]{Model: "b", Bytes: 4,
		Load: func(ctx context.Context) (*model, int64, error) { return &model{name: "b"}, 8, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if got := h.takeEvents(); got != "load b, evict a" {
		t.Errorf("events %q", got)
	}
	if h.r.Used() != 8 || h.resident() != "b" {
		t.Errorf("used %d, resident %q", h.r.Used(), h.resident())
	}
}

// TestResize: a resident model that grows past the budget evicts the
// idle ones, least recently used first; shrinking frees the room; a model
// unloaded in the meantime is left alone.
func TestResize(t *testing.T) {
	h := newHarness(t, Config{Budget: 10})
	h.use("a", 3)
	h.use("b", 3)
	l := h.acquire("c", 3, KeepAlive{})
	h.takeEvents()
	l.Resize(6, "keeps a larger session")
	if got := h.takeEvents(); got != "resize c, evict a" {
		t.Errorf("events %q", got)
	}
	if h.r.Used() != 9 || h.resident() != "b c" {
		t.Errorf("used %d, resident %q", h.r.Used(), h.resident())
	}
	l.Resize(2, "keeps a smaller session")
	l.Resize(2, "no change: no event")
	if got := h.takeEvents(); got != "resize c" || h.r.Used() != 5 {
		t.Errorf("events %q, used %d", got, h.r.Used())
	}
	if err := h.r.Unload("c"); err != nil {
		t.Fatal(err)
	}
	l.Resize(9, "after unload")
	l.Release()
	if h.r.Used() != 3 || h.resident() != "b" {
		t.Errorf("after unload: used %d, resident %q", h.r.Used(), h.resident())
	}
}

func TestLoadFailure(t *testing.T) {
	h := newHarness(t, Config{Budget: 100})
	boom := errors.New("tensor blk.0.attn_q.weight: shape [3 3], want [64 64]")
	_, err := h.r.Acquire(context.Background(), Request[*model]{Model: "bad", Bytes: 50,
		Load: func(ctx context.Context) (*model, int64, error) { return nil, 0, boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	if s, _ := pipeline.StageOf(err); s != pipeline.StageLoad {
		t.Errorf("stage %q", s)
	}
	if h.r.Used() != 0 || h.resident() != "" || h.takeEvents() != "load_failed bad" {
		t.Errorf("after failure: used %d, resident %q", h.r.Used(), h.resident())
	}
	h.use("bad", 50) // a later request loads again
	if h.loads["bad"] != 1 {
		t.Errorf("loads %d", h.loads["bad"])
	}
}

func TestStarterCancelledJoinerLoads(t *testing.T) {
	h := newHarness(t, Config{})
	started := make(chan struct{})
	var calls atomic.Int32
	load := func(ctx context.Context) (*model, int64, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-ctx.Done()
			return nil, 0, ctx.Err()
		}
		return &model{name: "a"}, 1, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := h.r.Acquire(ctx, Request[*model]{Model: "a", Load: load})
		first <- err
	}()
	<-started
	second := make(chan error, 1)
	go func() {
		l, err := h.r.Acquire(context.Background(), Request[*model]{Model: "a", Load: load})
		if err == nil {
			l.Release()
		}
		second <- err
	}()
	waitFor(t, func() bool { st := h.r.List(); return len(st) == 1 && st[0].InUse == 2 })
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("first: %v", err)
	}
	if err := <-second; err != nil {
		t.Errorf("second: %v", err)
	}
	if calls.Load() != 2 {
		t.Errorf("%d loads, want 2", calls.Load())
	}
}

func TestUnloadAndClose(t *testing.T) {
	h := newHarness(t, Config{})
	if err := h.r.Unload("nope"); !errors.Is(err, ErrNotResident) {
		t.Errorf("Unload(nope) = %v", err)
	}
	h.use("idle", 1)
	l := h.acquire("busy", 1, KeepForever)
	h.takeEvents()
	if err := h.r.Unload("idle"); err != nil {
		t.Fatal(err)
	}
	if err := h.r.Unload("busy"); err != nil {
		t.Fatal(err)
	}
	if h.resident() != "busy" {
		t.Errorf("resident %q", h.resident())
	}
	l.Release()
	if got := h.takeEvents(); got != "unload idle, unload busy" {
		t.Errorf("events %q", got)
	}
	h.use("x", 1)
	h.r.Close()
	if h.resident() != "" || !h.loaded["x"].closed.Load() {
		t.Error("Close left models")
	}
	if _, err := h.r.Acquire(context.Background(), h.req("y", 1, KeepAlive{})); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestParseKeepAlive(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		err  bool
	}{
		{"", "default", false}, {"5m", "5m0s", false}, {"0", "0 (unload when done)", false},
		{"-1", "forever", false}, {"-1m", "forever", false}, {"300", "5m0s", false}, {"1.5", "1.5s", false},
		{"soon", "", true}, {"1e300", "", true},
	} {
		k, err := ParseKeepAlive(tc.in)
		if (err != nil) != tc.err || (!tc.err && k.String() != tc.want) {
			t.Errorf("ParseKeepAlive(%q) = %v, %v; want %s", tc.in, k, err, tc.want)
		}
	}
}

func ExampleResidency() {
	r := New[string](Config{Budget: 10 << 30, OnEvent: func(e Event) { fmt.Println(e) }})
	l, err := r.Acquire(context.Background(), Request[string]{Model: "stories260K", Bytes: 14 << 20, KeepAlive: Keep(0),
		Load: func(ctx context.Context) (string, int64, error) { return "a loaded model", 14 << 20, nil }})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.Value())
	l.Release()
	// Output:
	// load stories260K: first request
	// a loaded model
	// unload stories260K: keep-alive 0: unloaded when its job finished
}

// FuzzParseKeepAlive: any keep_alive text parses or fails with a message,
// never panics.
func FuzzParseKeepAlive(f *testing.F) {
	for _, s := range []string{"5m", "-1", "0", "300", "NaN", "1e300", "1h30m", "-0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKeepAlive(s)
		if err == nil && s != "" && !k.IsSet() {
			t.Errorf("%q parsed to the default", s)
		}
	})
}
