package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// TestUnknownFields: the native jobs API refuses a field it does not know,
// at the top and in options, naming it and the nearest known name (or
// where another API's name lives here); the Ollama dialect ignores them,
// as Ollama does, and logs the options it ignores.
func TestUnknownFields(t *testing.T) {
	var logs syncBuffer
	ts := start(t, newFake(), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	for _, tc := range []struct {
		name, path, body string
		status           int
		param            string
		says             []string
	}{
		{"another API's fields", "/v1/jobs", `{"model":"tiny","prompt":"hi","max_tokens":10,"temperature":0}`, 400, "max_tokens",
			[]string{`"max_tokens" (did you mean options.num_predict?)`, `"temperature" (did you mean options.temperature?)`}},
		{"a misspelled field", "/v1/jobs", `{"model":"tiny","promt":"hi"}`, 400, "promt", []string{`"promt" (did you mean prompt?)`}},
		{"a misspelled option at the top", "/v1/jobs", `{"model":"tiny","prompt":"hi","temprature":0}`, 400, "temprature", []string{"did you mean options.temperature?"}},
		{"nothing near", "/v1/jobs", `{"model":"tiny","prompt":"hi","zqxjv":1}`, 400, "zqxjv", []string{`unknown field "zqxjv"`, "known fields: ", "messages", "options"}},
		{"a misspelled option", "/v1/jobs", `{"model":"tiny","prompt":"hi","options":{"temprature":0}}`, 400, "options.temprature",
			[]string{`unknown option "temprature" (did you mean temperature?)`}},
		{"another API's name in options", "/v1/jobs", `{"model":"tiny","prompt":"hi","options":{"max_tokens":3}}`, 400, "options.max_tokens",
			[]string{"did you mean num_predict?"}},
		{"an option of Ollama's glassbox has no use for", "/v1/jobs", `{"model":"tiny","prompt":"hi","options":{"num_gpu":1}}`, 400, "options.num_gpu",
			[]string{"num_gpu", "Ollama option glassbox does not use"}},
		{"an embedding job", "/v1/jobs", `{"model":"tiny","input":"x","dimension":2}`, 400, "dimension", []string{"did you mean dimensions?"}},
		{"a pull job", "/v1/jobs", `{"kind":"pull","modle":"hf.co/a/b"}`, 400, "modle", []string{"did you mean model?"}},
		{"known fields", "/v1/jobs", `{"model":"tiny","prompt":"hi","system":"s","raw":false,"options":{"temperature":0,"num_predict":2,"num_ctx":32},"keep_alive":"1m","logprobs":true,"top_logprobs":1,"think":false,"format":null}`, 202, "", nil},
		{"Ollama: unknown top-level fields", "/api/generate", `{"model":"tiny","prompt":"hi","stream":false,"max_tokens":1,"whatever":{}}`, 200, "", nil},
		{"Ollama: unknown options", "/api/generate", `{"model":"tiny","prompt":"hi","stream":false,"options":{"temprature":0,"num_gpu":1}}`, 200, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ts.f.requestCount()
			resp := ts.do("POST", tc.path, tc.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status != 400 {
				return
			}
			var e nativeError
			json.Unmarshal(b, &e)
			if e.Error.Param != tc.param || e.Error.Code != "unknown_field" || e.Error.Stage != "deliver" {
				t.Errorf("param %q code %q stage %q, want %q unknown_field deliver", e.Error.Param, e.Error.Code, e.Error.Stage, tc.param)
			}
			for _, s := range tc.says {
				if !strings.Contains(e.Error.Message, s) {
					t.Errorf("%q does not say %q", e.Error.Message, s)
				}
			}
			if ts.f.requestCount() != before {
				t.Error("a refused job ran")
			}
		})
	}
	if l := logs.String(); !strings.Contains(l, "temprature") || !strings.Contains(l, "temperature") {
		t.Errorf("the Ollama dialect's ignored options are not logged with their nearest name: %q", l)
	}
}

// TestOptionNames: optionNames is exactly what applyOllamaOptions reads.
func TestOptionNames(t *testing.T) {
	for _, name := range optionNames {
		var o Options
		if e := applyOllamaOptions(&o, map[string]any{name: map[string]any{}}); e == nil {
			t.Errorf("option %q is listed but not read", name)
		}
	}
	for _, name := range ollamaOptionNames {
		if !isOption(name) {
			var o Options
			if e := applyOllamaOptions(&o, map[string]any{name: map[string]any{}}); e != nil {
				t.Errorf("option %q is read but not listed: %v", name, e)
			}
		}
	}
}

func TestNearest(t *testing.T) {
	names := []string{"model", "prompt", "messages", "options", "temperature", "num_predict"}
	for _, tc := range []struct{ in, want string }{
		{"modle", "model"}, {"promt", "prompt"}, {"Prompt", "prompt"}, {"message", "messages"},
		{"temprature", "temperature"}, {"temperatur", "temperature"}, {"num_prdict", "num_predict"},
		{"x", ""}, {"zqxjv", ""}, {"", ""}, {"optimus", ""},
	} {
		if got := nearest(tc.in, names); got != tc.want {
			t.Errorf("nearest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// syncBuffer is a bytes.Buffer a logger may write from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (f *fakeBackend) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}
