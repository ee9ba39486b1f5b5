package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// TestShutdown: running jobs get the grace period, then are cancelled;
// new work is refused with 503; open event streams end.
func TestShutdown(t *testing.T) {
	f := newFake()
	f.maxTokens = 100000
	f.hold, f.holdAt = make(chan struct{}), f.prefill+3 // three tokens, then it runs until cancelled
	ts := start(t, f, func(c *Config) { c.ShutdownGrace = 100 * time.Millisecond })
	jc := createJob(t, ts, map[string]any{"model": "tiny", "prompt": "long"})
	resp := ts.do("GET", jc.EventsURL, nil)
	defer resp.Body.Close()
	readSSE(t, resp.Body, 5)

	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- ts.s.Shutdown(context.Background()) }()
	// The open event stream ends without "event: end" (the job is not over).
	rest, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(rest), "event: end") {
		t.Errorf("stream ended as if the job were over: %s", rest)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The job cannot end by itself, so the shutdown returning at all means
	// it cancelled the job; the grace's timer never fires early.
	if d := time.Since(t0); d < 100*time.Millisecond {
		t.Errorf("shutdown took %s with a 100ms grace", d)
	}
	j := ts.m.Job(jc.ID)
	<-j.Done()
	if info := j.Info(); info.State != api.StateCancelled || info.Error.Stage != "generate" {
		t.Errorf("job %s, error %+v", info.State, info.Error)
	} else if !strings.Contains(info.Error.Message, "server shutting down") {
		t.Errorf("a shutdown's cancel says %q, not that the server is shutting down", info.Error.Message)
	}
	if _, e := ts.s.startGeneration(context.Background(), JobSpec{}, &GenerateRequest{Model: "tiny"}); e == nil || e.Status != http.StatusServiceUnavailable {
		t.Errorf("admitted after shutdown: %+v", e)
	}
}

// TestShutdownFinishes: a job that ends within the grace period is done,
// not cancelled. The job is held mid-generation until the shutdown has
// begun, then let go, so it ends during the grace whatever the machine's
// speed.
func TestShutdownFinishes(t *testing.T) {
	f := newFake()
	f.hold, f.holdAt = make(chan struct{}), f.prefill+2
	ts := start(t, f, func(c *Config) { c.ShutdownGrace = time.Minute })
	jc := createJob(t, ts, map[string]any{"model": "tiny", "prompt": "short"})
	waitFor(t, "the job to run", func() bool { r, _, _ := f.stats(); return r == 1 })
	done := make(chan error, 1)
	go func() { done <- ts.s.Shutdown(context.Background()) }()
	waitFor(t, "the shutdown to begin", func() bool { ts.s.mu.Lock(); defer ts.s.mu.Unlock(); return ts.s.closing })
	select {
	case err := <-done:
		t.Fatalf("shutdown returned (%v) while a job was running within its grace", err)
	default:
	}
	close(f.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if info := ts.m.Job(jc.ID).Info(); info.State != api.StateDone {
		t.Errorf("job %s", info.State)
	}
}

// TestSlowReader: a streaming client that stops reading is dropped after
// the write timeout and its generation cancelled, freeing the slot.
func TestSlowReader(t *testing.T) {
	f := newFake()
	f.tokenPrefix = strings.Repeat("x", 64<<10) // 64 KiB tokens fill socket buffers fast
	f.maxTokens = 100000
	ts := start(t, f, func(c *Config) { c.WriteTimeout = 200 * time.Millisecond })
	resp := ts.do("POST", "/api/generate", `{"model":"tiny","prompt":"hi"}`)
	defer resp.Body.Close()
	buf := make([]byte, 1024)
	if _, err := resp.Body.Read(buf); err != nil { // streaming began
		t.Fatal(err)
	}
	// ... and the client reads no more.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if r, _, _ := f.stats(); r == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("generation still running 2 minutes after the client stopped reading")
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.mu.Lock()
	err := f.ended[0]
	f.mu.Unlock()
	if err == nil {
		t.Errorf("generation ended normally; want cancelled")
	}
	waitFor(t, "a free slot", func() bool { r, _, _, _ := ts.s.queue.stats(); return r == 0 })
}
