package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestOllamaGenerate(t *testing.T) {
	ts := start(t, newFake(), nil)
	t.Run("stream", func(t *testing.T) {
		resp := ts.do("POST", "/api/generate", map[string]any{"model": "tiny", "prompt": "hello there",
			"options": map[string]any{"temperature": 0, "seed": 42, "num_predict": 4}})
		if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("content type %q", ct)
		}
		if id := resp.Header.Get("X-Glassbox-Job"); ts.m.Job(id) == nil {
			t.Errorf("X-Glassbox-Job %q names no job", id)
		}
		lines := ndjson(t, resp)
		if len(lines) != 5 {
			t.Fatalf("%d lines, want 4 tokens + final: %v", len(lines), lines)
		}
		var text strings.Builder
		for _, l := range lines[:4] {
			if l["done"] != false || l["model"] != "tiny" {
				t.Errorf("chunk %v", l)
			}
			text.WriteString(l["response"].(string))
		}
		if text.String() != "Once upon a time" {
			t.Errorf("text %q", text.String())
		}
		last := lines[4]
		if last["done"] != true || last["done_reason"] != "length" || last["response"] != "" {
			t.Errorf("final %v", last)
		}
		if last["prompt_eval_count"] != 2.0 || last["eval_count"] != 4.0 {
			t.Errorf("counts %v %v", last["prompt_eval_count"], last["eval_count"])
		}
		for _, k := range []string{"total_duration", "prompt_eval_duration", "eval_duration"} {
			if v, _ := last[k].(float64); v <= 0 {
				t.Errorf("%s = %v, want > 0", k, last[k])
			}
		}
		f := ts.f.requests[len(ts.f.requests)-1]
		if f.Options.Temperature != 0 || *f.Options.Seed != 42 || f.Options.TopK != 40 || f.Options.NumPredict != 4 {
			t.Errorf("options reached the backend as %+v", f.Options)
		}
	})
	t.Run("no stream", func(t *testing.T) {
		var out map[string]any
		decode(t, ts.do("POST", "/api/generate", map[string]any{"model": "tiny", "prompt": "hi", "stream": false}), 200, &out)
		if out["response"] != "Once upon a time, there was a cat." || out["done_reason"] != "stop" || out["done"] != true {
			t.Errorf("got %v", out)
		}
		if out["job_id"] == "" {
			t.Error("no job id")
		}
	})
	t.Run("stop string", func(t *testing.T) {
		var out map[string]any
		decode(t, ts.do("POST", "/api/generate", map[string]any{"model": "tiny", "prompt": "hi", "stream": false,
			"options": map[string]any{"stop": []string{"time"}}}), 200, &out)
		if out["response"] != "Once upon a" || out["done_reason"] != "stop" {
			t.Errorf("got %v", out)
		}
	})
	t.Run("preload and unload", func(t *testing.T) {
		var out map[string]any
		decode(t, ts.do("POST", "/api/generate", map[string]any{"model": "tiny", "keep_alive": "10m"}), 200, &out)
		if out["done_reason"] != "load" {
			t.Errorf("got %v", out)
		}
		var ps struct{ Models []map[string]any }
		decode(t, ts.do("GET", "/api/ps", nil), 200, &ps)
		if len(ps.Models) != 1 || ps.Models[0]["name"] != "tiny" || ps.Models[0]["expires_at"] == nil {
			t.Errorf("ps %v", ps)
		}
		decode(t, ts.do("POST", "/api/generate", map[string]any{"model": "tiny", "keep_alive": 0}), 200, &out)
		if out["done_reason"] != "unload" || len(ts.f.unloaded) != 1 {
			t.Errorf("got %v, unloaded %v", out, ts.f.unloaded)
		}
	})
}

