package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ToolCall is one function call a reply made (or an assistant turn of the
// history made): Arguments is a JSON object.
type ToolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Tool choices (GenerateRequest.ToolChoice); any other value names the
// one function the reply must call.
const (
	ToolChoiceAuto     = "auto"     // the model answers or calls, as it likes
	ToolChoiceNone     = "none"     // the reply is text: calls are not looked for
	ToolChoiceRequired = "required" // the reply is one call (the output is constrained to it)
)

// toolDef is one function a request offers, as both dialects write it.
type toolDef struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// parseTools checks a request's tools: a list of {"type": "function",
// "function": {"name", …}}, names unique. It returns them (nil for none or
// null) and the list's compact JSON for the chat template.
func parseTools(raw json.RawMessage) ([]toolDef, json.RawMessage, *Error) {
	if t := string(bytes.TrimSpace(raw)); t == "" || t == "null" || t == "[]" {
		return nil, nil, nil
	}
	var tools []toolDef
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, nil, badRequest("invalid_tools", "tools", "tools must be a list of {\"type\": \"function\", \"function\": {\"name\", \"description\", \"parameters\"}}: %v", err)
	}
	seen := map[string]bool{}
	for i, t := range tools {
		if t.Type != "function" {
			return nil, nil, badRequest("invalid_tools", "tools", "tools[%d]: type %q is not supported (only \"function\")", i, t.Type)
		}
		if t.Function.Name == "" {
			return nil, nil, badRequest("invalid_tools", "tools", "tools[%d]: function.name is required", i)
		}
		if seen[t.Function.Name] {
			return nil, nil, badRequest("invalid_tools", "tools", "tools[%d]: function %q is offered twice", i, t.Function.Name)
		}
		seen[t.Function.Name] = true
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && p[0] != '{' && string(p) != "null" {
			return nil, nil, badRequest("invalid_tools", "tools", "tools[%d]: function.parameters must be a JSON schema object", i)
		}
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, nil, badRequest("invalid_tools", "tools", "tools: %v", err)
	}
	return tools, b.Bytes(), nil
}

// functionTool is a function offered in the flat form of Anthropic's
// Messages API and OpenAI's Responses API: name, description, schema.
type functionTool struct {
	Name, Description string
	Parameters        json.RawMessage // nil: any object
}

// parseFunctionTools is parseTools for flat functions: they are checked,
// and listed for the chat template, in OpenAI's chat form.
func parseFunctionTools(fns []functionTool) ([]toolDef, json.RawMessage, *Error) {
	if len(fns) == 0 {
		return nil, nil, nil
	}
	list := make([]map[string]any, len(fns))
	for i, f := range fns {
		params := f.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object"}`)
		}
		list[i] = map[string]any{"type": "function", "function": map[string]any{"name": f.Name, "description": f.Description, "parameters": params}}
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return nil, nil, badRequest("invalid_tools", "tools", "tools: %v", err)
	}
	return parseTools(raw)
}

// applyTools sets a request's tools and choice, and for a reply that must
// be a call, the output format that forces one: an object with the
// function's "name" and "arguments" of its parameters' schema (with
// several functions offered, the call of any one of them).
func applyTools(req *GenerateRequest, tools []toolDef, raw json.RawMessage, choice string) *Error {
	if len(tools) == 0 {
		if choice != "" && choice != ToolChoiceAuto && choice != ToolChoiceNone {
			return badRequest("invalid_value", "tool_choice", "tool_choice %q needs tools", choice)
		}
		return nil
	}
	if choice == "" {
		choice = ToolChoiceAuto
	}
	req.Tools, req.ToolChoice = raw, choice
	for _, t := range tools {
		req.ToolNames = append(req.ToolNames, t.Function.Name)
	}
	if choice == ToolChoiceAuto || choice == ToolChoiceNone {
		return nil
	}
	if req.Options.Format != "" {
		return badRequest("unsupported", "tool_choice", "a required tool call and a response format cannot both constrain the reply")
	}
	offered := tools
	if choice != ToolChoiceRequired {
		offered = nil
		for _, u := range tools {
			if u.Function.Name == choice {
				offered = []toolDef{u}
			}
		}
		if offered == nil {
			return badRequest("invalid_value", "tool_choice", "tool_choice names %q, which is not among the tools", choice)
		}
	}
	// One function's call, or (several offered) any one of theirs: an
	// anyOf whose alternatives the recognizer follows together until the
	// name tells them apart.
	calls := make([]string, len(offered))
	for i, t := range offered {
		params := bytes.TrimSpace(t.Function.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object"}`)
		}
		name, _ := json.Marshal(t.Function.Name)
		calls[i] = fmt.Sprintf(`{"type":"object","properties":{"name":{"const":%s},"arguments":%s},"required":["name","arguments"]}`, name, params)
		if _, e := schemaFormat(json.RawMessage(calls[i]), "tools"); e != nil {
			e.Message = fmt.Sprintf("forcing a call to tool %s's parameters: %s", name, e.Message)
			return e
		}
	}
	schema := calls[0]
	if len(calls) > 1 {
		schema = `{"anyOf":[` + strings.Join(calls, ",") + `]}`
	}
	text, e := schemaFormat(json.RawMessage(schema), "tools")
	if e != nil {
		return e
	}
	req.Options.Format = text
	return nil
}

// argumentsObject reads a call's arguments as sent in a conversation's
// history: an object, or (OpenAI) a string holding one.
func argumentsObject(raw json.RawMessage, i int) (json.RawMessage, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest("invalid_value", "messages", "messages[%d]: tool call arguments: %v", i, err)
		}
		raw = bytes.TrimSpace([]byte(s))
	}
	if len(raw) == 0 {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, badRequest("invalid_value", "messages", "messages[%d]: tool call arguments must be a JSON object", i)
	}
	return raw, nil
}
