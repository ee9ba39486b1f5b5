package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestServeGuard: the command wires the browser guard: a foreign Host and
// a foreign page are refused, the origins of --allow-origin and
// GLASSBOX_ORIGINS are allowed, and the web UI may not be framed.
func TestServeGuard(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	t.Setenv(home.Env, t.TempDir())
	t.Setenv("GLASSBOX_ORIGINS", "https://env.example")
	var errb serveLog
	env := &cmdEnv{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, env, []string{"serve", "--addr", "127.0.0.1:0", "--home", t.TempDir(), "--model", model,
			"--allow-origin", "https://flag.example,https://*.tools.example", "--max-blob", "1KiB"})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	}()
	waitServeLog(t, &errb, "listening on http://127.0.0.1:")
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(errb.String())
	do := func(method, path, body string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
			} else {
				req.Header.Set(hdr[i], hdr[i+1])
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, tc := range []struct {
		name   string
		hdr    []string
		status int
		acao   string
	}{
		{"foreign Host", []string{"Host", "evil.example"}, 403, ""},
		{"foreign page", []string{"Origin", "https://evil.example"}, 403, ""},
		{"--allow-origin", []string{"Origin", "https://flag.example"}, 200, "https://flag.example"},
		{"--allow-origin pattern", []string{"Origin", "https://a.tools.example"}, 200, "https://a.tools.example"},
		{"GLASSBOX_ORIGINS", []string{"Origin", "https://env.example"}, 200, "https://env.example"},
		{"curl", nil, 200, ""},
	} {
		resp, body := do("GET", "/api/tags", "", tc.hdr...)
		if resp.StatusCode != tc.status || resp.Header.Get("Access-Control-Allow-Origin") != tc.acao {
			t.Errorf("%s: %d, Access-Control-Allow-Origin %q: %s", tc.name, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), body)
		}
	}
	resp, _ := do("GET", "/", "")
	if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("the UI may be framed: %v", resp.Header)
	}
	resp, body := do("POST", "/api/blobs/sha256:"+strings.Repeat("0", 64), strings.Repeat("x", 2048))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "1024 bytes") {
		t.Errorf("an upload over --max-blob 1KiB: %d %s", resp.StatusCode, body)
	}
}
