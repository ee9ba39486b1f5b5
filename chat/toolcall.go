package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ToolCallMarkers are the texts that open a call in the formats
// ParseToolCalls reads (Hermes/Qwen's block, Mistral's, Llama 3.1's); a
// reply that is one JSON value may be a call too. A server streaming a
// reply with tools can send its text up to the first of them.
var ToolCallMarkers = []string{"<tool_call>", "[TOOL_CALLS]", "<|python_tag|>"}

// HeldBack is how many bytes at the end of streamed text s must wait for
// more: the longest suffix of s that is a proper prefix of one of tags (a
// tag split across tokens is not sent until it is whole, or is not one).
func HeldBack(s string, tags ...string) int {
	keep := 0
	for _, tag := range tags {
		for n := min(len(s), len(tag)-1); n > keep; n-- {
			if strings.HasSuffix(s, tag[:n]) {
				keep = n
				break
			}
		}
	}
	return keep
}

// ParseToolCalls finds the function calls in a model's reply to a
// conversation that offered tools named names, in the forms chat templates
// teach:
//
//   - Hermes, Qwen 2.5/3: <tool_call>{"name": …, "arguments": {…}}</tool_call>,
//     one block per call, possibly after some text;
//   - Mistral: [TOOL_CALLS] followed by a JSON array of calls;
//   - Llama 3.1: <|python_tag|> followed by a call;
//   - Llama 3.2 and constrained output: the whole reply is one call, or a
//     JSON array of calls.
//
// A call is an object with "name" (one of names) and "arguments" (or
// Llama's "parameters"): an object, or a string holding one. Text that is
// not a whole call stays content: a reply that only talks about a tool is
// not a call. It returns the reply with the calls cut out (trimmed) and
// the calls, numbered call_0, call_1, … in order.
func ParseToolCalls(reply string, names []string) (content string, calls []ToolCall) {
	// (ToolCallMarkers[0] is the tagged blocks'; the others run to the end.)
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	add := func(objs []json.RawMessage) bool {
		var parsed []ToolCall
		for _, o := range objs {
			c, ok := parseCall(o, known)
			if !ok {
				return false
			}
			parsed = append(parsed, c)
		}
		for _, c := range parsed {
			c.ID = fmt.Sprintf("call_%d", len(calls))
			calls = append(calls, c)
		}
		return len(parsed) > 0
	}
	// Tagged blocks.
	var rest strings.Builder
	s := reply
	for {
		i := strings.Index(s, ToolCallMarkers[0])
		if i < 0 {
			break
		}
		body, after, closed := strings.Cut(s[i+len(ToolCallMarkers[0]):], "</tool_call>")
		if !closed || !add(jsonValues(body)) {
			break
		}
		rest.WriteString(s[:i])
		s = after
	}
	rest.WriteString(s)
	if len(calls) > 0 {
		return strings.TrimSpace(rest.String()), calls
	}
	// A marker, then calls to the end.
	for _, marker := range ToolCallMarkers[1:] {
		if before, after, ok := strings.Cut(reply, marker); ok && add(jsonValues(after)) {
			return strings.TrimSpace(before), calls
		}
	}
	// The whole reply.
	if add(jsonValues(reply)) {
		return "", calls
	}
	return reply, nil
}

// jsonValues reads s (trimmed) as one JSON object, a JSON array of
// objects, or objects one after another; nil if it is anything else.
func jsonValues(s string) []json.RawMessage {
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(s)))
	var out []json.RawMessage
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) && len(out) > 0 {
				return out
			}
			return nil
		}
		switch {
		case len(v) > 0 && v[0] == '{':
			out = append(out, v)
		case len(v) > 0 && v[0] == '[':
			var arr []json.RawMessage
			if json.Unmarshal(v, &arr) != nil {
				return nil
			}
			out = append(out, arr...)
		default:
			return nil
		}
	}
}

// parseCall reads one call object.
func parseCall(raw json.RawMessage, known map[string]bool) (ToolCall, bool) {
	var o struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal(raw, &o) != nil || !known[o.Name] {
		return ToolCall{}, false
	}
	args := o.Arguments
	if len(args) == 0 {
		args = o.Parameters
	}
	args = bytes.TrimSpace(args)
	if len(args) > 0 && args[0] == '"' { // a string holding the object
		var s string
		if json.Unmarshal(args, &s) != nil {
			return ToolCall{}, false
		}
		args = json.RawMessage(strings.TrimSpace(s))
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if args[0] != '{' || json.Unmarshal(args, &obj) != nil {
		return ToolCall{}, false
	}
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return ToolCall{}, false
	}
	return ToolCall{Type: "function", Function: ToolFunction{Name: o.Name, Arguments: b.Bytes()}}, true
}
