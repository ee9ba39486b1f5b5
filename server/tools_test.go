package server

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/chat"
)

const weatherTools = `[{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
	"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
	{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}]`

// addParams is weatherTools' second parameters schema, compacted.
const addParams = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`

func TestTools(t *testing.T) {
	ts := start(t, newFake(), nil)
	last := ts.last
	t.Run("ollama", func(t *testing.T) {
		body := `{"model": "tiny", "stream": false, "options": {"num_predict": 3}, "tools": ` + weatherTools + `,
			"messages": [{"role": "user", "content": "Weather in Paris?"},
				{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
				{"role": "tool", "tool_name": "get_weather", "content": "sunny"}]}`
		var r struct {
			Message struct {
				Content   string
				ToolCalls []struct {
					Function struct {
						Name      string
						Arguments map[string]any
					}
				} `json:"tool_calls"`
			}
			DoneReason string `json:"done_reason"`
		}
		decode(t, ts.do("POST", "/api/chat", body), 200, &r)
		if len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].Function.Name != "get_weather" || r.Message.ToolCalls[0].Function.Arguments["city"] != "Paris" {
			t.Errorf("reply %+v: want a get_weather call", r)
		}
		req := last()
		if string(req.Tools) == "" || req.ToolChoice != "auto" || strings.Join(req.ToolNames, ",") != "get_weather,add" {
			t.Errorf("request tools %s, choice %q, names %v", req.Tools, req.ToolChoice, req.ToolNames)
		}
		if m := req.Messages[1]; len(m.ToolCalls) != 1 || string(m.ToolCalls[0].Arguments) != `{"city": "Paris"}` {
			t.Errorf("history's call %+v", m)
		}
		if m := req.Messages[2]; m.Role != "tool" || m.Name != "get_weather" {
			t.Errorf("tool turn %+v", m)
		}
		// Streamed: the text before the call as it comes (not the call's
		// own text), the call in one chunk, then done.
		lines := ndjson(t, ts.do("POST", "/api/chat", strings.Replace(body, `"stream": false`, `"stream": true`, 1)))
		var content strings.Builder
		for _, l := range lines[:max(len(lines)-2, 0)] {
			m := l["message"].(map[string]any)
			if m["tool_calls"] != nil {
				t.Fatalf("stream %v: a call before the last chunks", lines)
			}
			content.WriteString(m["content"].(string))
		}
		n := len(lines)
		if n < 4 || lines[n-2]["message"].(map[string]any)["tool_calls"] == nil || lines[n-1]["done"] != true ||
			content.String() != r.Message.Content || strings.Contains(content.String(), "tool_call") {
			t.Errorf("stream %v: want the content %q in chunks, the call, then done", lines, r.Message.Content)
		}
	})
	t.Run("openai", func(t *testing.T) {
		body := map[string]any{"model": "tiny", "max_tokens": 3, "tools": json.RawMessage(weatherTools),
			"messages": []any{
				map[string]any{"role": "user", "content": "Weather in Paris?"},
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
					"function": map[string]any{"name": "get_weather", "arguments": `{"city": "Paris"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": "c1", "content": "sunny"}}}
		var r struct {
			Choices []struct {
				Message struct {
					Content   *string
					ToolCalls []struct {
						ID       string
						Type     string
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason string `json:"finish_reason"`
			}
		}
		decode(t, ts.do("POST", "/v1/chat/completions", body), 200, &r)
		c := r.Choices[0]
		if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` ||
			c.Message.ToolCalls[0].Type != "function" || c.Message.ToolCalls[0].ID != "call_0" {
			t.Errorf("choice %+v: want a get_weather call with arguments as a JSON string", c)
		}
		req := last()
		if m := req.Messages[1]; len(m.ToolCalls) != 1 || string(m.ToolCalls[0].Arguments) != `{"city": "Paris"}` || m.ToolCalls[0].ID != "c1" {
			t.Errorf("history's call %+v: arguments sent as a string are read as the object", m)
		}
		if m := req.Messages[2]; m.ToolCallID != "c1" {
			t.Errorf("tool turn %+v", m)
		}
		body["stream"] = true
		resp := ts.do("POST", "/v1/chat/completions", body)
		defer resp.Body.Close()
		var calls, finish int
		for _, ev := range readSSE(t, resp.Body, 0) {
			if strings.Contains(ev.data, `"tool_calls":[{"index":0,"id":"call_0"`) {
				calls++
			}
			if strings.Contains(ev.data, `"finish_reason":"tool_calls"`) {
				finish++
			}
		}
		if calls != 1 || finish != 1 {
			t.Errorf("stream: %d call chunks, %d tool_calls finishes; want 1 and 1", calls, finish)
		}
	})
	t.Run("tool_choice", func(t *testing.T) {
		msgs := []any{map[string]any{"role": "user", "content": "hi"}}
		for _, tc := range []struct {
			choice any
			format string
		}{
			{"required", `{"anyOf":[{"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},"required":["name","arguments"]},` +
				`{"type":"object","properties":{"name":{"const":"add"},"arguments":` + addParams + `},"required":["name","arguments"]}]}`},
			{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}},
				`{"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},"required":["name","arguments"]}`},
			{"auto", ""},
			{"none", ""},
		} {
			var r map[string]any
			decode(t, ts.do("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "tools": json.RawMessage(weatherTools), "tool_choice": tc.choice}), 200, &r)
			if got := last().Options.Format; got != tc.format {
				t.Errorf("tool_choice %v: format %s, want %s", tc.choice, got, tc.format)
			}
		}
	})
	t.Run("bad", func(t *testing.T) {
		msgs := `[{"role":"user","content":"x"}]`
		for _, tc := range []struct{ path, body, want string }{
			{"/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `,"tools":[{"type":"function","function":{}}]}`, "function.name is required"},
			{"/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `,"tools":[{"type":"retrieval"}]}`, `type "retrieval" is not supported`},
			{"/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `,"tools":` + weatherTools + `,"tool_choice":"always"}`, `tool_choice "always"`},
			{"/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `,"tools":` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`, `"nope", which is not among the tools`},
			{"/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `,"tool_choice":"required"}`, "needs tools"},
			{"/v1/chat/completions", `{"model":"tiny","messages":` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"d":{"type":"array","uniqueItems":true}}}}}],"tool_choice":"required"}`, `forcing a call to tool "f"'s parameters: JSON schema at #/properties/arguments/properties/d: uniqueItems is supported for arrays of enum`},
			{"/api/chat", `{"model":"tiny","messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":[1]}}]}]}`, "arguments must be a JSON object"},
		} {
			resp := ts.do("POST", tc.path, tc.body)
			b := make([]byte, 4096)
			n, _ := resp.Body.Read(b)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(strings.ReplaceAll(string(b[:n]), `\"`, `"`), tc.want) {
				t.Errorf("%s %s: %d %s, want 400 with %q", tc.path, tc.body, resp.StatusCode, b[:n], tc.want)
			}
		}
	})
}

// TestLogitBias: OpenAI's logit_bias reaches the Backend as token ids;
// keys that are not ids, biases outside −100..100 and best_of > 1 are 400s.
func TestLogitBias(t *testing.T) {
	ts := start(t, newFake(), nil)
	var r map[string]any
	decode(t, ts.do("POST", "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":2,"logit_bias":{"42":-100,"7":5.5}}`), 200, &r)
	ts.f.mu.Lock()
	got := ts.f.requests[len(ts.f.requests)-1].Options.LogitBias
	ts.f.mu.Unlock()
	if len(got) != 2 || got[42] != -100 || got[7] != 5.5 {
		t.Errorf("logit bias %v", got)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"model":"tiny","prompt":"x","logit_bias":{"a":1}}`, `logit_bias key "a" is not a token id`},
		{`{"model":"tiny","prompt":"x","logit_bias":{"3":101}}`, "outside -100..100"},
		{`{"model":"tiny","prompt":"x","best_of":3}`, "best_of is 3"},
	} {
		resp := ts.do("POST", "/v1/completions", tc.body)
		b := make([]byte, 2048)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(strings.ReplaceAll(string(b[:n]), `\"`, `"`), tc.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.body, resp.StatusCode, b[:n], tc.want)
		}
	}
}

// TestUnsupportedSamplers: Ollama's mirostat, typical_p and tfs_z are
// accepted at their "off" values and refused at any other.
func TestUnsupportedSamplers(t *testing.T) {
	ts := start(t, newFake(), nil)
	var r map[string]any
	decode(t, ts.do("POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"options":{"mirostat":0,"typical_p":1,"tfs_z":1,"num_predict":1}}`), 200, &r)
	for _, opt := range []string{`"mirostat":2`, `"typical_p":0.9`, `"tfs_z":0.5`} {
		resp := ts.do("POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"options":{`+opt+`}}`)
		b := make([]byte, 2048)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b[:n]), "is not supported") {
			t.Errorf("%s: %d %s", opt, resp.StatusCode, b[:n])
		}
	}
}

// TestToolStream: however a reply is cut into tokens, the streamed text
// holds no part of a call, and the streamed text with the rest sent at the
// end is the content the parser leaves.
func TestToolStream(t *testing.T) {
	names := []string{"get_weather"}
	call := `{"name": "get_weather", "arguments": {"city": "Paris"}}`
	for _, reply := range []string{
		"Sunny, 21 degrees.",
		"Let me check.\n<tool_call>\n" + call + "\n</tool_call>",
		"<tool_call>" + call + "</tool_call>\nDone.",
		"  " + call,
		"[TOOL_CALLS][" + call + "]",
		"Checking <|python_tag|>" + call,
		"I would use <tool_call> but I will not.", // a marker without a call stays content
		"Less than < and [ brackets",
		"{not json",
	} {
		content, calls := chat.ParseToolCalls(reply, names)
		rng := rand.New(rand.NewPCG(5, uint64(len(reply))))
		for trial := range 40 {
			var ts toolStream
			var sent strings.Builder
			for rest := reply; rest != ""; {
				n := 1 + rng.IntN(min(len(rest), 6))
				if trial == 0 {
					n = len(rest)
				}
				out := ts.push(delta{Text: rest[:n]})
				sent.WriteString(out.Text)
				rest = rest[n:]
			}
			if len(calls) > 0 && (strings.Contains(sent.String(), "get_weather") || strings.ContainsAny(sent.String(), "{")) {
				t.Fatalf("%q: streamed %q, part of a call", reply, sent.String())
			}
			if got := sent.String() + ts.rest(content); strings.TrimSpace(got) != content {
				t.Fatalf("%q (trial %d): streamed %q then %q; the content is %q", reply, trial, sent.String(), ts.rest(content), content)
			}
		}
	}
}
