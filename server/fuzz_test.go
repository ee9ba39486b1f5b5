package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/pipeline"
)

// FuzzRequests sends arbitrary bodies, Hosts, Origins and content types
// to every endpoint that reads a body, as to a server on 127.0.0.1:8765:
// the server must answer every one with JSON (or a stream) and never
// with an internal error (a recovered panic), must refuse a foreign Host
// and a foreign page's request, must never hand CORS headers to an origin
// it does not allow, and must refuse only a browser's body for its type.
func FuzzRequests(f *testing.F) {
	seeds := []string{
		`{"model":"tiny","prompt":"hi","stream":false}`,
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"options":{"temperature":0.5,"stop":["a"]}}`,
		`{"model":"tiny","prompt":"x","keep_alive":"5m","options":{"num_predict":2,"seed":-1}}`,
		`{"model":"tiny","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_tokens":2,"stop":"a"}`,
		`{"model":"tiny","prompt":["x"],"max_tokens":1,"echo":true}`,
		`{"model":"tiny","ctx":10}`, `{"keep_alive":1e300}`, `[]`, `null`, `{"options":{"top_k":1e400}}`, "\xff",
		`{"model":"tiny","prompt":"x","format":{"type":"object","properties":{"a":{"$ref":"#"}}},"logprobs":true,"top_logprobs":3,"think":true}`,
		`{"model":"tiny","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"1"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required","logit_bias":{"3":-100}}`,
		`{"model":"tiny","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"enum":[1,"a"]}}},"chat_template_kwargs":{"enable_thinking":false}}`,
		`{"model":"tiny","prompt":"x","logprobs":2,"best_of":1}`,
		`{"model":"tiny","input":["a","b c"],"truncate":true,"dimensions":2,"options":{"num_ctx":8}}`,
		`{"model":"tiny","input":[[1,2],[3]],"encoding_format":"base64"}`, `{"model":"tiny","input":"a","pooling":"last","normalize":false}`,
		`{"model":"hf.co/o/r:Q4_K_M","stream":false}`, `{"name":"bad/ref"}`,
		`{"model":"mario","from":"tiny","system":"s","parameters":{"temperature":0.2,"stop":["a"]},"stream":false}`,
		`{"model":"luigi","modelfile":"FROM tiny\nPARAMETER num_ctx 64\nSYSTEM \"\"\"x\"\"\"","license":["a","b"]}`,
		`{"model":"tiny","input":[{"role":"developer","content":"d"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}],"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"},"stream":true}`,
		`{"model":"tiny","input":"hi","instructions":"i","reasoning":{"effort":"high"},"text":{"format":{"type":"json_schema","schema":{"type":"object"}}},"previous_response_id":"resp_x","max_output_tokens":2}`,
		`{"model":"tiny","prompt":[1,"a<s>",2],"n_predict":2,"n_probs":2,"logit_bias":{"5":false},"return_tokens":true,"stream":true,"content":"a<s>","with_pieces":true,"tokens":[1,2,256],"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"tiny","input_prefix":"def f(","input_suffix":"\n","input_extra":[{"filename":"a.py","text":"x=1"},{}],"prompt":"x","suffix":"y","n_predict":2}`,
		`{"model":"tiny","max_tokens":3,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},"stream":true}`,
	}
	for _, s := range seeds {
		f.Add(s, "127.0.0.1:8765", "", "application/json")
	}
	// Hostile pages: DNS rebinding, simple cross-site requests, sandboxed
	// frames, lookalike names, and a body sent as a form.
	job := `{"model":"tiny","prompt":"hi","stream":false}`
	for _, h := range [][3]string{
		{"evil.example:8765", "", "text/plain"},
		{"evil.example:8765", "http://evil.example:8765", "application/json"},
		{"localhost:8765", "https://evil.example", "text/plain;charset=UTF-8"},
		{"127.0.0.1:8765", "null", "multipart/form-data; boundary=x"},
		{"127.0.0.1:8765", "http://127.0.0.1:8765", "application/x-www-form-urlencoded"},
		{"127.0.0.1:8765", "http://127.0.0.1:8765", ""},
		{"[::1]:8765", "http://localhost:3000", "application/json; charset=utf-8"},
		{"localhost.evil.example", "http://localhost.evil.example", "application/json"},
		{"127.0.0.1.nip.io:8765", "", ""},
		{"0x7f.1:8765", "tauri://localhost", "application/vnd.x+json"},
		{"LOCALHOST.:8765", "HTTP://LOCALHOST:8765", "Application/JSON"},
		{"", "https://app.localhost", "text/json"},
		{"127.0.0.1:8765", "https://a.tools.example", "application/json"},
		{"127.0.0.1:8765", "https://tools.example.evil.example", "application/json"},
		{"127.0.0.1:8765", "http://[::1", "application/json"},
		{"127.0.0.1:8765", "https://app.example:99999999999999999999", "application/json"},
	} {
		f.Add(job, h[0], h[1], h[2])
	}
	fb := newFake()
	fb.maxTokens = 3
	m := pipeline.NewManager(pipeline.Options{})
	allowed := []string{"https://*.tools.example", "http://192.168.1.20:*"}
	s, err := New(Config{Backend: fb, Jobs: &ManagerJobs{M: m}, MaxBodyBytes: 1 << 16, ShutdownGrace: time.Second,
		AllowOrigins: allowed, MaxBlobBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	paths := []string{"/api/generate", "/api/chat", "/api/show", "/v1/chat/completions", "/v1/completions",
		"/v1/jobs", "/v1/plan", "/v1/ps/tiny/load", "/api/embed", "/api/embeddings", "/v1/embeddings", "/api/pull", "/api/create", "/v1/messages", "/v1/responses", "/completion", "/infill", "/embedding", "/tokenize", "/detokenize", "/apply-template", "/api/blobs/sha256:0000000000000000000000000000000000000000000000000000000000000000"}
	patterns, _ := parseOriginPatterns(allowed)
	f.Fuzz(func(t *testing.T, body, host, origin, ctype string) {
		for _, p := range paths {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", p, strings.NewReader(body))
			req = req.WithContext(withListener(req.Context(), "127.0.0.1:8765"))
			req.Host = host
			for k, v := range map[string]string{"Origin": origin, "Content-Type": ctype} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			h.ServeHTTP(rec, req)
			out := rec.Body.String()
			what := fmt.Sprintf("POST %s %q (Host %q, Origin %q, Content-Type %q)", p, body, host, origin, ctype)
			if rec.Code == http.StatusInternalServerError || strings.Contains(out, "a bug in glassbox") {
				t.Fatalf("%s: %d %s", what, rec.Code, out)
			}
			if ct := rec.Header().Get("Content-Type"); strings.HasPrefix(ct, "application/json") && !json.Valid([]byte(out)) {
				t.Fatalf("%s: invalid JSON %s", what, out)
			}
			if rec.Code == http.StatusUnsupportedMediaType && origin == "" {
				t.Fatalf("%s: 415 for a client that is no browser", what)
			}
			if rec.Code == http.StatusForbidden {
				if rec.Header().Get("Access-Control-Allow-Origin") != "" {
					t.Fatalf("%s: a refused page given CORS headers", what)
				}
				continue
			}
			if host != "" && !loopbackHost(host) {
				t.Fatalf("%s: answered %d for a foreign Host", what, rec.Code)
			}
			scheme, ohost, ok := parseOrigin(origin)
			lower := strings.ToLower(origin)
			allowed := ok && defaultOrigin(scheme, ohost) || patterns.match(lower)
			if origin != "" && !(ok && strings.EqualFold(ohost, host)) && !allowed {
				t.Fatalf("%s: answered %d for a foreign page", what, rec.Code)
			}
			if acao := rec.Header().Get("Access-Control-Allow-Origin"); acao != "" && (acao != origin || !allowed) {
				t.Fatalf("%s: Access-Control-Allow-Origin %q", what, acao)
			}
		}
	})
}

func FuzzKeepAlive(f *testing.F) {
	for _, s := range []string{`"5m"`, `0`, `-1`, `"-1"`, `"1.5"`, `3600`, `"1h30m"`, `true`, `1e999`, `"9999999999h"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		d, e := parseKeepAlive(json.RawMessage(raw))
		if e != nil {
			if e.Status != 400 || e.Stage != "deliver" {
				t.Fatalf("%q: error %+v", raw, e)
			}
			return
		}
		if d != nil && *d < -1 {
			t.Fatalf("%q: keep-alive %v below -1 (forever)", raw, *d)
		}
	})
}
