package backend

import (
	"fmt"
	"testing"

	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/server"
)

// TestReplyCalls: a harmony reply's calls (parsed by the engine as it was
// generated) reach the APIs when their functions were offered, numbered
// anew; calls written as text are still found in a reply without them;
// without tools there are no calls.
func TestReplyCalls(t *testing.T) {
	call := func(id, name, args string) chat.ToolCall {
		return chat.ToolCall{ID: id, Type: "function", Function: chat.ToolFunction{Name: name, Arguments: []byte(args)}}
	}
	offered := &server.GenerateRequest{Tools: []byte(`[{}]`), ToolNames: []string{"get_weather"}, ToolChoice: server.ToolChoiceAuto}
	for _, tc := range []struct {
		name    string
		req     *server.GenerateRequest
		res     engine.Result
		content string
		calls   string
	}{
		{"harmony call", offered, engine.Result{Text: "Let me look.", ToolCalls: []chat.ToolCall{call("call_0", "browse", `{}`), call("call_1", "get_weather", `{"city":"Paris"}`)}},
			"Let me look.", `[{call_0 get_weather {"city":"Paris"}}]`},
		{"call in the text", offered, engine.Result{Text: `<tool_call>{"name":"get_weather","arguments":{"city":"Oslo"}}</tool_call>`},
			"", `[{call_0 get_weather {"city":"Oslo"}}]`},
		{"not offered", offered, engine.Result{Text: "Hi.", ToolCalls: []chat.ToolCall{call("call_0", "browse", `{}`)}}, "Hi.", `[]`},
		{"no tools", &server.GenerateRequest{}, engine.Result{Text: "Hi.", ToolCalls: []chat.ToolCall{call("call_0", "get_weather", `{}`)}}, "Hi.", `[]`},
		{"tool choice none", &server.GenerateRequest{Tools: []byte(`[{}]`), ToolNames: []string{"get_weather"}, ToolChoice: server.ToolChoiceNone},
			engine.Result{Text: "Hi.", ToolCalls: []chat.ToolCall{call("call_0", "get_weather", `{}`)}}, "Hi.", `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content, calls := replyCalls(tc.req, &tc.res)
			var got []string
			for _, c := range calls {
				got = append(got, fmt.Sprintf("{%s %s %s}", c.ID, c.Name, c.Arguments))
			}
			if s := fmt.Sprint(got); content != tc.content || s != tc.calls {
				t.Errorf("content %q, calls %s; want %q, %s", content, s, tc.content, tc.calls)
			}
		})
	}
}
