package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/glassbox-ai/glassbox/api"
)

// OpenAI's API: https://platform.openai.com/docs/api-reference/chat and
// .../completions (legacy).

type openAIChatRequest struct {
	Model               string            `json:"model"`
	Messages            []openAIMessage   `json:"messages"`
	Stream              bool              `json:"stream"`
	StreamOptions       *openAIStreamOpts `json:"stream_options"`
	MaxTokens           *float64          `json:"max_tokens"`
	MaxCompletionTokens *float64          `json:"max_completion_tokens"`
	openAISampling
	Tools          json.RawMessage    `json:"tools"`
	ToolChoice     json.RawMessage    `json:"tool_choice"`
	ResponseFormat *openAIResponseFmt `json:"response_format"`
	Logprobs       *bool              `json:"logprobs"`
	TopLogprobs    *float64           `json:"top_logprobs"`
	// ReasoningEffort is none (thinking off), minimal, low, medium or
	// high (see reasoningEffort).
	ReasoningEffort *string `json:"reasoning_effort"`
	// ChatTemplateKwargs (llama-server's extension): enable_thinking turns
	// a reasoning model's thinking on or off where its template has the
	// switch; reasoning_effort is ReasoningEffort.
	ChatTemplateKwargs *struct {
		EnableThinking  *bool   `json:"enable_thinking"`
		ReasoningEffort *string `json:"reasoning_effort"`
	} `json:"chat_template_kwargs"`
}

type openAICompletionRequest struct {
	Model         string            `json:"model"`
	Prompt        json.RawMessage   `json:"prompt"` // string or array of one string
	Suffix        string            `json:"suffix"`
	Echo          bool              `json:"echo"`
	Stream        bool              `json:"stream"`
	StreamOptions *openAIStreamOpts `json:"stream_options"`
	MaxTokens     *float64          `json:"max_tokens"` // default 16
	Logprobs      *float64          `json:"logprobs"`   // alternatives per token, 0–5; null: none
	openAISampling
}

// openAISampling are the sampling fields both endpoints share.
type openAISampling struct {
	Temperature      *float64           `json:"temperature"`
	TopP             *float64           `json:"top_p"`
	Seed             *float64           `json:"seed"`
	Stop             json.RawMessage    `json:"stop"` // string or array
	N                *float64           `json:"n"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	PresencePenalty  *float64           `json:"presence_penalty"`
	LogitBias        map[string]float64 `json:"logit_bias"` // token id (as a string) → bias
	BestOf           *float64           `json:"best_of"`    // legacy completions: only 1
}

type openAIStreamOpts struct {
	IncludeUsage bool `json:"include_usage"`
}

type openAIResponseFmt struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Schema json.RawMessage `json:"schema"` // enforced whatever "strict" says
	} `json:"json_schema"`
}

type openAIMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // string or array of parts
	// ReasoningContent is an assistant turn's thinking, as this server
	// (and DeepSeek's, llama-server's) returns it.
	ReasoningContent string           `json:"reasoning_content"`
	ToolCalls        []openAIToolCall `json:"tool_calls"`
	ToolCallID       string           `json:"tool_call_id"`
	Name             string           `json:"name"`
}

// openAIToolCall is a call as OpenAI writes it: arguments as a JSON string.
type openAIToolCall struct {
	Index    *int   `json:"index,omitempty"` // stream chunks only
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// openAIToolCalls writes calls with their arguments as JSON strings
// (indexed in stream chunks).
func openAIToolCalls(calls []ToolCall, indexed bool) []openAIToolCall {
	var out []openAIToolCall
	for i, c := range calls {
		o := openAIToolCall{ID: c.ID, Type: "function"}
		if indexed {
			o.Index = &i
		}
		o.Function.Name = c.Name
		o.Function.Arguments, _ = json.Marshal(string(c.Arguments))
		out = append(out, o)
	}
	return out
}

// toolChoice reads OpenAI's tool_choice: "none", "auto", "required" or
// a function, {"type": "function", "function": {"name"}} in chat
// completions and {"type": "function", "name"} in the Responses API (its
// name is the choice).
func toolChoice(raw json.RawMessage) (string, *Error) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
			return s, nil
		}
		return "", badRequest("invalid_value", "tool_choice", "tool_choice %q is not none, auto, required or a function", s)
	}
	var o struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &o) != nil || o.Type != "function" || o.Function.Name == "" && o.Name == "" {
		return "", badRequest("invalid_value", "tool_choice", `tool_choice must be "none", "auto", "required" or a function: {"type": "function", "function": {"name": …}} (chat) or {"type": "function", "name": …} (responses)`)
	}
	if o.Function.Name != "" {
		return o.Function.Name, nil
	}
	return o.Name, nil
}

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptDetails.CachedTokens: the prompt tokens the KV cache held from
	// an earlier request (OpenAI's prompt caching field).
	PromptDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type openAIChatMessage struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content"` // null in a reply that only calls tools
	// ReasoningContent is a reasoning model's thinking, apart from its
	// answer (DeepSeek's and llama-server's field).
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []openAIToolCall `json:"tool_calls,omitempty"`
}

