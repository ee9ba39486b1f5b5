package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
)

// Anthropic's Messages API (POST /v1/messages), as Claude's SDKs and
// tools send it (ANTHROPIC_BASE_URL pointed at glassbox): a system
// prompt, messages of text, tool_use and tool_result blocks, tools with
// JSON schemas, max_tokens (required), stop_sequences, temperature, top_p,
// top_k, thinking; the reply is a message of content blocks with a
// stop_reason, or server-sent events (message_start, content_block_*,
// message_delta, message_stop). Images and documents are refused by name.

type anthropicRequest struct {
	Model         string               `json:"model"`
	MaxTokens     *float64             `json:"max_tokens"`
	System        json.RawMessage      `json:"system"`
	Messages      []anthropicMessage   `json:"messages"`
	StopSequences []string             `json:"stop_sequences"`
	Temperature   *float64             `json:"temperature"`
	TopP          *float64             `json:"top_p"`
	TopK          *float64             `json:"top_k"`
	Stream        bool                 `json:"stream"`
	Tools         []anthropicTool      `json:"tools"`
	ToolChoice    *anthropicToolChoice `json:"tool_choice"`
	Thinking      *struct {
		Type string `json:"type"` // enabled, disabled
	} `json:"thinking"`
	Metadata json.RawMessage `json:"metadata"` // user_id: not used
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or blocks
}

// anthropicBlock is one content block, of any type.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // tool_result: a string or text blocks
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
}

type anthropicTool struct {
	Type        string          `json:"type"` // "" or "custom"; Anthropic's server tools (web_search…) have others
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicToolChoice struct {
	Type string `json:"type"` // auto, any, tool, none
	Name string `json:"name"`
}

// anthropicResponse is a whole reply (and message_start's message).
type anthropicResponse struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []anthropicBlock `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
	JobID        string           `json:"glassbox_job,omitempty"`
}

type anthropicUsage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens"`
}

// anthropicError is Anthropic's error object.
type anthropicError struct {
	Type  string `json:"type"` // "error"
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Stage   string `json:"stage,omitempty"`
	} `json:"error"`
}

func (e *Error) anthropic() anthropicError {
	var out anthropicError
	out.Type = "error"
	switch {
	case e.Status == http.StatusUnauthorized:
		out.Error.Type = "authentication_error"
	case e.Status == http.StatusNotFound:
		out.Error.Type = "not_found_error"
	case e.Status == http.StatusRequestEntityTooLarge:
		out.Error.Type = "request_too_large"
	case e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests:
		out.Error.Type = "overloaded_error"
	case e.Status >= 400 && e.Status < 500:
		out.Error.Type = "invalid_request_error"
	default:
		out.Error.Type = "api_error"
	}
	out.Error.Message, out.Error.Stage = e.Error(), e.Stage
	if e.Hint != "" {
		out.Error.Message += " (" + e.Hint + ")"
	}
	return out
}

func writeAnthropicError(w http.ResponseWriter, e *Error) {
	setRetryAfter(w, e)
	writeJSON(w, e.Status, e.anthropic())
}

// blocks reads a content field: a string (one text block) or blocks.
func blocks(raw json.RawMessage, field string) ([]anthropicBlock, *Error) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return nil, nil
	}
	if t[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest("invalid_value", field, "%s: %v", field, err)
		}
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anthropicBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, badRequest("invalid_value", field, "%s must be a string or an array of content blocks: %v", field, err)
	}
	return bs, nil
}

// blockText joins text blocks; other types are refused by name.
func blockText(bs []anthropicBlock, field string) (string, *Error) {
	var b strings.Builder
	for i, x := range bs {
		if x.Type != "text" {
			return "", badRequest("unsupported", field, "%s[%d]: a %q block is not supported here (text is)", field, i, x.Type)
		}
		b.WriteString(x.Text)
	}
	return b.String(), nil
}

