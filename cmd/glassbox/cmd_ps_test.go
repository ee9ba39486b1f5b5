package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

func TestPS(t *testing.T) {
	// 4m59s ahead: "in 4m…" however long the machine takes to run the command, up to 59 s.
	exp := time.Now().Add(4*time.Minute + 59*time.Second).UTC().Format(time.RFC3339)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/ps" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"models":[
			{"name":"stories260K","size_resident":14680064,"placement":"cpu","in_use":0,"expires_at":"` + exp + `"},
			{"name":"tiny-llama","size_resident":1048576,"in_use":2,"keep_alive":"5m0s"},
			{"name":"pinned","size_resident":2048,"in_use":0,"expires_at":"0001-01-01T00:00:00Z"}],
			"queue":{"running":2,"waiting":1}}`))
	}))
	defer srv.Close()
	out, errs, code := runCmd(t, "", "ps", "--addr", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"NAME", "stories260K  14.0 MiB  cpu", "idle", "in 4m",
		"tiny-llama", "in use (2)", "when idle + 5m0s",
		"pinned", "never (kept until evicted)",
		"queue: 2 running, 1 waiting",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = runCmd(t, "", "ps", "--json", "--addr", strings.TrimPrefix(srv.URL, "http://"))
	if code != 0 || !strings.HasPrefix(out, `{"models":[`) {
		t.Errorf("--json: exit %d, %s", code, out)
	}
}

// TestPSCluster: on a cluster's front, a WHERE column names the worker a
// model is resident on.
func TestPSCluster(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"models":[
			{"name":"mine","size_resident":2048,"in_use":0},
			{"name":"big","size_resident":1048576,"in_use":1,"keep_alive":"5m0s","worker":"box2"}],
			"queue":{"running":0,"waiting":0}}`))
	}))
	defer srv.Close()
	out, errs, code := runCmd(t, "", "ps", "--addr", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"WHERE        NAME", "this server  mine", "worker box2  big"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPSNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, errs, code := runCmd(t, "", "ps", "--addr", addr)
	want := "glassbox ps: no server running at " + addr + " (start one with 'glassbox serve')"
	if code != 1 || strings.TrimSpace(errs) != want {
		t.Errorf("exit %d, stderr %q, want %q", code, errs, want)
	}
}

// TestStop: stop unloads a resident model from a real server (sending
// $GLASSBOX_API_KEY, which the server requires here); a model that is not
// resident is left as it is, an unknown one is named.
func TestStop(t *testing.T) {
	t.Setenv("GLASSBOX_API_KEY", "sekrit")
	base := startServe(t, "--model", shared.Path(t, "models/stories260K.gguf"))
	addr := strings.TrimPrefix(base, "http://")
	req, _ := http.NewRequest("POST", base+"/v1/ps/stories260K/load", nil)
	req.Header.Set("Authorization", "Bearer sekrit")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("load: %v %v", resp, err)
	}
	if out, errs, _ := runCmd(t, "", "ps", "--addr", addr); !strings.Contains(out, "stories260K") {
		t.Fatalf("ps before stop: %q %q", out, errs)
	}
	for range 2 { // the second time it is not resident: nothing to do
		if out, errs, code := runCmd(t, "", "stop", "--addr", addr, "stories260K"); code != 0 || out != "stories260K is not in memory now\n" {
			t.Errorf("stop: exit %d, %q, %q", code, out, errs)
		}
	}
	if out, _, _ := runCmd(t, "", "ps", "--addr", addr); !strings.Contains(out, "no models resident") {
		t.Errorf("ps after stop: %q", out)
	}
	if _, errs, code := runCmd(t, "", "stop", "--addr", addr, "nope"); code != 1 || !strings.Contains(errs, `stop nope: load: model "nope"`) {
		t.Errorf("stop nope: exit %d, %q", code, errs)
	}
	t.Setenv("GLASSBOX_API_KEY", "wrong")
	if _, errs, code := runCmd(t, "", "stop", "--addr", addr, "stories260K"); code != 1 || !strings.Contains(errs, "missing or wrong API key") {
		t.Errorf("stop with a wrong key: exit %d, %q", code, errs)
	}
}