func strp(s string) *string { return &s }

type openAIChatChoice struct {
	Index        int                 `json:"index"`
	Message      *openAIChatMessage  `json:"message,omitempty"`
	Delta        *openAIChatMessage  `json:"delta,omitempty"`
	FinishReason *string             `json:"finish_reason"`
	Logprobs     *openAIChatLogprobs `json:"logprobs"`
}

// openAIChatLogprobs are a chat choice's (or chunk's) token logprobs.
type openAIChatLogprobs struct {
	Content []openAILogprob `json:"content"`
	Refusal []openAILogprob `json:"refusal"` // always null: no refusals here
}

type openAILogprob struct {
	openAITopLogprob
	TopLogprobs []openAITopLogprob `json:"top_logprobs"`
}

type openAITopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// chatLogprobs converts the engine's logprobs; nil when not asked for.
func chatLogprobs(asked bool, lps []api.Logprob) *openAIChatLogprobs {
	if !asked {
		return nil
	}
	out := &openAIChatLogprobs{Content: []openAILogprob{}}
	for _, lp := range lps {
		o := openAILogprob{openAITopLogprob: openAITopLogprob{Token: lp.Piece, Logprob: lp.Logprob, Bytes: tokenBytes(lp.Piece, lp.Bytes)},
			TopLogprobs: []openAITopLogprob{}}
		for _, a := range lp.Top {
			o.TopLogprobs = append(o.TopLogprobs, openAITopLogprob{Token: a.Piece, Logprob: a.Logprob, Bytes: tokenBytes(a.Piece, a.Bytes)})
		}
		out.Content = append(out.Content, o)
	}
	return out
}

type openAIChatResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []openAIChatChoice `json:"choices"`
	Usage             *openAIUsage       `json:"usage,omitempty"`
}

type openAICompletionChoice struct {
	Index        int                       `json:"index"`
	Text         string                    `json:"text"`
	FinishReason *string                   `json:"finish_reason"`
	Logprobs     *openAICompletionLogprobs `json:"logprobs"`
}

