package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPS(t *testing.T) {
	exp := time.Now().Add(4*time.Minute + 30*time.Second).UTC().Format(time.RFC3339)
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
		"NAME", "stories260K  14.0 MiB  cpu", "idle", "in 4m", // 4m30s or 4m29s
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