// messages turns the request's system prompt and messages into the
// conversation: tool_use blocks become an assistant turn's calls,
// tool_result blocks the tool turns that answer them (named by the call
// they answer).
func (req *anthropicRequest) messages() ([]Message, *Error) {
	var out []Message
	sys, e := blocks(req.System, "system")
	if e != nil {
		return nil, e
	}
	if len(sys) > 0 {
		text, e := blockText(sys, "system")
		if e != nil {
			return nil, e
		}
		out = append(out, Message{Role: "system", Content: text})
	}
	names := map[string]string{} // tool_use id → the tool's name
	for i, m := range req.Messages {
		field := fmt.Sprintf("messages[%d].content", i)
		bs, e := blocks(m.Content, field)
		if e != nil {
			return nil, e
		}
		switch m.Role {
		case "assistant":
			msg := Message{Role: "assistant"}
			for j, b := range bs {
				switch b.Type {
				case "text":
					msg.Content += b.Text
				case "tool_use":
					args := json.RawMessage(strings.TrimSpace(string(b.Input)))
					if len(args) == 0 || string(args) == "null" {
						args = json.RawMessage("{}")
					}
					if args[0] != '{' {
						return nil, badRequest("invalid_value", field, "%s[%d]: tool_use input must be an object", field, j)
					}
					msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
					names[b.ID] = b.Name
				case "thinking":
					if b.Thinking != nil {
						msg.Thinking += *b.Thinking
					}
				case "redacted_thinking":
					// Encrypted by another server: nothing to give the model.
				default:
					return nil, badRequest("unsupported", field, "%s[%d]: a %q block is not supported (text, tool_use and thinking are)", field, j, b.Type)
				}
			}
			out = append(out, msg)
		case "user":
			var text strings.Builder
			for j, b := range bs {
				switch b.Type {
				case "text":
					text.WriteString(b.Text)
				case "tool_result":
					rb, e := blocks(b.Content, fmt.Sprintf("%s[%d].content", field, j))
					if e != nil {
						return nil, e
					}
					content, e := blockText(rb, fmt.Sprintf("%s[%d].content", field, j))
					if e != nil {
						return nil, e
					}
					if b.IsError && content != "" {
						content = "Error: " + content
					}
					out = append(out, Message{Role: "tool", ToolCallID: b.ToolUseID, Name: names[b.ToolUseID], Content: content})
				default:
					return nil, badRequest("unsupported", field, "%s[%d]: a %q block is not supported (text and tool_result are; glassbox runs text models)", field, j, b.Type)
				}
			}
			if text.Len() > 0 || len(bs) == 0 {
				out = append(out, Message{Role: "user", Content: text.String()})
			}
		default:
			return nil, badRequest("invalid_role", "messages", "messages[%d]: role %q is not user or assistant", i, m.Role)
		}
	}
	return out, nil
}