func TestOllamaChat(t *testing.T) {
	ts := start(t, newFake(), nil)
	msgs := []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": "tell a story"}}
	lines := ndjson(t, ts.do("POST", "/api/chat", map[string]any{"model": "tiny", "messages": msgs}))
	if len(lines) != 11 {
		t.Fatalf("%d lines: %v", len(lines), lines)
	}
	var text strings.Builder
	for _, l := range lines[:10] {
		m := l["message"].(map[string]any)
		if m["role"] != "assistant" {
			t.Errorf("role %v", m["role"])
		}
		text.WriteString(m["content"].(string))
	}
	if text.String() != "Once upon a time, there was a cat." {
		t.Errorf("text %q", text.String())
	}
	if lines[10]["done"] != true || lines[10]["eval_count"] != 10.0 || lines[10]["prompt_eval_count"] != 5.0 {
		t.Errorf("final %v", lines[10])
	}
	req := ts.f.requests[0]
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" {
		t.Errorf("messages %+v", req.Messages)
	}

	var out map[string]any
	decode(t, ts.do("POST", "/api/chat", map[string]any{"model": "tiny", "messages": msgs, "stream": false}), 200, &out)
	if out["message"].(map[string]any)["content"] != "Once upon a time, there was a cat." {
		t.Errorf("got %v", out)
	}
}

func TestOllamaInfo(t *testing.T) {
	ts := start(t, newFake(), nil)
	var tags struct{ Models []ollamaModel }
	decode(t, ts.do("GET", "/api/tags", nil), 200, &tags)
	if len(tags.Models) != 2 || tags.Models[0].Name != "tiny" || tags.Models[0].Details.Format != "gguf" ||
		tags.Models[0].Details.QuantizationLevel != "F32" || tags.Models[0].Size != 1185376 {
		t.Errorf("tags %+v", tags)
	}
	var show ollamaShowResponse
	decode(t, ts.do("POST", "/api/show", map[string]any{"model": "tiny"}), 200, &show)
	if show.Template != "{{ .Prompt }}" || show.ModelInfo["general.architecture"] != "llama" || show.Details.Family != "llama" {
		t.Errorf("show %+v", show)
	}
	var e ollamaError
	decode(t, ts.do("POST", "/api/show", map[string]any{"model": "nope"}), http.StatusNotFound, &e)
	if e.Stage != "load" || !strings.Contains(e.Error, `"nope"`) {
		t.Errorf("error %+v", e)
	}
	var v map[string]string
	decode(t, ts.do("GET", "/api/version", nil), 200, &v)
	if v["version"] != Version {
		t.Errorf("version %v", v)
	}
	resp := ts.do("HEAD", "/", nil)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("HEAD / = %d", resp.StatusCode)
	}
}

// TestFormatJSON: each dialect's JSON mode reaches the backend as
// Options.Format "json"; without it the format is free.
func TestFormatJSON(t *testing.T) {
	ts := start(t, newFake(), nil)
	msgs := `[{"role":"user","content":"x"}]`
	for _, tc := range []struct {
		path, body, want string
	}{
		{"/api/generate", `{"model":"tiny","prompt":"hi","stream":false,"format":"json"}`, "json"},
		{"/api/chat", `{"model":"tiny","messages":` + msgs + `,"stream":false,"format":"json"}`, "json"},
		{"/api/generate", `{"model":"tiny","prompt":"hi","stream":false,"format":""}`, ""},
		{"/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `,"response_format":{"type":"json_object"}}`, "json"},
		{"/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `,"response_format":{"type":"text"}}`, ""},
		// A schema reaches the backend as its compact text.
		{"/api/chat", `{"model":"tiny","messages":` + msgs + `,"stream":false,"format":{"type": "object", "properties": {"a": {"type": "integer"}}}}`, `{"type":"object","properties":{"a":{"type":"integer"}}}`},
		{"/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"enum": ["x", "y"]}}}}`, `{"enum":["x","y"]}`},
		{"/v1/jobs", `{"model":"tiny","prompt":"hi","format":{"type":"array", "items":{"type":"boolean"}}}`, `{"type":"array","items":{"type":"boolean"}}`},
	} {
		_, _, before := ts.f.stats()
		resp := ts.do("POST", tc.path, tc.body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 201 && resp.StatusCode != 202 {
			t.Fatalf("%s %s: HTTP %d", tc.path, tc.body, resp.StatusCode)
		}
		for deadline := time.Now().Add(patience); ; time.Sleep(time.Millisecond) { // jobs run after the answer
			if _, _, n := ts.f.stats(); n > before || time.Now().After(deadline) {
				break
			}
		}
		ts.f.mu.Lock()
		got := ts.f.requests[len(ts.f.requests)-1].Options.Format
		ts.f.mu.Unlock()
		if got != tc.want {
			t.Errorf("%s %s: format %q, want %q", tc.path, tc.body, got, tc.want)
		}
	}
}
