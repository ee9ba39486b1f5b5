package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// wantLogprobs is what the fake backend's logprobs come out as in every
// dialect: its ten tokens, " upon" as two (" up", whose text is held back,
// and "on", which releases it).
var wantLogprobs = []string{"Once:-0.25", " up:-0.25", "on:-0.5", " a:-0.75", " time:-1", ",:-0.25", " there:-0.5",
	" was:-0.75", " a:-1", " cat:-0.25", ".:-0.5"}

// lpEntry is one token's logprob as Ollama and OpenAI chat write it.
type lpEntry struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	Bytes       []int   `json:"bytes"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

// checkEntries compares entries with wantLogprobs and their two
// alternatives.
func checkEntries(t *testing.T, what string, entries []lpEntry, withBytes bool) {
	t.Helper()
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s:%g", e.Token, e.Logprob))
		if len(e.TopLogprobs) != 2 || e.TopLogprobs[0].Token != "alt0" || e.TopLogprobs[1].Logprob != -0.2 {
			t.Errorf("%s: %q: top_logprobs %+v", what, e.Token, e.TopLogprobs)
		}
		if withBytes && string(intsToBytes(e.Bytes)) != e.Token {
			t.Errorf("%s: %q: bytes %v", what, e.Token, e.Bytes)
		}
	}
	if !slices.Equal(got, wantLogprobs) {
		t.Errorf("%s: logprobs %q, want %q", what, got, wantLogprobs)
	}
}

func intsToBytes(v []int) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

func TestLogprobs(t *testing.T) {
	ts := start(t, newFake(), nil)
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	t.Run("ollama", func(t *testing.T) {
		for _, path := range []string{"/api/generate", "/api/chat"} {
			body := map[string]any{"model": "tiny", "prompt": "hi", "messages": msgs, "logprobs": true, "top_logprobs": 2}
			var whole struct{ Logprobs []lpEntry }
			body["stream"] = false
			decode(t, ts.do("POST", path, body), 200, &whole)
			checkEntries(t, path, whole.Logprobs, false)
			body["stream"] = true
			var streamed []lpEntry
			for _, line := range ndjson(t, ts.do("POST", path, body)) {
				b, _ := json.Marshal(line["logprobs"])
				var part []lpEntry
				json.Unmarshal(b, &part)
				streamed = append(streamed, part...)
			}
			checkEntries(t, path+" streamed", streamed, false)
		}
	})
	t.Run("openai chat", func(t *testing.T) {
		body := map[string]any{"model": "tiny", "messages": msgs, "logprobs": true, "top_logprobs": 2}
		var whole struct {
			Choices []struct {
				Logprobs struct{ Content []lpEntry }
			}
		}
		decode(t, ts.do("POST", "/v1/chat/completions", body), 200, &whole)
		checkEntries(t, "chat", whole.Choices[0].Logprobs.Content, true)
		body["stream"] = true
		resp := ts.do("POST", "/v1/chat/completions", body)
		defer resp.Body.Close()
		var streamed []lpEntry
		for _, ev := range readSSE(t, resp.Body, 0) {
			var c struct {
				Choices []struct {
					Logprobs *struct{ Content []lpEntry }
				}
			}
			if ev.data == "[DONE]" || json.Unmarshal([]byte(ev.data), &c) != nil || len(c.Choices) == 0 || c.Choices[0].Logprobs == nil {
				continue
			}
			streamed = append(streamed, c.Choices[0].Logprobs.Content...)
		}
		checkEntries(t, "chat streamed", streamed, true)
		// Not asked for: null, as OpenAI.
		var plain map[string]any
		decode(t, ts.do("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs}), 200, &plain)
		if lp := plain["choices"].([]any)[0].(map[string]any)["logprobs"]; lp != nil {
			t.Errorf("logprobs %v without asking", lp)
		}
	})
	t.Run("openai completions", func(t *testing.T) {
		var whole struct {
			Choices []struct {
				Text     string
				Logprobs struct {
					Tokens        []string
					TokenLogprobs []float64            `json:"token_logprobs"`
					TopLogprobs   []map[string]float64 `json:"top_logprobs"`
					TextOffset    []int                `json:"text_offset"`
				}
			}
		}
		decode(t, ts.do("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "Say", "echo": true, "max_tokens": 64, "logprobs": 2}), 200, &whole)
		c := whole.Choices[0]
		// The echoed prompt's token comes first, scored (the first has
		// nothing before it: null), then the generated ones.
		if c.Logprobs.Tokens[0] != "Say" || c.Logprobs.TopLogprobs[0] != nil {
			t.Errorf("echoed prompt token %q, top %v", c.Logprobs.Tokens[0], c.Logprobs.TopLogprobs[0])
		}
		var got []string
		for i, tok := range c.Logprobs.Tokens[1:] {
			got = append(got, fmt.Sprintf("%s:%g", tok, c.Logprobs.TokenLogprobs[i+1]))
			if len(c.Logprobs.TopLogprobs[i+1]) != 2 {
				t.Errorf("token %d: top %v", i, c.Logprobs.TopLogprobs[i+1])
			}
		}
		if !slices.Equal(got, wantLogprobs) {
			t.Errorf("logprobs %q, want %q", got, wantLogprobs)
		}
		// Offsets point at each token in the echoed text.
		text := c.Text
		for i, tok := range c.Logprobs.Tokens {
			if off := c.Logprobs.TextOffset[i]; !strings.HasPrefix(text[off:], tok) {
				t.Errorf("token %q at offset %d of %q", tok, off, text)
			}
		}
	})
	t.Run("native", func(t *testing.T) {
		var job struct{ ID string }
		decode(t, ts.do("POST", "/v1/jobs", map[string]any{"model": "tiny", "prompt": "hi", "logprobs": true, "top_logprobs": 2}), 202, &job)
		resp := ts.do("GET", "/v1/jobs/"+job.ID+"/events", nil)
		defer resp.Body.Close()
		var got []string
		for _, ev := range readSSE(t, resp.Body, 0) {
			if ev.event != "token" {
				continue
			}
			var e struct {
				Token struct {
					Text    string
					Logprob *struct {
						Piece   string
						Logprob float64
						Top     []struct{ Piece string }
					}
				}
			}
			json.Unmarshal([]byte(ev.data), &e)
			if lp := e.Token.Logprob; lp == nil || len(lp.Top) != 2 {
				t.Fatalf("token event %s without logprob and two alternatives", ev.data)
			} else {
				got = append(got, fmt.Sprintf("%s:%g", lp.Piece, lp.Logprob))
			}
		}
		if !slices.Equal(got, wantLogprobs) {
			t.Errorf("logprobs %q, want %q", got, wantLogprobs)
		}
	})
	t.Run("bad", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			body map[string]any
			want string
		}{
			{"/api/generate", map[string]any{"model": "tiny", "prompt": "hi", "logprobs": true, "top_logprobs": 21}, "top_logprobs is 21, outside 0..20"},
			{"/api/chat", map[string]any{"model": "tiny", "messages": msgs, "top_logprobs": 3}, "top_logprobs needs logprobs: true"},
			{"/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "logprobs": true, "top_logprobs": 2.5}, "top_logprobs is -1"},
			{"/v1/completions", map[string]any{"model": "tiny", "prompt": "x", "logprobs": 6}, "logprobs is 6, not an integer 0..5"},
			{"/v1/jobs", map[string]any{"model": "tiny", "prompt": "x", "top_logprobs": 1}, "needs logprobs"},
		} {
			resp := ts.do("POST", tc.path, tc.body)
			var b strings.Builder
			buf := make([]byte, 4096)
			n, _ := resp.Body.Read(buf)
			b.Write(buf[:n])
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(b.String(), tc.want) {
				t.Errorf("%s %v: %d %s, want 400 with %q", tc.path, tc.body, resp.StatusCode, b.String(), tc.want)
			}
		}
	})
}
