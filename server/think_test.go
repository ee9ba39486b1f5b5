package server

import (
	"encoding/json"
	"io"
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

// TestThinkingControls: each API's thinking control reaches the Backend
// as Think and Effort (the chat template's reasoning_effort: gpt-oss's
// levels), and an assistant turn's earlier thinking comes back as its
// Thinking (what gpt-oss's template renders in a turn that calls tools).
func TestThinkingControls(t *testing.T) {
	ts := start(t, newFake(), nil)
	last := ts.last
	msgs := `[{"role":"user","content":"tell"}]`
	for _, tc := range []struct {
		name, path, body string
		think            string // "" none, "on", "off"
		effort           string
	}{
		{"ollama true", "/api/chat", `{"model":"tiny","stream":false,"think":true,"messages":` + msgs + `}`, "on", ""},
		{"ollama low", "/api/chat", `{"model":"tiny","stream":false,"think":"low","messages":` + msgs + `}`, "on", "low"},
		{"ollama generate high", "/api/generate", `{"model":"tiny","stream":false,"think":"high","prompt":"tell"}`, "on", "high"},
		{"ollama false", "/api/chat", `{"model":"tiny","stream":false,"think":false,"messages":` + msgs + `}`, "off", ""},
		{"openai none", "/v1/chat/completions", `{"model":"tiny","reasoning_effort":"none","messages":` + msgs + `}`, "off", ""},
		{"openai minimal", "/v1/chat/completions", `{"model":"tiny","reasoning_effort":"minimal","messages":` + msgs + `}`, "on", "low"},
		{"openai xhigh", "/v1/chat/completions", `{"model":"tiny","reasoning_effort":"xhigh","messages":` + msgs + `}`, "on", "high"},
		{"openai high", "/v1/chat/completions", `{"model":"tiny","reasoning_effort":"high","messages":` + msgs + `}`, "on", "high"},
		{"openai kwargs", "/v1/chat/completions", `{"model":"tiny","chat_template_kwargs":{"reasoning_effort":"medium"},"messages":` + msgs + `}`, "on", "medium"},
		{"openai unset", "/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `}`, "", ""},
		{"responses high", "/v1/responses", `{"model":"tiny","input":"tell","reasoning":{"effort":"high"}}`, "on", "high"},
		{"responses none", "/v1/responses", `{"model":"tiny","input":"tell","reasoning":{"effort":"none"}}`, "off", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.do("POST", tc.path, tc.body)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			o := last().Options
			think := ""
			if o.Think != nil {
				think = map[bool]string{true: "on", false: "off"}[*o.Think]
			}
			if think != tc.think || o.Effort != tc.effort {
				t.Errorf("think %q, effort %q; want %q, %q", think, o.Effort, tc.think, tc.effort)
			}
		})
	}
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"model":"tiny","reasoning_effort":"max","messages":` + msgs + `}`, "reasoning_effort"},
		{"/v1/responses", `{"model":"tiny","input":"tell","reasoning":{"effort":"extreme"}}`, "reasoning.effort"},
	} {
		resp := ts.do("POST", tc.path, tc.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), tc.param) {
			t.Errorf("%s: %d %s", tc.body, resp.StatusCode, b)
		}
	}

	// Earlier thinking, as each API sends it back.
	call := `{"id":"c0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	for _, tc := range []struct{ name, path, body string }{
		{"ollama", "/api/chat", `{"model":"tiny","stream":false,"tools":` + tools + `,"messages":[{"role":"user","content":"Weather?"},` +
			`{"role":"assistant","content":"","thinking":"Use the tool.","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},` +
			`{"role":"tool","content":"sunny","tool_name":"get_weather"}]}`},
		{"openai", "/v1/chat/completions", `{"model":"tiny","tools":` + tools + `,"messages":[{"role":"user","content":"Weather?"},` +
			`{"role":"assistant","content":null,"reasoning_content":"Use the tool.","tool_calls":[` + call + `]},` +
			`{"role":"tool","content":"sunny","tool_call_id":"c0"}]}`},
		{"anthropic", "/v1/messages", `{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":"Weather?"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"Use the tool.","signature":""},{"type":"tool_use","id":"c0","name":"get_weather","input":{"city":"Paris"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c0","content":"sunny"}]}]}`},
		{"responses", "/v1/responses", `{"model":"tiny","input":[{"role":"user","content":"Weather?"},` +
			`{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Use the tool."}]},` +
			`{"type":"function_call","call_id":"c0","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
			`{"type":"function_call_output","call_id":"c0","output":"sunny"}]}`},
	} {
		t.Run("history/"+tc.name, func(t *testing.T) {
			resp := ts.do("POST", tc.path, tc.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var turn *Message
			for i, m := range last().Messages {
				if m.Role == "assistant" {
					turn = &last().Messages[i]
				}
			}
			if turn == nil || turn.Thinking != "Use the tool." || len(turn.ToolCalls) != 1 || turn.ToolCalls[0].Name != "get_weather" {
				t.Errorf("assistant turn %+v", turn)
			}
		})
	}
	// A response's thinking is its turn's in the continuation.
	var r struct{ ID string }
	decode(t, ts.do("POST", "/v1/responses", `{"model":"tiny","input":"tell","reasoning":{"effort":"low"},"max_output_tokens":4}`), 200, &r)
	decode(t, ts.do("POST", "/v1/responses", `{"model":"tiny","input":"more","previous_response_id":"`+r.ID+`"}`), 200, &struct{}{})
	if m := last().Messages; len(m) != 3 || m[1].Role != "assistant" || m[1].Thinking != "Hmm, a story." || m[1].Content == "" {
		t.Errorf("continued conversation %+v", m)
	}
}
