package backend

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestPullDelete: /api/pull downloads a real model file into the
// store, the reference then names it for generation, and /api/delete
// removes it.
func TestPullDelete(t *testing.T) {
	src := shared.Path(t, "models/stories260K.gguf")
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tiny-story.gguf" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, src) // with Range, as a CDN
	}))
	defer files.Close()
	ref := files.URL + "/tiny-story.gguf"
	base, _ := serve(t, Config{Store: tempStore(t)})
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	code, out := call("POST", "/api/pull", `{"model": "`+ref+`"}`)
	var last map[string]any
	completed := 0.0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		last = nil
		json.Unmarshal(sc.Bytes(), &last)
		if c, ok := last["completed"].(float64); ok {
			completed = c
		}
	}
	if code != 200 || last["status"] != "success" || last["model"] != "tiny-story" || completed != 1185376 {
		t.Fatalf("pull: HTTP %d, completed %v: %s", code, completed, out)
	}
	if code, out := call("GET", "/api/tags", ""); code != 200 || !strings.Contains(string(out), `"name":"tiny-story"`) {
		t.Fatalf("tags: %s", out)
	}
	// Pulled again: already there, not downloaded.
	if code, out := call("POST", "/api/pull", `{"model": "`+ref+`", "stream": false}`); code != 200 || !strings.Contains(string(out), "success") {
		t.Fatalf("second pull: HTTP %d %s", code, out)
	}
	// The reference names the model, as in Ollama.
	var gen struct {
		Response string `json:"response"`
	}
	code, out = call("POST", "/api/generate", `{"model": "`+ref+`", "prompt": "Once upon a time", "stream": false, "raw": true,
		"options": {"temperature": 0, "num_predict": 5}}`)
	if json.Unmarshal(out, &gen); code != 200 || gen.Response == "" {
		t.Fatalf("generate by reference: HTTP %d %s", code, out)
	}
	// A copy under a second name, which is then taken.
	if code, out := call("POST", "/api/copy", `{"source": "tiny-story", "destination": "story-copy"}`); code != 200 {
		t.Fatalf("copy: HTTP %d %s", code, out)
	}
	if code, out := call("POST", "/api/copy", `{"source": "tiny-story", "destination": "story-copy"}`); code != 400 || !strings.Contains(string(out), "already exists") {
		t.Errorf("copy onto a taken name: HTTP %d %s", code, out)
	}
	if code, out := call("DELETE", "/api/delete", `{"model": "story-copy"}`); code != 200 {
		t.Fatalf("delete the copy: HTTP %d %s", code, out)
	}
	if code, out := call("DELETE", "/api/delete", `{"model": "tiny-story"}`); code != 200 {
		t.Fatalf("delete: HTTP %d %s", code, out)
	}
	if code, _ := call("DELETE", "/api/delete", `{"model": "tiny-story"}`); code != 404 {
		t.Errorf("second delete: HTTP %d", code)
	}
	if code, _ := call("POST", "/api/pull", `{"model": "`+files.URL+`/missing.gguf", "stream": false}`); code == 200 {
		t.Error("a pull of a missing file succeeded")
	}
}