// anthropicMessages is POST /v1/messages.
func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeAnthropicError(w, e)
		return
	}
	greq, showThinking, e := s.anthropicGenerate(r, &req)
	if e != nil {
		writeAnthropicError(w, e)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	g, e := s.startGeneration(ctx, jobSpec("chat", greq), greq)
	if e != nil {
		writeAnthropicError(w, e)
		return
	}
	w.Header().Set("X-Glassbox-Job", g.job.ID)
	id := "msg_" + g.job.ID
	reply := func(res *Result) anthropicResponse {
		out := anthropicResponse{ID: id, Type: "message", Role: "assistant", Model: req.Model, Content: []anthropicBlock{},
			StopReason: strp(anthropicStop(res)), Usage: anthropicUsage{InputTokens: res.PromptTokens - res.CachedTokens,
				OutputTokens: res.Tokens, CacheReadInputTokens: res.CachedTokens}, JobID: g.job.ID}
		if res.StopSequence != "" && len(res.ToolCalls) == 0 {
			out.StopSequence = strp(res.StopSequence)
		}
		if showThinking && res.Thinking != "" {
			out.Content = append(out.Content, anthropicBlock{Type: "thinking", Thinking: strp(res.Thinking), Signature: strp("")})
		}
		if res.Text != "" {
			out.Content = append(out.Content, anthropicBlock{Type: "text", Text: res.Text})
		}
		for i, c := range res.ToolCalls {
			out.Content = append(out.Content, anthropicBlock{Type: "tool_use", ID: toolUseID(g.job.ID, i, c), Name: c.Name, Input: c.Arguments})
		}
		return out
	}
	if !req.Stream {
		res, err := s.follow(ctx, g, func(delta) error { return nil })
		if err != nil {
			writeAnthropicError(w, toError(err))
			return
		}
		writeJSON(w, http.StatusOK, reply(res))
		return
	}
	var sw *streamWriter
	event := func(typ string, v any) error {
		if sw == nil {
			sw = newStreamWriter(w, "text/event-stream", s.cfg.WriteTimeout)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("deliver: encoding event: %w", err)
		}
		return sw.sse("", typ, b)
	}
	start := anthropicResponse{ID: id, Type: "message", Role: "assistant", Model: req.Model, Content: []anthropicBlock{}, JobID: g.job.ID}
	if event("message_start", map[string]any{"type": "message_start", "message": start}) != nil {
		return
	}
	// Blocks open and close as the kind of text changes: thinking, then
	// text, then the calls once the reply is whole.
	index, open := -1, ""
	openBlock := func(kind string, block anthropicBlock) error {
		if open == kind {
			return nil
		}
		if open != "" {
			if err := event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}); err != nil {
				return err
			}
		}
		index, open = index+1, kind
		return event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": block})
	}
	send := func(d delta) error {
		if showThinking && d.Thinking != "" {
			if err := openBlock("thinking", anthropicBlock{Type: "thinking", Thinking: strp(""), Signature: strp("")}); err != nil {
				return err
			}
			if err := event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]string{"type": "thinking_delta", "thinking": d.Thinking}}); err != nil {
				return err
			}
		}
		if d.Text == "" {
			return nil
		}
		if err := openBlock("text", anthropicBlock{Type: "text", Text: ""}); err != nil {
			return err
		}
		return event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]string{"type": "text_delta", "text": d.Text}})
	}
	res, rest, err := s.followStream(ctx, g, greq, send)
	if err == nil && (rest.Text != "" || rest.Thinking != "") {
		err = send(rest)
	}
	if err == nil {
		for i, c := range res.ToolCalls {
			if err = openBlock(fmt.Sprintf("call%d", i), anthropicBlock{Type: "tool_use", ID: toolUseID(g.job.ID, i, c), Name: c.Name, Input: json.RawMessage("{}")}); err != nil {
				break
			}
			if err = event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]string{"type": "input_json_delta", "partial_json": string(c.Arguments)}}); err != nil {
				break
			}
		}
	}
	if err == nil && open != "" {
		err = event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	if err != nil {
		if sw == nil {
			writeAnthropicError(w, toError(err))
		} else {
			event("error", toError(err).anthropic())
		}
		return
	}
	final := reply(res)
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": final.StopReason, "stop_sequence": final.StopSequence}, "usage": final.Usage})
	event("message_stop", map[string]string{"type": "message_stop"})
}

