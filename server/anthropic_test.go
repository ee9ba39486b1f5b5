package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestAnthropicMessages: /v1/messages in Anthropic's dialect — the
// conversation and options it builds, whole and streamed replies, tool
// use both ways, and its errors.
func TestAnthropicMessages(t *testing.T) {
	ts := start(t, newFake(), nil)
	last := ts.last
	t.Run("whole", func(t *testing.T) {
		var r anthropicResponse
		decode(t, ts.do("POST", "/v1/messages", map[string]any{"model": "tiny", "max_tokens": 4, "system": "Be brief.",
			"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "temperature": 0.5, "top_k": 7, "stop_sequences": []string{"END"}}), 200, &r)
		if r.Type != "message" || r.Role != "assistant" || !strings.HasPrefix(r.ID, "msg_") || len(r.Content) != 1 || r.Content[0].Type != "text" ||
			r.Content[0].Text != "Once upon a time" || *r.StopReason != "max_tokens" || r.Usage.OutputTokens != 4 || r.Usage.InputTokens == 0 {
			t.Errorf("reply %+v", r)
		}
		q := last()
		if len(q.Messages) != 2 || q.Messages[0].Role != "system" || q.Messages[0].Content != "Be brief." || q.Options.NumPredict != 4 ||
			q.Options.Temperature != 0.5 || q.Options.TopK != 7 || q.Options.TopP != 1 || !slices.Equal(q.Options.Stop, []string{"END"}) {
			t.Errorf("request %+v, options %+v", q.Messages, q.Options)
		}
	})
	t.Run("history with tools", func(t *testing.T) {
		body := map[string]any{"model": "tiny", "max_tokens": 8, "messages": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Weather in Paris?"}}},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "thinking", "thinking": "a tool", "signature": "x"},
				map[string]any{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
				map[string]any{"type": "text", "text": "And tomorrow?"}}}},
			"tools": []any{map[string]any{"name": "get_weather", "description": "Weather", "input_schema": map[string]any{"type": "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}},
			"tool_choice": map[string]any{"type": "any"}}
		var r anthropicResponse
		decode(t, ts.do("POST", "/v1/messages", body), 200, &r)
		q := last()
		if len(q.Messages) != 4 || q.Messages[1].Role != "assistant" || len(q.Messages[1].ToolCalls) != 1 || q.Messages[1].ToolCalls[0].ID != "toolu_1" ||
			q.Messages[2].Role != "tool" || q.Messages[2].ToolCallID != "toolu_1" || q.Messages[2].Name != "get_weather" || q.Messages[2].Content != "sunny" ||
			q.Messages[3].Role != "user" || q.Messages[3].Content != "And tomorrow?" {
			t.Errorf("conversation %+v", q.Messages)
		}
		if q.ToolChoice != ToolChoiceRequired || !strings.Contains(q.Options.Format, `"const":"get_weather"`) {
			t.Errorf("tool choice %q, format %s", q.ToolChoice, q.Options.Format)
		}
		n := len(r.Content)
		if n == 0 || r.Content[n-1].Type != "tool_use" || r.Content[n-1].Name != "get_weather" || string(r.Content[n-1].Input) != `{"city":"Paris"}` ||
			r.Content[n-1].ID == "" || *r.StopReason != "tool_use" {
			t.Errorf("reply %+v", r)
		}
	})
	t.Run("stream", func(t *testing.T) {
		resp := ts.do("POST", "/v1/messages", map[string]any{"model": "tiny", "max_tokens": 3, "stream": true,
			"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("content type %q", ct)
		}
		var kinds []string
		var text strings.Builder
		for _, ev := range readSSE(t, resp.Body, 0) {
			var v struct {
				Type  string
				Delta struct {
					Type, Text string
					StopReason string `json:"stop_reason"`
				}
			}
			if err := json.Unmarshal([]byte(ev.data), &v); err != nil || v.Type != ev.event {
				t.Fatalf("event %q: %s (%v)", ev.event, ev.data, err)
			}
			if len(kinds) == 0 || kinds[len(kinds)-1] != v.Type {
				kinds = append(kinds, v.Type)
			}
			if v.Delta.Type == "text_delta" {
				text.WriteString(v.Delta.Text)
			}
			if v.Type == "message_delta" && v.Delta.StopReason != "max_tokens" {
				t.Errorf("message_delta %s", ev.data)
			}
		}
		want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
		if !slices.Equal(kinds, want) || text.String() != "Once upon a" {
			t.Errorf("events %v, text %q; want %v and \"Once upon a\"", kinds, text.String(), want)
		}
	})
	t.Run("count_tokens", func(t *testing.T) {
		var c struct {
			InputTokens int `json:"input_tokens"`
		}
		decode(t, ts.do("POST", "/v1/messages/count_tokens", map[string]any{"model": "tiny", "system": "Be brief.",
			"messages": []any{map[string]any{"role": "user", "content": "hi there"}}}), 200, &c)
		if c.InputTokens != 6 { // the fake's count: a token per word, one per message
			t.Errorf("input_tokens %d, want 6", c.InputTokens)
		}
		var e anthropicError
		decode(t, ts.do("POST", "/v1/messages/count_tokens", map[string]any{"model": "nope", "messages": []any{map[string]any{"role": "user", "content": "x"}}}), 404, &e)
		if e.Error.Type != "not_found_error" {
			t.Errorf("unknown model: %+v", e)
		}
	})
	t.Run("errors", func(t *testing.T) {
		user := []any{map[string]any{"role": "user", "content": "hi"}}
		for _, tc := range []struct {
			body   map[string]any
			status int
			typ    string
			want   string
		}{
			{map[string]any{"model": "tiny", "messages": user}, 400, "invalid_request_error", "max_tokens is required"},
			{map[string]any{"model": "nope", "max_tokens": 2, "messages": user}, 404, "not_found_error", `model "nope"`},
			{map[string]any{"model": "tiny", "max_tokens": 2, "messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image"}}}}}, 400, "invalid_request_error", `a "image" block is not supported`},
			{map[string]any{"model": "tiny", "max_tokens": 2, "messages": user, "tools": []any{map[string]any{"type": "web_search_20250305", "name": "web_search"}}}, 400, "invalid_request_error", "server tool"},
			{map[string]any{"model": "tiny", "max_tokens": 2, "messages": []any{map[string]any{"role": "system", "content": "x"}}}, 400, "invalid_request_error", "not user or assistant"},
			{map[string]any{"model": "tiny", "max_tokens": 2, "messages": user, "thinking": map[string]any{"type": "maybe"}}, 400, "invalid_request_error", "thinking.type"},
		} {
			var e anthropicError
			decode(t, ts.do("POST", "/v1/messages", tc.body), tc.status, &e)
			if e.Type != "error" || e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.want) {
				t.Errorf("%v: %+v, want %s with %q", tc.body, e, tc.typ, tc.want)
			}
		}
	})
}
