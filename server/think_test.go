package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestThinking: a reasoning model's thinking reaches each dialect apart
// from the answer (Ollama's thinking, OpenAI's reasoning_content, the jobs
// API's result), streamed and whole; think reaches the Backend.
func TestThinking(t *testing.T) {
	ts := start(t, newFake(), nil)
	last := ts.last
	const answer = "Once upon a time"
	msgs := `[{"role":"user","content":"tell"}]`
	t.Run("ollama", func(t *testing.T) {
		var r struct {
			Message struct{ Content, Thinking string }
		}
		decode(t, ts.do("POST", "/api/chat", `{"model":"tiny","stream":false,"think":true,"options":{"num_predict":4},"messages":`+msgs+`}`), 200, &r)
		if r.Message.Thinking != "Hmm, a story." || r.Message.Content != answer {
			t.Errorf("message %+v", r.Message)
		}
		if th := last().Options.Think; th == nil || !*th {
			t.Errorf("think %v did not reach the backend", th)
		}
		var think, content strings.Builder
		for _, line := range ndjson(t, ts.do("POST", "/api/chat", `{"model":"tiny","think":"high","options":{"num_predict":4},"messages":`+msgs+`}`)) {
			m, _ := line["message"].(map[string]any)
			if th, _ := m["thinking"].(string); th != "" {
				think.WriteString(th)
			}
			if c, _ := m["content"].(string); c != "" {
				content.WriteString(c)
			}
		}
		if think.String() != "Hmm, a story." || content.String() != answer {
			t.Errorf("streamed thinking %q, content %q", think.String(), content.String())
		}
		var g struct{ Response, Thinking string }
		decode(t, ts.do("POST", "/api/generate", `{"model":"tiny","prompt":"tell","stream":false,"think":true,"options":{"num_predict":4}}`), 200, &g)
		if g.Thinking != "Hmm, a story." || g.Response != answer {
			t.Errorf("generate %+v", g)
		}
		decode(t, ts.do("POST", "/api/chat", `{"model":"tiny","stream":false,"think":false,"options":{"num_predict":4},"messages":`+msgs+`}`), 200, &r)
		if th := last().Options.Think; th == nil || *th {
			t.Errorf("think false reached the backend as %v", th)
		}
	})
	t.Run("openai", func(t *testing.T) {
		var r struct {
			Choices []struct {
				Message struct {
					Content          string
					ReasoningContent string `json:"reasoning_content"`
				}
			}
		}
		decode(t, ts.do("POST", "/v1/chat/completions", `{"model":"tiny","max_tokens":4,"chat_template_kwargs":{"enable_thinking":true},"messages":`+msgs+`}`), 200, &r)
		if m := r.Choices[0].Message; m.ReasoningContent != "Hmm, a story." || m.Content != answer {
			t.Errorf("message %+v", m)
		}
		resp := ts.do("POST", "/v1/chat/completions", `{"model":"tiny","max_tokens":4,"stream":true,"chat_template_kwargs":{"enable_thinking":true},"messages":`+msgs+`}`)
		defer resp.Body.Close()
		var think, content strings.Builder
		for _, ev := range readSSE(t, resp.Body, 0) {
			var c struct {
				Choices []struct {
					Delta struct {
						Content          *string
						ReasoningContent string `json:"reasoning_content"`
					}
				}
			}
			if json.Unmarshal([]byte(ev.data), &c) != nil || len(c.Choices) == 0 {
				continue
			}
			think.WriteString(c.Choices[0].Delta.ReasoningContent)
			if p := c.Choices[0].Delta.Content; p != nil {
				content.WriteString(*p)
			}
		}
		if think.String() != "Hmm, a story." || content.String() != answer {
			t.Errorf("streamed reasoning %q, content %q", think.String(), content.String())
		}
	})
	t.Run("bad think", func(t *testing.T) {
		resp := ts.do("POST", "/api/chat", `{"model":"tiny","think":"yes","messages":`+msgs+`}`)
		b := make([]byte, 2048)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b[:n]), "think must be true or false") {
			t.Errorf("%d %s", resp.StatusCode, b[:n])
		}
	})
}