// anthropicGenerate checks a Messages request and turns it into a
// generation; showThinking is whether thinking blocks go back (the
// request enabled thinking).
func (s *Server) anthropicGenerate(r *http.Request, req *anthropicRequest) (*GenerateRequest, bool, *Error) {
	if req.Model == "" {
		return nil, false, badRequest("missing_model", "model", "model is required")
	}
	if req.MaxTokens == nil {
		return nil, false, badRequest("missing_max_tokens", "max_tokens", "max_tokens is required")
	}
	if mt := *req.MaxTokens; mt != float64(int(mt)) || mt < 1 || mt > maxPredict {
		return nil, false, badRequest("invalid_value", "max_tokens", "max_tokens is %v, outside the allowed range 1..%d", mt, maxPredict)
	}
	if len(req.Messages) == 0 {
		return nil, false, badRequest("missing_messages", "messages", "messages must hold at least one message")
	}
	params, prof := s.withProfile(r.Context(), req.Model, nil)
	o := openAIDefaults() // Anthropic's: temperature 1, nothing else filtered
	m := maps.Clone(params)
	if m == nil {
		m = map[string]any{}
	}
	for k, v := range map[string]*float64{"temperature": req.Temperature, "top_p": req.TopP, "top_k": req.TopK} {
		if v != nil {
			m[k] = *v
		}
	}
	if e := applyOllamaOptions(&o, m); e != nil {
		e.Param = strings.TrimPrefix(e.Param, "options.")
		e.Message = strings.ReplaceAll(e.Message, "options.", "")
		return nil, false, e
	}
	o.NumPredict = int(*req.MaxTokens)
	if len(req.StopSequences) > 0 {
		stops := make([]any, len(req.StopSequences))
		for i, x := range req.StopSequences {
			stops[i] = x
		}
		if e := stopOpt(&o.Stop, stops, "stop_sequences"); e != nil {
			return nil, false, e
		}
	}
	showThinking := false
	if t := req.Thinking; t != nil {
		switch t.Type {
		case "enabled":
			showThinking = true
			o.Think = &showThinking
		case "disabled":
			off := false
			o.Think = &off
		default:
			return nil, false, badRequest("invalid_value", "thinking.type", `thinking.type is %q, not "enabled" or "disabled"`, t.Type)
		}
	}
	msgs, e := req.messages()
	if e != nil {
		return nil, false, e
	}
	greq := &GenerateRequest{Model: req.Model, Messages: systemFirst(prof, msgs), Options: o}
	var fns []functionTool
	for i, t := range req.Tools {
		if t.Type != "" && t.Type != "custom" {
			return nil, false, badRequest("unsupported", "tools", "tools[%d]: Anthropic's server tool %q is not available here (tools with an input_schema are)", i, t.Type)
		}
		fns = append(fns, functionTool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	tools, toolsJSON, e := parseFunctionTools(fns)
	if e != nil {
		return nil, false, e
	}
	choice := ""
	if c := req.ToolChoice; c != nil {
		switch c.Type {
		case "auto", "":
			choice = ToolChoiceAuto
		case "any":
			choice = ToolChoiceRequired
		case "none":
			choice = ToolChoiceNone
		case "tool":
			if c.Name == "" {
				return nil, false, badRequest("invalid_value", "tool_choice.name", "tool_choice of type tool needs a name")
			}
			choice = c.Name
		default:
			return nil, false, badRequest("invalid_value", "tool_choice.type", `tool_choice.type is %q, not auto, any, tool or none`, c.Type)
		}
	}
	if e := applyTools(greq, tools, toolsJSON, choice); e != nil {
		return nil, false, e
	}
	return greq, showThinking, nil
}

// anthropicStop is a reply's stop_reason.
func anthropicStop(res *Result) string {
	switch {
	case len(res.ToolCalls) > 0:
		return "tool_use"
	case res.DoneReason == "length":
		return "max_tokens"
	case res.StopSequence != "":
		return "stop_sequence"
	}
	return "end_turn"
}

// toolUseID is a call's id: the model's own, else one made from the job.
func toolUseID(job string, i int, c ToolCall) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("toolu_%s_%d", job, i)
}

// anthropicCountTokens is POST /v1/messages/count_tokens: the request's
// input tokens through the model's template (max_tokens is not needed).
func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeAnthropicError(w, e)
		return
	}
	if req.MaxTokens == nil {
		one := 1.0
		req.MaxTokens = &one
	}
	greq, _, e := s.anthropicGenerate(r, &req)
	if e != nil {
		writeAnthropicError(w, e)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	n, err := s.cfg.Backend.CountTokens(ctx, greq)
	if err != nil {
		writeAnthropicError(w, toError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": n})
}
