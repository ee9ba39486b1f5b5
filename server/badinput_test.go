package server

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBadInput sends malformed and absurd requests to every dialect and
// checks the status, the stage and the message.
func TestBadInput(t *testing.T) {
	ts := start(t, newFake(), func(c *Config) { c.MaxBodyBytes = 1 << 16 })
	long := strings.Repeat("word ", 100)
	huge := `{"model":"tiny","prompt":"` + strings.Repeat("x", 1<<17) + `"}`
	tests := []struct {
		name, path, body string
		status           int
		stage, contains  string
	}{
		{"ollama malformed", "/api/generate", `{"model": "tiny", "prompt": `, 400, "deliver", "malformed JSON"},
		{"ollama syntax", "/api/generate", `{"model": tiny}`, 400, "deliver", "at byte 12"},
		{"ollama empty body", "/api/chat", ``, 400, "deliver", "body is empty"},
		{"ollama wrong type", "/api/generate", `{"model": 3}`, 400, "deliver", `field "model"`},
		{"ollama trailing data", "/api/generate", `{"model":"tiny"} {}`, 400, "deliver", "extra data"},
		{"ollama no model", "/api/generate", `{"prompt":"hi"}`, 400, "deliver", "model is required"},
		{"ollama unknown model", "/api/generate", `{"model":"nope","prompt":"hi"}`, 404, "load", `"nope"`},
		{"ollama unknown model chat", "/api/chat", `{"model":"nope","messages":[{"role":"user","content":"x"}],"stream":false}`, 404, "load", "not found"},
		{"ollama negative num_predict", "/api/generate", `{"model":"tiny","prompt":"hi","options":{"num_predict":-5}}`, 400, "deliver", "options.num_predict is -5"},
		{"ollama absurd num_ctx", "/api/generate", `{"model":"tiny","prompt":"hi","options":{"num_ctx":1e12}}`, 400, "deliver", "options.num_ctx"},
		{"ollama top_p > 1", "/api/generate", `{"model":"tiny","prompt":"hi","options":{"top_p":1.5}}`, 400, "deliver", "options.top_p is 1.5"},
		{"ollama temperature string", "/api/generate", `{"model":"tiny","prompt":"hi","options":{"temperature":"hot"}}`, 400, "deliver", "must be a number"},
		{"ollama fractional top_k", "/api/generate", `{"model":"tiny","prompt":"hi","options":{"top_k":2.5}}`, 400, "deliver", "whole number"},
		{"ollama stop not strings", "/api/generate", `{"model":"tiny","prompt":"hi","options":{"stop":[1]}}`, 400, "deliver", "options.stop[0]"},
		{"ollama bad keep_alive", "/api/generate", `{"model":"tiny","prompt":"hi","keep_alive":"soon"}`, 400, "deliver", "keep_alive"},
		{"ollama bad role", "/api/chat", `{"model":"tiny","messages":[{"role":"wizard","content":"x"}]}`, 400, "deliver", `"wizard"`},
		{"ollama prompt too long", "/api/generate", `{"model":"tiny","prompt":"` + long + `"}`, 400, "encode", "100 tokens but the context holds 64"},
		{"ollama body too large", "/api/generate", huge, 413, "deliver", "exceeds the limit of 65536 bytes"},
		{"ollama format schema pattern", "/api/generate", `{"model":"tiny","prompt":"hi","format":{"type":"object","properties":{"zip":{"type":"string","pattern":"^(?<z>[0-9]+)$"}}}}`, 400, "deliver", `at #/properties/zip: pattern "^(?<z>[0-9]+)$" at byte 2: lookarounds (but at the start, after ^) and named groups are not supported`},
		{"ollama format schema broken", "/api/generate", `{"model":"tiny","prompt":"hi","format":{"$ref":"#/$defs/missing"}}`, 400, "deliver", "points at nothing"},
		{"ollama format yaml", "/api/generate", `{"model":"tiny","prompt":"hi","format":"yaml"}`, 400, "deliver", `"json" or a JSON schema`},
		{"openai response_format schema missing", "/v1/chat/completions", `{"model":"tiny","response_format":{"type":"json_schema"},"messages":[{"role":"user","content":"x"}]}`, 400, "deliver", "needs json_schema.schema"},
		{"openai response_format schema unsupported", "/v1/chat/completions", `{"model":"tiny","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"number","not":{"const":2}}}},"messages":[{"role":"user","content":"x"}]}`, 400, "deliver", `keyword "not" is not supported`},
		{"openai response_format other", "/v1/chat/completions", `{"model":"tiny","response_format":{"type":"grammar"},"messages":[{"role":"user","content":"x"}]}`, 400, "deliver", "json_schema are"},
		{"native format", "/v1/jobs", `{"model":"tiny","prompt":"x","format":"xml"}`, 400, "deliver", "format"},
		{"openai malformed", "/v1/chat/completions", `{"model":`, 400, "deliver", "malformed JSON"},
		{"openai no messages", "/v1/chat/completions", `{"model":"tiny","messages":[]}`, 400, "deliver", "at least one message"},
		{"openai unknown model", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "load", `"nope"`},
		{"openai unknown model stream", "/v1/chat/completions", `{"model":"nope","stream":true,"messages":[{"role":"user","content":"x"}]}`, 404, "load", `"nope"`},
		{"openai temperature", "/v1/chat/completions", `{"model":"tiny","temperature":3,"messages":[{"role":"user","content":"x"}]}`, 400, "deliver", "temperature is 3"},
		{"openai n", "/v1/chat/completions", `{"model":"tiny","n":9,"messages":[{"role":"user","content":"x"}]}`, 400, "deliver", "n is 9, not an integer 1..8"},
		{"openai n fraction", "/v1/completions", `{"model":"tiny","n":1.5,"prompt":"x"}`, 400, "deliver", "not an integer"},
		{"openai max_tokens", "/v1/chat/completions", `{"model":"tiny","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, 400, "deliver", "max_tokens is 0"},
		{"openai image part", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "deliver", "image_url"},
		{"openai prompt too long", "/v1/completions", `{"model":"tiny","prompt":"` + long + `"}`, 400, "encode", "100 tokens"},
		{"openai two prompts", "/v1/completions", `{"model":"tiny","prompt":["a","b"]}`, 400, "deliver", "one prompt per request"},
		{"openai body too large", "/v1/completions", huge, 413, "deliver", "exceeds the limit"},
		{"native malformed", "/v1/jobs", `{"model":"tiny",`, 400, "deliver", "malformed JSON"},
		{"native no prompt", "/v1/jobs", `{"model":"tiny"}`, 400, "deliver", "prompt or messages"},
		{"native absurd", "/v1/jobs", `{"model":"tiny","prompt":"x","options":{"repeat_penalty":1000}}`, 400, "deliver", "repeat_penalty"},
		{"native unknown endpoint", "/v1/nope", `{}`, 404, "deliver", "no such endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.do("POST", tc.path, tc.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			var stage, msg string
			switch dialectOf(tc.path) {
			case dialectOllama:
				var e ollamaError
				json.Unmarshal(b, &e)
				stage, msg = e.Stage, e.Error
				if !strings.HasPrefix(msg, stage+": ") {
					t.Errorf("message %q does not start with the stage", msg)
				}
			case dialectOpenAI:
				var e openAIError
				json.Unmarshal(b, &e)
				stage, msg = e.Error.Stage, e.Error.Message
				if e.Error.Type == "" || e.Error.Code == nil {
					t.Errorf("OpenAI error without type or code: %s", b)
				}
			default:
				var e nativeError
				json.Unmarshal(b, &e)
				stage, msg = e.Error.Stage, e.Error.Message
			}
			if stage != tc.stage || !strings.Contains(msg, tc.contains) {
				t.Errorf("stage %q message %q; want stage %q containing %q", stage, msg, tc.stage, tc.contains)
			}
		})
	}
	if running, _, _ := ts.f.stats(); running != 0 {
		t.Errorf("%d generations left running", running)
	}
}

// TestSlowClient: a client that sends its headers or body too slowly is cut
// off by the read timeout with a 408 naming the stage.
func TestSlowClient(t *testing.T) {
	ts := start(t, newFake(), func(c *Config) { c.ReadTimeout = 200 * time.Millisecond })
	addr := strings.TrimPrefix(ts.url, "http://")
	t.Run("body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":")
		c.SetReadDeadline(time.Now().Add(patience))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "deliver: request body not received within 200ms") {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("headers", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		c.SetReadDeadline(time.Now().Add(patience))
		// The server closes the connection: the read ends without an
		// error, long before the client's own deadline.
		if _, err = io.ReadAll(c); err != nil {
			t.Errorf("connection not closed by the server: %v", err)
		}
	})
}

// TestBasicAuth: with an API key, HTTP Basic auth whose password is the
// key (any user name, as Open WebUI's AUTOMATIC1111 "API auth" user:KEY
// sends it) is as good as the Bearer key; any other Basic credential is
// a 401 whose WWW-Authenticate names both schemes (to a browser only
// Bearer's, so it opens no login dialog of its own).
func TestBasicAuth(t *testing.T) {
	f := newImageFake(t)
	ts := start(t, f.fakeBackend, func(c *Config) { c.Backend, c.APIKey = f, "sek:rit" })
	basic := func(cred string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(cred)) }
	for _, tc := range []struct {
		name, auth string
		browser    bool
		ok         bool
	}{
		{"Open WebUI's user:key", basic("admin:sek:rit"), false, true},
		{"no user name", basic(":sek:rit"), false, true},
		{"lower-case scheme", "basic " + base64.StdEncoding.EncodeToString([]byte("u:sek:rit")), false, true},
		{"from a page", basic("u:sek:rit"), true, true},
		{"Bearer", "Bearer sek:rit", false, true},
		{"wrong password", basic("admin:sek:rat"), false, false},
		{"the key as user name", basic("sek:rit:"), false, false},
		{"no colon", basic("sek"), false, false},
		{"the key as user, no password", basic("sek:"), false, false},
		{"empty", basic(""), false, false},
		{"not base64", "Basic %%%", false, false},
		{"unencoded", "Basic admin:sek:rit", false, false},
		{"nothing", "", false, false},
		{"wrong, from a page", basic("u:nope"), true, false},
	} {
		for _, path := range []string{"/sdapi/v1/sd-models", "/v1/models", "/api/tags"} {
			t.Run(tc.name+path, func(t *testing.T) {
				hdr := []string{"Authorization", tc.auth}
				if tc.browser {
					hdr = append(hdr, "Sec-Fetch-Site", "same-origin")
				}
				resp := ts.do("GET", path, nil, hdr...)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if (resp.StatusCode == 200) != tc.ok || !tc.ok && resp.StatusCode != 401 {
					t.Fatalf("%d %s, want ok %v", resp.StatusCode, b, tc.ok)
				}
				if tc.ok {
					return
				}
				want := []string{`Bearer realm="glassbox"`, `Basic realm="glassbox", charset="UTF-8"`}
				if tc.browser {
					want = want[:1]
				}
				if got := resp.Header.Values("WWW-Authenticate"); !slices.Equal(got, want) {
					t.Errorf("WWW-Authenticate %q, want %q", got, want)
				}
				if !strings.Contains(string(b), "Basic auth with the key as the password") {
					t.Errorf("401 does not say how to send the key: %s", b)
				}
			})
		}
	}
}

func TestAuth(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page")) })
	ts := start(t, newFake(), func(c *Config) { c.APIKey = "sekrit"; c.UI = page })
	var e openAIError
	decode(t, ts.do("GET", "/v1/models", nil), 401, &e)
	if e.Error.Type != "authentication_error" {
		t.Errorf("%+v", e)
	}
	decode(t, ts.do("GET", "/v1/models", nil, "Authorization", "Bearer wrong"), 401, nil)
	decode(t, ts.do("GET", "/v1/models", nil, "Authorization", "Bearer sekrit"), 200, nil)
	decode(t, ts.do("GET", "/healthz", nil), 200, nil)
	// The page's static files are public; its API calls are not.
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/", 200}, {"GET", "/ui/app.js", 200}, {"POST", "/", 401},
		{"GET", "/v1/jobs", 401},
		{"GET", "/v1/jobs/x/events?access_token=wrong", 401},
		{"GET", "/v1/jobs/x/events?access_token=sekrit", 404}, // authorized; no such job
		{"GET", "/v1/jobs/x/video?access_token=wrong", 401},
		{"GET", "/v1/jobs/x/video?access_token=sekrit", 501}, // authorized; the fake makes no videos
		{"GET", "/v1/jobs?access_token=sekrit", 401},         // the query key is for event streams, images and videos only
	} {
		resp := ts.do(tc.method, tc.path, nil)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s: HTTP %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
		}
	}

	for _, tc := range []struct {
		addr, key string
		ok        bool
	}{
		{"127.0.0.1:8765", "", true}, {"[::1]:8765", "", true}, {"localhost:1", "", true},
		{"0.0.0.0:8765", "", false}, {":8765", "", false}, {"0.0.0.0:8765", "k", true}, {"nonsense", "", false},
	} {
		if err := CheckBind(tc.addr, tc.key); (err == nil) != tc.ok {
			t.Errorf("CheckBind(%q, %q) = %v", tc.addr, tc.key, err)
		}
	}
}
