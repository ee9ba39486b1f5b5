package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// TestQueueFull fills the one slot and the one queue place; the next
// request on every API gets 503 with Retry-After and the queue length.
func TestQueueFull(t *testing.T) {
	f := newFake()
	f.hold = make(chan struct{}) // the running job runs until cancelled
	ts := start(t, f, func(c *Config) { c.Parallel, c.MaxQueue = 1, 1 })
	running := createJob(t, ts, map[string]any{"model": "tiny", "prompt": "one"})
	waitFor(t, "the first job to run", func() bool { r, _, _ := f.stats(); return r == 1 })
	waiting := createJob(t, ts, map[string]any{"model": "tiny", "prompt": "two"})
	for _, tc := range []struct{ path, body string }{
		{"/v1/jobs", `{"model":"tiny","prompt":"three"}`},
		{"/api/generate", `{"model":"tiny","prompt":"three"}`},
		{"/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"three"}],"stream":false}`},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"three"}],"stream":true}`},
		{"/v1/completions", `{"model":"tiny","prompt":"three"}`},
	} {
		resp := ts.do("POST", tc.path, tc.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != 503 || ra < 1 {
			t.Errorf("%s: status %d Retry-After %q: %s", tc.path, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
		if !json.Valid(b) || !contains(string(b), "queue is full: 1 waiting (limit 1), 1 of 1 slots busy") || !contains(string(b), `"queued`) {
			t.Errorf("%s: body %s", tc.path, b)
		}
	}
	var h health
	decode(t, ts.do("GET", "/healthz", nil), 200, &h)
	if h.Queue.Running != 1 || h.Queue.Waiting != 1 {
		t.Errorf("queue %+v", h.Queue)
	}
	for _, id := range []string{running.ID, waiting.ID} {
		decode(t, ts.do("POST", "/v1/jobs/"+id+"/cancel", nil), http.StatusAccepted, nil)
	}
	if _, peak, _ := f.stats(); peak != 1 {
		t.Errorf("%d generations ran at once with --parallel 1", peak)
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || (len(s) >= len(sub) && index(s, sub) >= 0) }

func index(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestQueueOrder checks FIFO hand-over, positions and the parallel limit
// on the queue itself.
func TestQueueOrder(t *testing.T) {
	q := newQueue(2, 3)
	ctx := context.Background()
	var held []func()
	for range 2 {
		tk, err := q.admit()
		if err != nil || tk.wt != nil {
			t.Fatalf("admit: %v, waiting %v", err, tk.wt != nil)
		}
		rel, err := tk.wait(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, rel)
	}
	var mu sync.Mutex
	var order []int
	positions := map[int][]int{}
	var wg sync.WaitGroup
	tks := make([]*ticket, 3)
	for i := range 3 {
		tk, err := q.admit()
		if err != nil {
			t.Fatal(err)
		}
		tks[i] = tk
	}
	if _, err := q.admit(); err == nil {
		t.Fatal("admitted beyond max queue")
	} else if e := toError(err); e.Status != 503 || e.RetryAfter < 1 || e.Stage != "queued" {
		t.Errorf("full queue error %+v", e)
	}
	cctx, cancel := context.WithCancel(ctx)
	for i, tk := range tks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ctx
			if i == 1 {
				c = cctx // the middle one gives up
			}
			rel, err := tk.wait(c, func(pos, n int) {
				mu.Lock()
				positions[i] = append(positions[i], pos)
				mu.Unlock()
			})
			if err != nil {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			rel()
		}()
	}
	waitFor(t, "initial positions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(positions[0]) > 0 && len(positions[1]) > 0 && len(positions[2]) > 0
	})
	cancel()
	waitFor(t, "the third to move up", func() bool {
		mu.Lock()
		defer mu.Unlock()
		p := positions[2]
		return p[len(p)-1] == 2
	})
	held[0]() // one slot frees: the first waiter takes it, then hands it to the third
	wg.Wait()
	held[1]()
	if len(order) != 2 || order[0] != 0 || order[1] != 2 {
		t.Errorf("order %v", order)
	}
	if r, w, _, _ := q.stats(); r != 0 || w != 0 {
		t.Errorf("running %d waiting %d after all released", r, w)
	}
}

// TestParallel: with --parallel 2, two generations run at once and the
// third waits its turn. The generations are held in prefill until two run
// and one waits, so they overlap whatever the machine's speed.
func TestParallel(t *testing.T) {
	f := newFake()
	f.hold = make(chan struct{})
	ts := start(t, f, func(c *Config) { c.Parallel = 2 })
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := ts.do("POST", "/api/generate", `{"model":"tiny","prompt":"hi","stream":false}`)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	waitFor(t, "two generations running and one waiting", func() bool {
		r, _, _ := f.stats()
		qr, qw, _, _ := ts.s.queue.stats()
		return r == 2 && qr == 2 && qw == 1
	})
	close(f.hold)
	wg.Wait()
	if _, peak, n := f.stats(); peak != 2 || n != 3 {
		t.Errorf("peak %d of 3 requests, want 2", peak)
	}
}
