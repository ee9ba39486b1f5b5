package chat

import (
	"encoding/json"
	"testing"
)

func TestParseToolCalls(t *testing.T) {
	names := []string{"get_weather", "add"}
	type call struct{ name, args string }
	for _, tc := range []struct {
		reply, content string
		calls          []call
	}{
		// Hermes / Qwen.
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "",
			[]call{{"get_weather", `{"city":"Paris"}`}}},
		{"Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>",
			"Let me check.", []call{{"get_weather", `{"city":"Paris"}`}, {"add", `{"a":1,"b":2}`}}},
		// Mistral.
		{`[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1, "b": 2}}]`, "", []call{{"add", `{"a":1,"b":2}`}}},
		// Llama 3.1 and 3.2.
		{`<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo"}}`, "", []call{{"get_weather", `{"city":"Oslo"}`}}},
		{` {"name": "get_weather", "parameters": {"city": "Oslo"}}`, "", []call{{"get_weather", `{"city":"Oslo"}`}}},
		{`[{"name": "add", "arguments": "{\"a\": 3, \"b\": 4}"}]`, "", []call{{"add", `{"a":3,"b":4}`}}}, // arguments as a string
		{`{"name": "add"}`, "", []call{{"add", `{}`}}},
		// Not calls.
		{`It is sunny in Paris.`, `It is sunny in Paris.`, nil},
		{`{"name": "delete_everything", "arguments": {}}`, `{"name": "delete_everything", "arguments": {}}`, nil}, // not offered
		{`{"name": "add", "arguments": [1, 2]}`, `{"name": "add", "arguments": [1, 2]}`, nil},                     // arguments not an object
		{`You could call {"name": "add", "arguments": {}} for that.`, `You could call {"name": "add", "arguments": {}} for that.`, nil},
		{"<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}", "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}", nil}, // cut short
		{`{"name": "add", "arguments": {}} and more`, `{"name": "add", "arguments": {}} and more`, nil},
	} {
		content, calls := ParseToolCalls(tc.reply, names)
		if content != tc.content || len(calls) != len(tc.calls) {
			t.Errorf("%q: content %q, %d calls %+v; want %q, %d calls", tc.reply, content, len(calls), calls, tc.content, len(tc.calls))
			continue
		}
		for i, c := range calls {
			if c.Function.Name != tc.calls[i].name || string(c.Function.Arguments) != tc.calls[i].args || c.Type != "function" || c.ID != "call_"+string(rune('0'+i)) {
				t.Errorf("%q: call %d %+v (args %s), want %+v", tc.reply, i, c, c.Function.Arguments, tc.calls[i])
			}
			if !json.Valid(c.Function.Arguments) {
				t.Errorf("%q: arguments %q are not JSON", tc.reply, c.Function.Arguments)
			}
		}
	}
}

// FuzzParseToolCalls: any reply parses without panicking, and the calls
// found name offered tools with object arguments.
func FuzzParseToolCalls(f *testing.F) {
	for _, s := range []string{`<tool_call>{"name":"add","arguments":{}}</tool_call>`, `[TOOL_CALLS] [{"name":"add"}]`, `{"name":"add","parameters":"{}"}`, "text"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		_, calls := ParseToolCalls(reply, []string{"add"})
		for _, c := range calls {
			var m map[string]any
			if c.Function.Name != "add" || json.Unmarshal(c.Function.Arguments, &m) != nil {
				t.Fatalf("%q: call %+v", reply, c)
			}
		}
	})
}

func TestHeldBack(t *testing.T) {
	for _, tc := range []struct {
		s    string
		tags []string
		want int
	}{
		{"abc</thi", []string{"</think>"}, 5},
		{"abc</think>", []string{"</think>"}, 0}, // whole: not held
		{"x <tool", ToolCallMarkers, 5},
		{"x [TOOL_C", ToolCallMarkers, 7},
		{"x <|pyth", ToolCallMarkers, 6},
		{"x <", ToolCallMarkers, 1},
		{"plain", ToolCallMarkers, 0},
		{"", ToolCallMarkers, 0},
	} {
		if got := HeldBack(tc.s, tc.tags...); got != tc.want {
			t.Errorf("HeldBack(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}
