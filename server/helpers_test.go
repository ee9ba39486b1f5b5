package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/pipeline"
)

// testServer is a Server on a real loopback socket, with its fake backend
// and real pipeline.Manager.
type testServer struct {
	t    *testing.T
	s    *Server
	f    *fakeBackend
	m    *pipeline.Manager
	url  string
	done chan error
}

// start runs a server over f on a loopback port with cfg adjusted by mod;
// cleanup shuts it down and checks that no goroutine is left behind.
func start(t *testing.T, f *fakeBackend, mod func(*Config)) *testServer {
	t.Helper()
	return startAt(t, f, "127.0.0.1:0", mod)
}

// startAt is start listening on addr; the test server's url is on
// 127.0.0.1 whatever addr is.
func startAt(t *testing.T, f *fakeBackend, addr string, mod func(*Config)) *testServer {
	t.Helper()
	base := runtime.NumGoroutine()
	m := pipeline.NewManager(pipeline.Options{})
	cfg := Config{Backend: f, Jobs: &ManagerJobs{M: m}, Parallel: 1, MaxQueue: 4,
		ShutdownGrace: 2 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	ts := &testServer{t: t, s: s, f: f, m: m, url: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-ts.done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve returned %v", err)
		}
		m.Shutdown(ctx)
		http.DefaultClient.CloseIdleConnections()
		checkGoroutines(t, base)
	})
	return ts
}

// patience is how long a test waits for something that happens at once on
// an idle machine: a bound on a failing test's time, not a measurement (a
// loaded machine can stall a goroutine for seconds).
const patience = 60 * time.Second

// checkGoroutines waits up to patience for the goroutine count to fall
// back to base, and fails with the stacks if it does not.
func checkGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("goroutine leak: %d running, %d before the test\n%s", n, base, buf)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// last is the request the fake backend generated for last.
func (ts *testServer) last() *GenerateRequest {
	ts.f.mu.Lock()
	defer ts.f.mu.Unlock()
	return ts.f.requests[len(ts.f.requests)-1]
}

// do sends a request with a JSON (or raw string) body.
func (ts *testServer) do(method, path string, body any, hdr ...string) *http.Response {
	ts.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			ts.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp
}

// decode reads a whole JSON response into v and closes it, checking the status.
func decode(t *testing.T, resp *http.Response, status int, v any) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("decoding %s: %v", b, err)
		}
	}
}

// ndjson reads every line of a streamed response as a JSON object.
func ndjson(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct{ id, event, data string }

// readSSE parses an event stream until it ends or n events have arrived
// (n <= 0: all).
func readSSE(t *testing.T, r io.Reader, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" || cur.event != "" {
				out = append(out, cur)
				if n > 0 && len(out) == n {
					return out
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return out
}

// waitFor polls cond for up to patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
