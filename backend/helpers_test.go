package backend

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/server"
	"github.com/glassbox-ai/glassbox/store"
)

// newBackend is New with what serve gives by default filled in: this
// machine's device, its physical cores, 3 draft tokens a step.
func newBackend(t *testing.T, cfg Config) *Backend {
	t.Helper()
	b, err := tryBackend(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func tryBackend(cfg Config) (*Backend, error) {
	if cfg.Device == nil {
		dev, err := plan.ParseDevice("")
		if err != nil {
			return nil, err
		}
		cfg.Device = dev
	}
	if cfg.Session.Threads == 0 {
		cfg.Session.Threads = compute.PhysicalCores()
	}
	if cfg.DraftMax == 0 {
		cfg.DraftMax = 3
	}
	return New(cfg)
}

// serve runs the HTTP server over a new Backend of cfg, with jobs kept in
// memory, and returns its base URL and the backend; both stop when the
// test ends.
func serve(t *testing.T, cfg Config) (string, *Backend) {
	t.Helper()
	b := newBackend(t, cfg)
	m := pipeline.NewManager(pipeline.Options{})
	srv, err := server.New(server.Config{Backend: b, Jobs: &server.ManagerJobs{M: m}, Parallel: cfg.Parallel,
		DefaultCtx: cfg.Session.CtxLen})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL, b
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

// get fetches url and returns the status and the body.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// readText is a golden text file without its final newline.
func readText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// withCtx is the session options of serve --ctx n.
func withCtx(n int) model.SessionOptions { return model.SessionOptions{CtxLen: n} }

// tempStore is an empty model store of the test's own.
func tempStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