// openAICompletionLogprobs is the legacy completions' logprobs object.
type openAICompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"` // null for an echoed prompt's first token
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`   // null likewise
	TextOffset    []int                `json:"text_offset"`
}

// completionLogprobs converts the engine's logprobs, the first token's
// text starting at character offset (nil when not asked for); an echoed
// prompt's (prompt: engine.Result.PromptLogprobs) come first, from
// offset 0, its first token with null logprobs (nothing comes before it).
func completionLogprobs(asked bool, prompt, lps []api.Logprob, offset int) *openAICompletionLogprobs {
	if !asked {
		return nil
	}
	out := &openAICompletionLogprobs{Tokens: []string{}, TokenLogprobs: []*float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	at := 0
	for i, lp := range append(slices.Clip(prompt), lps...) {
		if i == len(prompt) {
			at = offset
		}
		out.Tokens = append(out.Tokens, lp.Piece)
		out.TextOffset = append(out.TextOffset, at)
		at += utf8.RuneCountInString(lp.Piece)
		if i == 0 && len(prompt) > 0 {
			out.TokenLogprobs, out.TopLogprobs = append(out.TokenLogprobs, nil), append(out.TopLogprobs, nil)
			continue
		}
		v := lp.Logprob
		out.TokenLogprobs = append(out.TokenLogprobs, &v)
		top := map[string]float64{}
		for _, a := range lp.Top {
			if _, seen := top[a.Piece]; !seen {
				top[a.Piece] = a.Logprob
			}
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
	}
	return out
}

type openAICompletionResponse struct {
	ID                string                   `json:"id"`
	Object            string                   `json:"object"`
	Created           int64                    `json:"created"`
	Model             string                   `json:"model"`
	SystemFingerprint string                   `json:"system_fingerprint"`
	Choices           []openAICompletionChoice `json:"choices"`
	Usage             *openAIUsage             `json:"usage,omitempty"`
}

// options turns OpenAI's sampling fields into Options.
func (p *openAISampling) options(maxTokens *float64, maxTokensParam string, defaultMax int, profile map[string]any) (Options, *Error) {
	o := openAIDefaults()
	o.NumPredict = defaultMax
	m := maps.Clone(profile) // a made model's parameters, under the request's
	if m == nil {
		m = map[string]any{}
	}
	put := func(k string, v *float64) {
		if v != nil {
			m[k] = *v
		}
	}
	put("temperature", p.Temperature)
	put("top_p", p.TopP)
	put("seed", p.Seed)
	put("frequency_penalty", p.FrequencyPenalty)
	put("presence_penalty", p.PresencePenalty)
	for k, v := range p.LogitBias {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 {
			return o, badRequest("invalid_value", "logit_bias", "logit_bias key %q is not a token id", k)
		}
		if v < -100 || v > 100 || v != v {
			return o, badRequest("invalid_value", "logit_bias", "logit_bias for token %d is %v, outside -100..100", id, v)
		}
		if o.LogitBias == nil {
			o.LogitBias = map[int]float32{}
		}
		o.LogitBias[id] = float32(v)
	}
	if p.BestOf != nil && *p.BestOf != 1 {
		return o, badRequest("unsupported", "best_of", "best_of is %v: only 1 (one generation per request) is supported", *p.BestOf)
	}
	if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
		return o, badRequest("invalid_value", "temperature", "temperature is %v, outside OpenAI's range 0..2", *p.Temperature)
	}
	if e := applyOllamaOptions(&o, m); e != nil {
		e.Param = strings.TrimPrefix(e.Param, "options.")
		e.Message = strings.ReplaceAll(e.Message, "options.", "")
		return o, e
	}
	if s := strings.TrimSpace(string(p.Stop)); s != "" && s != "null" {
		var v any
		if err := json.Unmarshal(p.Stop, &v); err != nil {
			return o, badRequest("invalid_value", "stop", "stop: %v", err)
		}
		if e := stopOpt(&o.Stop, v, "stop"); e != nil {
			return o, e
		}
	}
	if maxTokens != nil {
		f := *maxTokens
		if f != float64(int(f)) || f < 1 || f > maxPredict {
			return o, badRequest("invalid_value", maxTokensParam, "%s is %v, outside the allowed range 1..%d", maxTokensParam, f, maxPredict)
		}
		o.NumPredict = int(f)
	}
	return o, nil
}

// messageText reads a message's content: a string, or an array of text
// parts.
func messageText(m openAIMessage, i int) (string, *Error) {
	c := strings.TrimSpace(string(m.Content))
	if c == "" || c == "null" {
		return "", nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return "", badRequest("invalid_value", "messages", "messages[%d].content: %v", i, err)
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", badRequest("invalid_value", "messages", "messages[%d].content must be a string or an array of parts", i)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", badRequest("unsupported", "messages", "messages[%d].content[%d]: part type %q is not supported (only text)", i, j, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func finish(reason string) *string {
	if reason == "" {
		reason = "stop"
	}
	return &reason
}

// maxChoices bounds n: each choice is a generation of its own.
const maxChoices = 8

// choices reads n, the choices to generate (1 when absent).
func (p *openAISampling) choices() (int, *Error) {
	if p.N == nil {
		return 1, nil
	}
	n := int(*p.N)
	if float64(n) != *p.N || n < 1 || n > maxChoices {
		return 0, badRequest("invalid_value", "n", "n is %v, not an integer 1..%d", *p.N, maxChoices)
	}
	return n, nil
}

// usageOf is the usage of a request's choices: the prompt once (as
// OpenAI counts it), the completions summed.
func usageOf(res ...*Result) *openAIUsage {
	u := &openAIUsage{PromptTokens: res[0].PromptTokens}
	for _, r := range res {
		u.CompletionTokens += r.Tokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptDetails.CachedTokens = res[0].CachedTokens
	return u
}

func (s *Server) openAIChat(w http.ResponseWriter, r *http.Request) {
	var req openAIChatRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeOpenAIError(w, e)
		return
	}
	maxTok, maxParam := req.MaxCompletionTokens, "max_completion_tokens"
	if maxTok == nil {
		maxTok, maxParam = req.MaxTokens, "max_tokens"
	}
	params, prof := s.withProfile(r.Context(), req.Model, nil)
	opts, e := req.options(maxTok, maxParam, -1, params)
	n := 1
	if e == nil {
		n, e = req.choices()
	}
	if e == nil && (req.Logprobs != nil || req.TopLogprobs != nil) {
		top := 0
		if req.TopLogprobs != nil {
			top = int(*req.TopLogprobs)
			if float64(top) != *req.TopLogprobs {
				top = -1
			}
		}
		e = setLogprobs(&opts, req.Logprobs != nil && *req.Logprobs, top, "top_logprobs")
	}
	var msgs []Message
	if e == nil && req.Model == "" {
		e = badRequest("missing_model", "model", "model is required")
	}
	if e == nil && len(req.Messages) == 0 {
		e = badRequest("missing_messages", "messages", "messages must hold at least one message")
	}
	var tools []toolDef
	var toolsJSON json.RawMessage
	choice := ""
	if e == nil {
		tools, toolsJSON, e = parseTools(req.Tools)
	}
	if e == nil {
		choice, e = toolChoice(req.ToolChoice)
	}
	if e == nil && req.ResponseFormat != nil {
		switch req.ResponseFormat.Type {
		case "", "text":
		case "json_object":
			opts.Format = "json"
		case "json_schema":
			js := req.ResponseFormat.JSONSchema
			if js == nil || len(js.Schema) == 0 || string(js.Schema) == "null" {
				e = badRequest("missing_schema", "response_format.json_schema.schema", "response_format json_schema needs json_schema.schema")
				break
			}
			opts.Format, e = schemaFormat(js.Schema, "response_format.json_schema.schema")
		default:
			e = badRequest("unsupported", "response_format", `response_format %q is not supported (text, json_object and json_schema are)`, req.ResponseFormat.Type)
		}
	}
	if e == nil {
		msgs, e = openAIMessages(req.Messages)
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	if k := req.ChatTemplateKwargs; k != nil && k.EnableThinking != nil {
		opts.Think = k.EnableThinking
	}
	effort, param := req.ReasoningEffort, "reasoning_effort"
	if k := req.ChatTemplateKwargs; effort == nil && k != nil {
		effort, param = k.ReasoningEffort, "chat_template_kwargs.reasoning_effort"
	}
	if effort != nil {
		if e := reasoningEffort(&opts, *effort, param); e != nil {
			writeOpenAIError(w, e)
			return
		}
	}
	greq := &GenerateRequest{Model: req.Model, Messages: systemFirst(prof, msgs), Options: opts}
	if e := applyTools(greq, tools, toolsJSON, choice); e != nil {
		writeOpenAIError(w, e)
		return
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	s.openAIRun(w, r, "chat", greq, n, req.Stream, includeUsage, "chatcmpl-",
		func(id string, created int64, i int, dl delta, first bool, calls []ToolCall) any {
			d := &openAIChatMessage{Content: strp(dl.Text), ReasoningContent: dl.Thinking, ToolCalls: openAIToolCalls(calls, true)}
			lps := dl.Logprobs
			if (len(calls) > 0 || dl.Thinking != "") && dl.Text == "" {
				d.Content = nil
			}
			if first {
				d.Role = "assistant"
			}
			return openAIChatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
				SystemFingerprint: "glassbox", Choices: []openAIChatChoice{{Index: i, Delta: d, Logprobs: chatLogprobs(opts.Logprobs, lps)}}}
		},
		func(id string, created int64, i int, res *Result) any {
			return openAIChatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model, SystemFingerprint: "glassbox",
				Choices: []openAIChatChoice{{Index: i, Delta: &openAIChatMessage{}, FinishReason: chatFinish(res)}}}
		},
		func(id string, created int64, res []*Result, lps [][]api.Logprob) any {
			out := openAIChatResponse{ID: id, Object: "chat.completion", Created: created, Model: req.Model, SystemFingerprint: "glassbox",
				Usage: usageOf(res...)}
			for i, r := range res {
				msg := &openAIChatMessage{Role: "assistant", Content: strp(r.Text), ReasoningContent: r.Thinking,
					ToolCalls: openAIToolCalls(r.ToolCalls, false)}
				if len(r.ToolCalls) > 0 && r.Text == "" {
					msg.Content = nil
				}
				out.Choices = append(out.Choices, openAIChatChoice{Index: i, Message: msg, FinishReason: chatFinish(r), Logprobs: chatLogprobs(opts.Logprobs, lps[i])})
			}
			return out
		},
		func(id string, created int64, res []*Result) any {
			return openAIChatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
				SystemFingerprint: "glassbox", Choices: []openAIChatChoice{}, Usage: usageOf(res...)}
		})
}

// openAIMessages reads a conversation in OpenAI's form: a developer
// message is a system message, calls' arguments become objects.
func openAIMessages(in []openAIMessage) ([]Message, *Error) {
	var msgs []Message
	for i, m := range in {
		if e := checkRole(m.Role, i); e != nil {
			return nil, e
		}
		text, e := messageText(m, i)
		if e != nil {
			return nil, e
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		msg := Message{Role: role, Content: text, ToolCallID: m.ToolCallID, Name: m.Name}
		if role == "assistant" {
			msg.Thinking = m.ReasoningContent
		}
		for _, c := range m.ToolCalls {
			args, e := argumentsObject(c.Function.Arguments, i)
			if e != nil {
				return nil, e
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// reasoningEffort reads OpenAI's reasoning effort (param) into o: "none"
// turns thinking off; "minimal", "low", "medium", "high" and "xhigh" turn
// it on at that effort, minimal read as low and xhigh as high (gpt-oss's
// levels are low, medium and high).
func reasoningEffort(o *Options, effort, param string) *Error {
	on := true
	switch effort {
	case "none":
		on = false
	case "minimal":
		o.Effort = "low"
	case "low", "medium", "high":
		o.Effort = effort
	case "xhigh":
		o.Effort = "high"
	default:
		return badRequest("invalid_value", param, "%s is %q, not none, minimal, low, medium, high or xhigh", param, effort)
	}
	o.Think = &on
	return nil
}

// chatFinish is a chat choice's finish_reason.
func chatFinish(res *Result) *string {
	if len(res.ToolCalls) > 0 {
		return strp("tool_calls")
	}
	return finish(res.DoneReason)
}

func (s *Server) openAICompletion(w http.ResponseWriter, r *http.Request) {
	var req openAICompletionRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeOpenAIError(w, e)
		return
	}
	params, _ := s.withProfile(r.Context(), req.Model, nil)
	maxTokens, scoreOnly := req.MaxTokens, req.MaxTokens != nil && *req.MaxTokens == 0
	if scoreOnly {
		maxTokens = nil // checked below: only with echo
	}
	opts, e := req.options(maxTokens, "max_tokens", 16, params)
	if e == nil && scoreOnly {
		if !req.Echo {
			e = badRequest("invalid_value", "max_tokens", "max_tokens 0 generates nothing: give it with echo, to score the prompt")
		}
		opts.NoGenerate = true
	}
	n := 1
	if e == nil {
		n, e = req.choices()
	}
	prompt := ""
	var promptIDs []int
	if e == nil && req.Model == "" {
		e = badRequest("missing_model", "model", "model is required")
	}
	if e == nil {
		prompt, promptIDs, e = completionPrompt(req.Prompt)
	}
	if e == nil && req.Logprobs != nil {
		top := int(*req.Logprobs)
		if float64(top) != *req.Logprobs || top < 0 || top > 5 {
			e = badRequest("invalid_value", "logprobs", "logprobs is %v, not an integer 0..5", *req.Logprobs)
		} else {
			e = setLogprobs(&opts, true, top, "logprobs")
		}
	}
	if e == nil && req.Suffix != "" && (promptIDs != nil || req.Echo) {
		e = badRequest("unsupported", "suffix", "suffix (fill in the middle) takes a text prompt, without echo")
	}
	if e == nil && req.Echo && opts.Logprobs {
		// The prompt's tokens are scored too, as OpenAI's echo does: every
		// row of the prefill is kept.
		opts.PromptLogprobs = true
		if req.Stream {
			e = badRequest("unsupported", "stream", "echo with logprobs (scoring the prompt) is not streamed: send stream false")
		}
	}
	if e == nil && opts.NoGenerate && n > 1 {
		e = badRequest("invalid_value", "n", "max_tokens 0 generates nothing: n must be 1")
	}
	if e == nil && promptIDs != nil && req.Echo {
		// The echoed text of a prompt given as ids is theirs.
		text, err := s.cfg.Backend.Detokenize(r.Context(), req.Model, promptIDs)
		if err != nil {
			e = toError(err)
		}
		prompt = text
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	greq := &GenerateRequest{Model: req.Model, Prompt: prompt, PromptIDs: promptIDs, Raw: true, Options: opts}
	if req.Suffix != "" {
		greq.FIM = &FIM{Suffix: req.Suffix}
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	echoed := false
	// Logprobs' text offsets count characters of the returned text (the
	// prompt first, when echoed).
	base, done := 0, 0
	if req.Echo {
		base = utf8.RuneCountInString(prompt)
	}
	s.openAIRun(w, r, "text", greq, n, req.Stream, includeUsage, "cmpl-",
		func(id string, created int64, i int, d delta, first bool, _ []ToolCall) any {
			if first { // each choice's text and offsets start over
				echoed, done = false, 0
			}
			text := d.Text
			lp := completionLogprobs(opts.Logprobs, nil, d.Logprobs, base+done)
			done += utf8.RuneCountInString(text)
			if req.Echo && !echoed {
				text, echoed = prompt+text, true
			}
			return openAICompletionResponse{ID: id, Object: "text_completion", Created: created, Model: req.Model,
				SystemFingerprint: "glassbox", Choices: []openAICompletionChoice{{Index: i, Text: text, Logprobs: lp}}}
		},
		func(id string, created int64, i int, res *Result) any {
			return openAICompletionResponse{ID: id, Object: "text_completion", Created: created, Model: req.Model, SystemFingerprint: "glassbox",
				Choices: []openAICompletionChoice{{Index: i, FinishReason: finish(res.DoneReason)}}}
		},
		func(id string, created int64, res []*Result, lps [][]api.Logprob) any {
			out := openAICompletionResponse{ID: id, Object: "text_completion", Created: created, Model: req.Model,
				SystemFingerprint: "glassbox", Usage: usageOf(res...)}
			for i, r := range res {
				text := r.Text
				if req.Echo {
					text = prompt + text
				}
				out.Choices = append(out.Choices, openAICompletionChoice{Index: i, Text: text, FinishReason: finish(r.DoneReason),
					Logprobs: completionLogprobs(opts.Logprobs, r.PromptLogprobs, lps[i], base)})
			}
			return out
		},
		func(id string, created int64, res []*Result) any {
			return openAICompletionResponse{ID: id, Object: "text_completion", Created: created, Model: req.Model,
				SystemFingerprint: "glassbox", Choices: []openAICompletionChoice{}, Usage: usageOf(res...)}
		})
}

// completionPrompt reads the legacy prompt: a string or an array of one
// string, or token ids (an array of them, or an array of one such array),
// evaluated as given.
func completionPrompt(raw json.RawMessage) (string, []int, *Error) {
	var v any
	if len(raw) == 0 {
		return "", nil, badRequest("missing_prompt", "prompt", "prompt is required")
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", nil, badRequest("invalid_value", "prompt", "prompt: %v", err)
	}
	switch x := v.(type) {
	case string:
		return x, nil, nil
	case []any:
		if len(x) == 1 {
			switch y := x[0].(type) {
			case string:
				return y, nil, nil
			case []any:
				x = y
			}
		}
		ids := make([]int, 0, len(x))
		for _, el := range x {
			f, ok := el.(float64)
			if !ok || f != float64(int(f)) || f < 0 {
				return "", nil, badRequest("unsupported", "prompt", "prompt must be a string, token ids, or an array of one of them (one prompt per request)")
			}
			ids = append(ids, int(f))
		}
		if len(ids) == 0 {
			return "", nil, badRequest("missing_prompt", "prompt", "prompt has no token ids")
		}
		return "", ids, nil
	}
	return "", nil, badRequest("invalid_value", "prompt", "prompt must be a string, got %s", jsonKind(v))
}

// openAIRun runs a request's n choices, each a generation of its own
// (started together; a request's seed s gives choice i the seed s+i), and
// answers with one JSON object (whole, of every choice), or with SSE chunks
// of each choice in turn (its index on every chunk), ending in "data:
// [DONE]". Errors before the first chunk get their HTTP status; after it
// they arrive as a data line holding OpenAI's error object, which the
// official clients raise as an APIError. chunk makes choice i's chunk of d
// (first: its first chunk), done its last streamed chunk, whole the
// unstreamed answer of every choice, usage the streamed usage chunk.
func (s *Server) openAIRun(w http.ResponseWriter, r *http.Request, kind string, req *GenerateRequest, n int, stream, includeUsage bool,
	idPrefix string,
	chunk func(id string, created int64, i int, d delta, first bool, calls []ToolCall) any,
	done func(id string, created int64, i int, res *Result) any,
	whole func(id string, created int64, res []*Result, lps [][]api.Logprob) any,
	usage func(id string, created int64, res []*Result) any) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	var id string
	var created int64
	var sw *streamWriter
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("deliver: encoding chunk: %w", err)
		}
		return sw.sse("", "", b)
	}
	fail := func(e *Error) {
		if sw == nil {
			writeOpenAIError(w, e)
			return
		}
		send(e.openAI())
		sw.write([]byte("data: [DONE]\n\n"))
	}
	// Every choice is started first, so that with several parallel
	// streams (serve --parallel) they are generated together; each is then
	// followed in turn (a job's events replay from its first).
	gens := make([]*generation, n)
	reqs := make([]*GenerateRequest, n)
	for i := range n {
		reqs[i] = req
		if i > 0 && req.Options.Seed != nil {
			c := *req
			seed := *req.Options.Seed + uint64(i)
			c.Options.Seed = &seed
			reqs[i] = &c
		}
	}
	for i := range n {
		g, e := s.startGeneration(ctx, jobSpec(kind, reqs[i]), reqs[i])
		if e != nil && i > 0 && e.Code == "queue_full" {
			break // the rest start as the first ones finish
		}
		if e != nil {
			fail(e) // the choices started end with the request's context
			return
		}
		gens[i] = g
	}
	id, created = idPrefix+gens[0].job.ID, gens[0].start.Unix()
	w.Header().Set("X-Glassbox-Job", gens[0].job.ID)
	var results []*Result
	var lpss [][]api.Logprob
	for i, g := range gens {
		creq := reqs[i]
		if g == nil {
			var e *Error
			if g, e = s.startGeneration(ctx, jobSpec(kind, creq), creq); e != nil {
				fail(e)
				return
			}
		}
		if !stream {
			var all []api.Logprob
			res, err := s.follow(ctx, g, func(d delta) error { all = append(all, d.Logprobs...); return nil })
			if err != nil {
				fail(toError(err))
				return
			}
			results, lpss = append(results, res), append(lpss, all)
			continue
		}
		first := true
		res, rest, err := s.followStream(ctx, g, creq, func(d delta) error {
			if sw == nil {
				sw = newStreamWriter(w, "text/event-stream", s.cfg.WriteTimeout)
			}
			err := send(chunk(id, created, i, d, first, nil))
			first = false
			return err
		})
		if err != nil {
			fail(toError(err))
			return
		}
		if sw == nil {
			sw = newStreamWriter(w, "text/event-stream", s.cfg.WriteTimeout)
		}
		if first || rest.Text != "" || len(rest.Logprobs) > 0 || len(res.ToolCalls) > 0 {
			send(chunk(id, created, i, rest, first, res.ToolCalls))
		}
		send(done(id, created, i, res))
		results = append(results, res)
	}
	if !stream {
		writeJSON(w, http.StatusOK, whole(id, created, results, lpss))
		return
	}
	if includeUsage {
		send(usage(id, created, results))
	}
	sw.write([]byte("data: [DONE]\n\n"))
}
