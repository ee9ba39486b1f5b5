package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/cluster"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestServeRefuses checks the serve command's refusals before it listens.
func TestServeRefuses(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"beyond loopback without a key", []string{"--addr", "0.0.0.0:0"}, "refusing to listen on 0.0.0.0:0 without an API key"},
		{"bad address", []string{"--addr", "nonsense"}, `address "nonsense"`},
		{"a cluster beyond loopback without a token", []string{"--addr", "127.0.0.1:0", "--cluster-listen", "0.0.0.0:0"},
			"cluster: refusing to listen on 0.0.0.0:0 without a token"},
		{"a bad cluster address", []string{"--addr", "127.0.0.1:0", "--cluster-listen", "nowhere"}, `cluster: --cluster-listen "nowhere"`},
		{"both an embedded and an external cluster", []string{"--addr", "127.0.0.1:0", "--cluster-listen", "127.0.0.1:0", "--nats", "nats://127.0.0.1:1"},
			"cluster: --cluster-listen 127.0.0.1:0 and --nats nats://127.0.0.1:1: give one"},
		{"an external cluster that is not there", []string{"--addr", "127.0.0.1:0", "--nats", "nats://127.0.0.1:1"},
			"cluster: --nats nats://127.0.0.1:1: the server cannot be reached"},
		{"bad budget", []string{"--addr", "127.0.0.1:0", "--mem-budget", "lots"}, "--mem-budget"},
		{"bad keep-alive", []string{"--addr", "127.0.0.1:0", "--keep-alive", "soon"}, "--keep-alive"},
		{"missing model file", []string{"--addr", "127.0.0.1:0", "--model", "/nonexistent/x.gguf"}, "load: "},
		{"origin without a scheme", []string{"--addr", "127.0.0.1:0", "--allow-origin", "https://ok.example,app.example"}, `--allow-origin: deliver: allowed origin "app.example": an origin is scheme://host[:port]`},
		{"bad blob limit", []string{"--addr", "127.0.0.1:0", "--max-blob", "huge"}, `--max-blob "huge"`},
		{"a draft while batching", []string{"--addr", "127.0.0.1:0", "--draft", "stories260K=" + model, "--parallel", "2"}, "speculative decoding runs one generation at a time (--parallel 1)"},
		{"a draft that is no model", []string{"--addr", "127.0.0.1:0", "--draft", "stories260K=nope.gguf"}, `load: --draft stories260K=nope.gguf: load: model "nope.gguf": no such file`},
	}
	t.Setenv("GLASSBOX_ORIGINS", "")
	t.Setenv("GLASSBOX_CLUSTER_TOKEN", "")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(home.Env, t.TempDir()) // serve sets it from --home; restore it after
			var out, errb bytes.Buffer
			env := &cmdEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
			args := append([]string{"serve", "--home", t.TempDir(), "--model", model}, tc.args...)
			if code := runMain(context.Background(), env, args); code != 1 {
				t.Fatalf("exit %d, stderr %s", code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr %q, want %q", errb.String(), tc.want)
			}
		})
	}
	t.Run("bad origins in the environment", func(t *testing.T) {
		t.Setenv(home.Env, t.TempDir())
		t.Setenv("GLASSBOX_ORIGINS", "https://a.example, example.com")
		var out, errb bytes.Buffer
		env := &cmdEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
		if code := runMain(context.Background(), env, []string{"serve", "--home", t.TempDir(), "--addr", "127.0.0.1:0"}); code != 1 ||
			!strings.Contains(errb.String(), `GLASSBOX_ORIGINS: deliver: allowed origin "example.com"`) {
			t.Errorf("exit %d, stderr %q", code, errb.String())
		}
	})
}

// TestServeRuns starts the command in-process, then stops it through its
// context, as SIGTERM does.
func TestServeRuns(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	t.Setenv(home.Env, t.TempDir())
	var errb serveLog
	env := &cmdEnv{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, env, []string{"serve", "--addr", "127.0.0.1:0", "--home", t.TempDir(), "--model", model})
	}()
	waitServeLog(t, &errb, "listening on http://127.0.0.1:")
	if !strings.Contains(errb.String(), "models: stories260K") {
		t.Errorf("stderr %q", errb.String())
	}
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(errb.String())
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/jobs/no-such-job"); code != http.StatusNotFound {
		t.Errorf("unknown job: HTTP %d %s, want 404", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "glassbox_journal_events_written_total") {
		t.Errorf("/metrics: HTTP %d, journal counters missing", code)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "glassbox serve: stopped") {
		t.Errorf("stderr %q", errb.String())
	}
}

// serveLog is a bytes.Buffer safe for a writer and a reader goroutine.
type serveLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *serveLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *serveLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitServeLog(t *testing.T, b *serveLog, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr never said %q: %s", want, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startServe runs 'glassbox serve' in-process with args (after --addr and
// --home) and returns its base URL; it stops when the test ends.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	t.Setenv(home.Env, t.TempDir()) // serve sets it from --home; restore it after
	var errb serveLog
	env := &cmdEnv{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, env, append([]string{"serve", "--addr", "127.0.0.1:0", "--home", t.TempDir()}, args...))
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitServeLog(t, &errb, "listening on http://127.0.0.1:")
	return regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(errb.String())
}

// postBody posts a JSON body to url and returns the status and the body.
func postBody(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestWorkerRefuses checks glassbox worker's refusals before it runs.
func TestWorkerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no cluster address", nil, "worker: --nats is required"},
		{"no server there", []string{"--nats", "nats://127.0.0.1:1"}, "cluster: connecting to nats://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(home.Env, t.TempDir())
			var out, errb bytes.Buffer
			env := &cmdEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
			if code := runMain(context.Background(), env, append([]string{"worker", "--home", t.TempDir()}, tc.args...)); code != 1 ||
				!strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q, want %q", code, errb.String(), tc.want)
			}
		})
	}
}

// TestServeClusterExternal: serve --nats makes the server the front of a
// cluster on an external NATS server (one the test starts, with a token).
func TestServeClusterExternal(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	ns, err := cluster.StartServer(cluster.ServerConfig{Listen: "127.0.0.1:0", Token: "sekret", StoreDir: t.TempDir(), Name: "external"})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	base := startServe(t, "--model", model, "--nats", ns.URL(), "--cluster-token", "sekret")
	resp, err := http.Get(base + "/v1/cluster/workers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"cluster":true`) {
		t.Fatalf("/v1/cluster/workers: HTTP %d %s", resp.StatusCode, b)
	}
}
