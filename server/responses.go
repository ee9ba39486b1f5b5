package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// OpenAI's Responses API (POST /v1/responses), which OpenAI's newer SDKs,
// its Agents SDK and Codex speak: input as a string or a list of items
// (messages of input_text/output_text parts, function_call and
// function_call_output items), instructions, function tools and
// tool_choice, text.format (json_object, json_schema), reasoning,
// max_output_tokens, temperature, top_p; the reply is a response object
// of output items (reasoning, message, function_call), whole or as its
// stream of typed events. A response is a job: previous_response_id
// continues one (its conversation is rebuilt from the journal, so its
// prompt cache applies), GET /v1/responses/{id} fetches one, and
// background runs one that outlives its request. Images, files and
// OpenAI's built-in tools are refused by name.

type responsesRequest struct {
	Model              string              `json:"model"`
	Input              json.RawMessage     `json:"input"` // a string or items
	Instructions       string              `json:"instructions"`
	PreviousResponseID string              `json:"previous_response_id"`
	MaxOutputTokens    *float64            `json:"max_output_tokens"`
	Temperature        *float64            `json:"temperature"`
	TopP               *float64            `json:"top_p"`
	Stream             bool                `json:"stream"`
	Background         bool                `json:"background"`
	Store              *bool               `json:"store"` // false: not kept for GET or previous_response_id
	Tools              []responsesTool     `json:"tools"`
	ToolChoice         json.RawMessage     `json:"tool_choice"`
	Text               *responsesText      `json:"text"`
	Reasoning          *responsesReasoning `json:"reasoning"`
	Truncation         string              `json:"truncation"`
	Conversation       json.RawMessage     `json:"conversation"`
	TopLogprobs        *float64            `json:"top_logprobs"`
	// Include asks for more in the output; "message.output_text.logprobs"
	// is read, the others (encrypted reasoning, …) do not apply here.
	Include []string `json:"include"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type responsesText struct {
	Format *struct {
		Type   string          `json:"type"` // text, json_object, json_schema
		Name   string          `json:"name,omitempty"`
		Schema json.RawMessage `json:"schema,omitempty"`
		Strict *bool           `json:"strict,omitempty"`
	} `json:"format"`
}

type responsesReasoning struct {
	Effort *string `json:"effort"` // none, minimal, low, medium, high
}

// responsesInputItem is one item of input, of any type.
type responsesInputItem struct {
	Type      string          `json:"type"` // "" (a message with a role), message, function_call, function_call_output, reasoning
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"` // a string or parts
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a string holding a JSON object
	Output    json.RawMessage `json:"output"`    // a string or parts
}

// responsesJob is a response's job parameters in the journal: the
// generation and what previous_response_id needs to continue it.
type responsesJob struct {
	*GenerateRequest
	API string `json:"api"` // "responses"
	// SystemAdded: Messages[0] came from instructions or the model's
	// profile, not from input; a continuation takes its own.
	SystemAdded bool `json:"system_added,omitempty"`
	// Echoed fields of the response object.
	Instructions    string             `json:"instructions,omitempty"`
	MaxOutputTokens *int               `json:"max_output_tokens,omitempty"`
	Tools           []responsesTool    `json:"response_tools,omitempty"`
	Text            json.RawMessage    `json:"text,omitempty"`
	Previous        string             `json:"previous_response_id,omitempty"`
	ToolChoiceGiven json.RawMessage    `json:"tool_choice_given,omitempty"`
	Created         int64              `json:"created_at"`
	Sampling        map[string]float64 `json:"sampling,omitempty"` // temperature, top_p as used
	// NotStored: the request said store false. The job stays in the
	// journal (glassbox's record of what ran), but the Responses API
	// does not give it back: GET and previous_response_id answer 404.
	NotStored  bool `json:"not_stored,omitempty"`
	Background bool `json:"background,omitempty"`
}

// responsesUsage is a response's token counts.
type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// responseObject is a response, whole or as a stream event's snapshot.
type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"` // queued, in_progress, completed, incomplete, failed, cancelled
	Background         bool              `json:"background"`
	Store              bool              `json:"store"`
	Error              *responsesError   `json:"error"`
	IncompleteDetails  *responsesReason  `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []map[string]any  `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Temperature        float64           `json:"temperature"`
	TopP               float64           `json:"top_p"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []responsesTool   `json:"tools"`
	Text               json.RawMessage   `json:"text"`
	Truncation         string            `json:"truncation"`
	Usage              *responsesUsage   `json:"usage"`
	Metadata           map[string]string `json:"metadata"`
	JobID              string            `json:"glassbox_job"`
}

type responsesError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Stage   string `json:"stage,omitempty"`
}

type responsesReason struct {
	Reason string `json:"reason"`
}

// responseID and jobOfResponse map a job to its response's id and back.
func responseID(job string) string { return "resp_" + job }

func jobOfResponse(id string) string { return strings.TrimPrefix(id, "resp_") }

// callID is a function call's call_id: the model's own, else one made
// from the job (the same when a continuation rebuilds the call).
func callID(job string, i int, c ToolCall) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("call_%s_%d", job, i)
}

// responsesParts reads a message's content (or a call output): a string,
// or parts of input_text/output_text; others are refused by name.
func responsesParts(raw json.RawMessage, field string) (string, *Error) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return "", nil
	}
	if t[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badRequest("invalid_value", field, "%s: %v", field, err)
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("invalid_value", field, "%s must be a string or an array of content parts: %v", field, err)
	}
	var b strings.Builder
	for i, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			b.WriteString(p.Text)
		default:
			return "", badRequest("unsupported", field, "%s[%d]: a %q part is not supported (input_text and output_text are; glassbox runs text models)", field, i, p.Type)
		}
	}
	return b.String(), nil
}

// reasoningText reads a reasoning item's content: its reasoning_text
// parts (as this server writes them).
func reasoningText(raw json.RawMessage, field string) (string, *Error) {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return "", nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("invalid_value", field, "%s must be an array of reasoning_text parts: %v", field, err)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "reasoning_text" || p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// responsesMessages turns input into the conversation: function_call
// items join the assistant turn before them (or make one),
// function_call_output items become tool turns named by the call, and a
// reasoning item's text is the thinking of the assistant turn after it.
func responsesMessages(input json.RawMessage, prior []Message) ([]Message, *Error) {
	out := prior
	t := strings.TrimSpace(string(input))
	if t == "" || t == "null" {
		return out, nil
	}
	if t[0] == '"' {
		text, e := responsesParts(input, "input")
		if e != nil {
			return nil, e
		}
		return append(out, Message{Role: "user", Content: text}), nil
	}
	var items []responsesInputItem
	if err := json.Unmarshal(input, &items); err != nil {
		return nil, badRequest("invalid_value", "input", "input must be a string or an array of items: %v", err)
	}
	names := map[string]string{} // call_id → the function's name
	for _, m := range prior {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
	}
	thinking := "" // a reasoning item's, for the assistant turn after it
	for i, it := range items {
		field := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			text, e := responsesParts(it.Content, field+".content")
			if e != nil {
				return nil, e
			}
			role := it.Role
			switch role {
			case "user", "assistant", "system":
			case "developer":
				role = "system"
			default:
				return nil, badRequest("invalid_role", field+".role", "%s: role %q is not user, assistant, system or developer", field, it.Role)
			}
			msg := Message{Role: role, Content: text}
			if role == "assistant" {
				msg.Thinking, thinking = thinking, ""
			}
			out = append(out, msg)
		case "function_call":
			args, e := argumentsObject(it.Arguments, i)
			if e != nil {
				e.Param, e.Message = field+".arguments", strings.Replace(e.Message, fmt.Sprintf("messages[%d]", i), field, 1)
				return nil, e
			}
			if it.CallID == "" || it.Name == "" {
				return nil, badRequest("invalid_value", field, "%s: a function_call needs its call_id and name", field)
			}
			call := ToolCall{ID: it.CallID, Name: it.Name, Arguments: args}
			names[it.CallID] = it.Name
			if n := len(out); n > 0 && out[n-1].Role == "assistant" && (thinking == "" || out[n-1].Thinking == "") {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
				out[n-1].Thinking += thinking
			} else {
				out = append(out, Message{Role: "assistant", Thinking: thinking, ToolCalls: []ToolCall{call}})
			}
			thinking = ""
		case "function_call_output":
			text, e := responsesParts(it.Output, field+".output")
			if e != nil {
				return nil, e
			}
			name, ok := names[it.CallID]
			if !ok {
				return nil, badRequest("invalid_value", field+".call_id", "%s: no function_call with call_id %q comes before this output", field, it.CallID)
			}
			out = append(out, Message{Role: "tool", ToolCallID: it.CallID, Name: name, Content: text})
		case "reasoning":
			text, e := reasoningText(it.Content, field+".content")
			if e != nil {
				return nil, e
			}
			thinking += text
		default:
			return nil, badRequest("unsupported", field+".type", "%s: a %q item is not supported (messages, function_call, function_call_output and reasoning are)", field, it.Type)
		}
	}
	return out, nil
}

// previousConversation is the conversation of the response named id
// with its reply: what previous_response_id continues. Its instructions
// (or profile system message) are not carried over, as OpenAI's are not.
func (s *Server) previousConversation(ctx context.Context, id string) ([]Message, *Error) {
	notFound := &Error{Status: http.StatusNotFound, Stage: "deliver", Code: "previous_response_not_found", Param: "previous_response_id",
		Message: fmt.Sprintf("previous response %q not found", id)}
	if !strings.HasPrefix(id, "resp_") {
		return nil, notFound
	}
	job, err := s.cfg.Jobs.Get(ctx, jobOfResponse(id))
	if errors.Is(err, ErrJobNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, toError(err)
	}
	var p responsesJob
	if json.Unmarshal(job.Params, &p) != nil || p.API != "responses" || p.GenerateRequest == nil {
		return nil, badRequest("invalid_value", "previous_response_id", "job %s is not a response of /v1/responses", job.ID)
	}
	if p.NotStored {
		notFound.Message += " (it was created with store: false)"
		return nil, notFound
	}
	var res Result
	if job.State != api.StateDone || json.Unmarshal(job.Result, &res) != nil {
		return nil, badRequest("invalid_value", "previous_response_id", "previous response %s is %s: only a finished one can be continued", id, job.State)
	}
	msgs := p.Messages
	if p.SystemAdded && len(msgs) > 0 {
		msgs = msgs[1:]
	}
	reply := Message{Role: "assistant", Content: res.Text, Thinking: res.Thinking}
	for i, c := range res.ToolCalls {
		c.ID = callID(job.ID, i, c)
		reply.ToolCalls = append(reply.ToolCalls, c)
	}
	return append(append([]Message(nil), msgs...), reply), nil
}

// responsesGenerate checks a request and turns it into a generation and
// the job's journaled parameters.
func (s *Server) responsesGenerate(r *http.Request, req *responsesRequest) (*GenerateRequest, *responsesJob, *Error) {
	if req.Model == "" {
		return nil, nil, badRequest("missing_model", "model", "model is required")
	}
	switch {
	case len(req.Conversation) > 0 && string(req.Conversation) != "null":
		return nil, nil, badRequest("unsupported", "conversation", "conversations are not supported: continue a response with previous_response_id")
	case req.Truncation != "" && req.Truncation != "disabled":
		return nil, nil, badRequest("unsupported", "truncation", "truncation %q is not supported: glassbox never drops input to fit the context (a request that does not fit fails, with both numbers)", req.Truncation)
	}
	params, prof := s.withProfile(r.Context(), req.Model, nil)
	samp := openAISampling{Temperature: req.Temperature, TopP: req.TopP}
	o, e := samp.options(req.MaxOutputTokens, "max_output_tokens", -1, params)
	if e != nil {
		return nil, nil, e
	}
	if req.TopLogprobs != nil || slices.Contains(req.Include, "message.output_text.logprobs") {
		top := 0
		if t := req.TopLogprobs; t != nil {
			if top = int(*t); float64(top) != *t {
				top = -1
			}
		}
		if e := setLogprobs(&o, true, top, "top_logprobs"); e != nil {
			return nil, nil, e
		}
	}
	if rs := req.Reasoning; rs != nil && rs.Effort != nil {
		if e := reasoningEffort(&o, *rs.Effort, "reasoning.effort"); e != nil {
			return nil, nil, e
		}
	}
	textFmt := json.RawMessage(`{"format":{"type":"text"}}`)
	if t := req.Text; t != nil && t.Format != nil {
		switch t.Format.Type {
		case "", "text":
		case "json_object":
			o.Format = "json"
		case "json_schema":
			if len(t.Format.Schema) == 0 || string(t.Format.Schema) == "null" {
				return nil, nil, badRequest("missing_schema", "text.format.schema", "text.format of type json_schema needs a schema")
			}
			if o.Format, e = schemaFormat(t.Format.Schema, "text.format.schema"); e != nil {
				return nil, nil, e
			}
		default:
			return nil, nil, badRequest("unsupported", "text.format.type", "text.format.type %q is not supported (text, json_object and json_schema are)", t.Format.Type)
		}
		textFmt, _ = json.Marshal(t) // plain data: cannot fail
	}
	var prior []Message
	if req.PreviousResponseID != "" {
		if prior, e = s.previousConversation(r.Context(), req.PreviousResponseID); e != nil {
			return nil, nil, e
		}
	}
	msgs, e := responsesMessages(req.Input, prior)
	if e != nil {
		return nil, nil, e
	}
	if len(msgs) == len(prior) {
		return nil, nil, badRequest("missing_input", "input", "input is required: a string or at least one item")
	}
	added := false
	if req.Instructions != "" {
		msgs, added = append([]Message{{Role: "system", Content: req.Instructions}}, msgs...), true
	} else if with := systemFirst(prof, msgs); len(with) > len(msgs) {
		msgs, added = with, true
	}
	greq := &GenerateRequest{Model: req.Model, Messages: msgs, Options: o}
	var fns []functionTool
	for i, t := range req.Tools {
		if t.Type != "function" {
			return nil, nil, badRequest("unsupported", "tools", "tools[%d]: OpenAI's built-in tool %q is not available here (function tools are)", i, t.Type)
		}
		fns = append(fns, functionTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	tools, toolsJSON, e := parseFunctionTools(fns)
	if e != nil {
		return nil, nil, e
	}
	choice, e := toolChoice(req.ToolChoice)
	if e != nil {
		return nil, nil, e
	}
	if e := applyTools(greq, tools, toolsJSON, choice); e != nil {
		return nil, nil, e
	}
	job := &responsesJob{GenerateRequest: greq, API: "responses", SystemAdded: added, Instructions: req.Instructions,
		Tools: req.Tools, Text: textFmt, Previous: req.PreviousResponseID, ToolChoiceGiven: req.ToolChoice,
		Created: time.Now().Unix(), Sampling: map[string]float64{"temperature": shortest(o.Temperature), "top_p": shortest(o.TopP)}}
	if req.MaxOutputTokens != nil {
		n := o.NumPredict
		job.MaxOutputTokens = &n
	}
	return greq, job, nil
}

// shortest is x as the float64 its shortest decimal form names (0.7, not
// 0.699999988), as a client that sent it reads it back.
func shortest(x float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return v
}

// response is the response object of job j in state status, with output.
func (p *responsesJob) response(jobID, status string, output []map[string]any) responseObject {
	out := responseObject{ID: responseID(jobID), Object: "response", CreatedAt: p.Created, Status: status,
		MaxOutputTokens: p.MaxOutputTokens, Model: p.Model, Output: output, ParallelToolCalls: true,
		Temperature: p.Sampling["temperature"], TopP: p.Sampling["top_p"], ToolChoice: p.ToolChoiceGiven,
		Tools: p.Tools, Text: p.Text, Truncation: "disabled", Metadata: map[string]string{}, JobID: jobID,
		Background: p.Background, Store: !p.NotStored}
	if out.Output == nil {
		out.Output = []map[string]any{}
	}
	if out.Tools == nil {
		out.Tools = []responsesTool{}
	}
	if len(out.ToolChoice) == 0 {
		out.ToolChoice = json.RawMessage(`"auto"`)
	}
	if p.Instructions != "" {
		out.Instructions = &p.Instructions
	}
	if p.Previous != "" {
		out.PreviousResponseID = &p.Previous
	}
	return out
}

// finished is the response of a finished generation: its output items
// (reasoning, message with the logprobs of its text, calls), usage and
// status.
func (p *responsesJob) finished(jobID string, res *Result, reasoningTokens int, lps []api.Logprob) responseObject {
	var output []map[string]any
	if res.Thinking != "" {
		output = append(output, reasoningItem(jobID, res.Thinking, "completed"))
	}
	if res.Text != "" || len(res.ToolCalls) == 0 {
		output = append(output, messageItem(jobID, res.Text, "completed", lps))
	}
	for i, c := range res.ToolCalls {
		output = append(output, callItem(jobID, i, c, string(c.Arguments), "completed"))
	}
	return p.withResult(jobID, output, res, reasoningTokens)
}

// withResult is the response with output and res's status and usage.
func (p *responsesJob) withResult(jobID string, output []map[string]any, res *Result, reasoningTokens int) responseObject {
	status := "completed"
	if res.DoneReason == "length" {
		status = "incomplete"
	}
	out := p.response(jobID, status, output)
	if status == "incomplete" {
		out.IncompleteDetails = &responsesReason{Reason: "max_output_tokens"}
	}
	u := &responsesUsage{InputTokens: res.PromptTokens, OutputTokens: res.Tokens, TotalTokens: res.PromptTokens + res.Tokens}
	u.InputTokensDetails.CachedTokens = res.CachedTokens
	u.OutputTokensDetails.ReasoningTokens = reasoningTokens
	out.Usage = u
	return out
}

func reasoningItem(jobID, text, status string) map[string]any {
	return map[string]any{"type": "reasoning", "id": "rs_" + jobID, "status": status, "summary": []any{},
		"content": []any{map[string]any{"type": "reasoning_text", "text": text}}}
}

func messageItem(jobID, text, status string, lps []api.Logprob) map[string]any {
	return map[string]any{"type": "message", "id": "msg_" + jobID, "status": status, "role": "assistant",
		"content": []any{outputText(text, lps)}}
}

// outputText is a message's text part with its tokens' logprobs (empty
// unless asked for), in the chat completions' form OpenAI uses here too.
func outputText(text string, lps []api.Logprob) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": chatLogprobs(true, lps).Content}
}

func callItem(jobID string, i int, c ToolCall, args, status string) map[string]any {
	return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", jobID, i), "call_id": callID(jobID, i, c),
		"name": c.Name, "arguments": args, "status": status}
}

// failedResponse is the response of a job that failed or was cancelled.
func (p *responsesJob) failedResponse(jobID string, e *Error) responseObject {
	out := p.response(jobID, "failed", nil)
	out.Error = &responsesError{Code: e.Code, Message: e.Error(), Stage: e.Stage}
	if e.Hint != "" {
		out.Error.Message += " (" + e.Hint + ")"
	}
	if out.Error.Code == "" {
		out.Error.Code = "server_error"
	}
	return out
}

// openAIResponses is POST /v1/responses.
func (s *Server) openAIResponses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeOpenAIError(w, e)
		return
	}
	greq, p, e := s.responsesGenerate(r, &req)
	if e == nil && req.Background && req.Stream {
		e = badRequest("unsupported", "background", "a background response is fetched with GET /v1/responses/{id}, not streamed")
	}
	if e == nil && req.Background && req.Store != nil && !*req.Store {
		e = badRequest("invalid_value", "store", "a background response must be stored (store: true): it is fetched with GET /v1/responses/{id}")
	}
	if e == nil {
		p.NotStored, p.Background = req.Store != nil && !*req.Store, req.Background
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	params, _ := json.Marshal(p) // plain data: cannot fail
	spec := JobSpec{Kind: "chat", Model: greq.Model, Params: params}
	if req.Background {
		// It belongs to the server, as a native job does.
		g, e := s.startGeneration(s.base, spec, greq)
		if e != nil {
			writeOpenAIError(w, e)
			return
		}
		w.Header().Set("X-Glassbox-Job", g.job.ID)
		writeJSON(w, http.StatusOK, p.response(g.job.ID, "queued", nil))
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	g, e := s.startGeneration(ctx, spec, greq)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	w.Header().Set("X-Glassbox-Job", g.job.ID)
	jobID := g.job.ID
	if !req.Stream {
		reasoning := 0
		var lps []api.Logprob // the answer's tokens'
		res, err := s.follow(ctx, g, func(d delta) error {
			if d.Thinking != "" {
				reasoning++
			} else {
				lps = append(lps, d.Logprobs...)
			}
			return nil
		})
		if err != nil {
			writeOpenAIError(w, toError(err))
			return
		}
		writeJSON(w, http.StatusOK, p.finished(jobID, res, reasoning, lps))
		return
	}
	rs := &responsesStream{sw: newStreamWriter(w, "text/event-stream", s.cfg.WriteTimeout), job: jobID, index: -1}
	start := p.response(jobID, "in_progress", nil)
	if rs.event("response.created", map[string]any{"response": start}) != nil ||
		rs.event("response.in_progress", map[string]any{"response": start}) != nil {
		return
	}
	res, rest, err := s.followStream(ctx, g, greq, rs.send)
	if err == nil && (rest.Text != "" || rest.Thinking != "") {
		err = rs.send(rest)
	}
	if err == nil && len(res.ToolCalls) == 0 && !rs.hasMessage {
		err = rs.open("message") // an empty reply is an empty message, as a whole response has
	}
	for i := 0; err == nil && i < len(res.ToolCalls); i++ {
		err = rs.call(i, res.ToolCalls[i])
	}
	if err == nil {
		err = rs.close()
	}
	if err != nil {
		rs.event("response.failed", map[string]any{"response": p.failedResponse(jobID, toError(err))})
		return
	}
	final := p.withResult(jobID, rs.items, res, rs.reasoning)
	typ := "response.completed"
	if final.Status == "incomplete" {
		typ = "response.incomplete"
	}
	rs.event(typ, map[string]any{"response": final})
}

// responsesStream writes a response's events: output items open and
// close as the kind of text changes (reasoning, then the message), then
// one item per function call once the reply is whole.
type responsesStream struct {
	sw         *streamWriter
	job        string
	seq        int
	items      []map[string]any // the output so far, as the final response holds it
	index      int              // the open item's output_index; -1: none
	kind       string           // the open item's type: reasoning or message
	text       strings.Builder  // the open item's text
	hasMessage bool
	reasoning  int           // deltas of reasoning text: its tokens
	lps        []api.Logprob // the open message's tokens' logprobs
}

func (rs *responsesStream) event(typ string, v map[string]any) error {
	v["type"], v["sequence_number"] = typ, rs.seq
	rs.seq++
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("deliver: encoding event: %w", err)
	}
	return rs.sw.sse("", typ, b)
}

// open starts an output item of kind (closing the one open) and its
// content part.
func (rs *responsesStream) open(kind string) error {
	if rs.kind == kind {
		return nil
	}
	if err := rs.close(); err != nil {
		return err
	}
	rs.index, rs.kind = len(rs.items), kind
	rs.text.Reset()
	rs.lps = nil
	var item, part map[string]any
	if kind == "reasoning" {
		item = reasoningItem(rs.job, "", "in_progress")
		item["content"] = []any{}
		part = map[string]any{"type": "reasoning_text", "text": ""}
	} else {
		rs.hasMessage = true
		item = messageItem(rs.job, "", "in_progress", nil)
		item["content"] = []any{}
		part = outputText("", nil)
	}
	rs.items = append(rs.items, item)
	if err := rs.event("response.output_item.added", map[string]any{"output_index": rs.index, "item": item}); err != nil {
		return err
	}
	return rs.event("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": rs.index, "content_index": 0, "part": part})
}

// close ends the open item: its text's done event, its part's, its own.
func (rs *responsesStream) close() error {
	if rs.kind == "" {
		return nil
	}
	text := rs.text.String()
	var item, part map[string]any
	doneType := "response.output_text.done"
	if rs.kind == "reasoning" {
		item, part, doneType = reasoningItem(rs.job, text, "completed"), map[string]any{"type": "reasoning_text", "text": text}, "response.reasoning_text.done"
	} else {
		item, part = messageItem(rs.job, text, "completed", rs.lps), outputText(text, rs.lps)
	}
	rs.items[rs.index] = item
	at := map[string]any{"item_id": item["id"], "output_index": rs.index, "content_index": 0}
	done := map[string]any{"text": text}
	part0 := map[string]any{"part": part}
	for k, v := range at {
		done[k], part0[k] = v, v
	}
	rs.kind = ""
	if err := rs.event(doneType, done); err != nil {
		return err
	}
	if err := rs.event("response.content_part.done", part0); err != nil {
		return err
	}
	return rs.event("response.output_item.done", map[string]any{"output_index": rs.index, "item": item})
}

// send streams a delta: reasoning text into a reasoning item, answer text
// into the message.
func (rs *responsesStream) send(d delta) error {
	for _, x := range []struct{ kind, text, typ string }{
		{"reasoning", d.Thinking, "response.reasoning_text.delta"},
		{"message", d.Text, "response.output_text.delta"},
	} {
		if x.text == "" {
			continue
		}
		if err := rs.open(x.kind); err != nil {
			return err
		}
		if x.kind == "reasoning" {
			rs.reasoning++
		}
		rs.text.WriteString(x.text)
		ev := map[string]any{"item_id": rs.items[rs.index]["id"], "output_index": rs.index, "content_index": 0, "delta": x.text}
		if x.kind == "message" {
			ev["logprobs"] = chatLogprobs(true, d.Logprobs).Content
			rs.lps = append(rs.lps, d.Logprobs...)
		}
		if err := rs.event(x.typ, ev); err != nil {
			return err
		}
	}
	return nil
}

// call streams function call i as an item of its own, its arguments in
// one delta.
func (rs *responsesStream) call(i int, c ToolCall) error {
	if err := rs.close(); err != nil {
		return err
	}
	index := len(rs.items)
	item := callItem(rs.job, i, c, "", "in_progress")
	rs.items = append(rs.items, callItem(rs.job, i, c, string(c.Arguments), "completed"))
	args := string(c.Arguments)
	for _, ev := range []struct {
		typ string
		v   map[string]any
	}{
		{"response.output_item.added", map[string]any{"output_index": index, "item": item}},
		{"response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": index, "delta": args}},
		{"response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": index, "arguments": args}},
		{"response.output_item.done", map[string]any{"output_index": index, "item": rs.items[index]}},
	} {
		if err := rs.event(ev.typ, ev.v); err != nil {
			return err
		}
	}
	return nil
}

// getResponse is GET /v1/responses/{id}: the response of a job, running
// (in_progress, its output so far not included) or ended, live or from
// the journal.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) {
	job, p, e := s.storedResponse(r.Context(), r.PathValue("id"))
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	s.writeResponse(w, r, job, p)
}

// cancelResponse is POST /v1/responses/{id}/cancel: a background
// response's job is asked to stop (one already ended is left as it is),
// and the response is answered as GET gives it then.
func (s *Server) cancelResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	job, p, e := s.storedResponse(r.Context(), id)
	if e == nil && !p.Background {
		e = badRequest("invalid_value", "response_id", "response %s was not created with background: true: only a background response can be cancelled (a foreground one ends with its request)", id)
	}
	if e == nil {
		if err := s.cfg.Jobs.Cancel(r.Context(), job.ID); err != nil {
			e = toError(err)
		}
	}
	if e == nil {
		job, p, e = s.storedResponse(r.Context(), id)
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	s.writeResponse(w, r, job, p)
}

// storedResponse finds the job of the response named id, and its
// parameters: a 404 for an unknown id, one that is not a response, and
// one created with store: false.
func (s *Server) storedResponse(ctx context.Context, id string) (api.Job, *responsesJob, *Error) {
	job, err := s.cfg.Jobs.Get(ctx, jobOfResponse(id))
	var p responsesJob
	if err == nil && (!strings.HasPrefix(id, "resp_") || json.Unmarshal(job.Params, &p) != nil || p.API != "responses" || p.GenerateRequest == nil || p.NotStored) {
		err = ErrJobNotFound
	}
	if err != nil {
		e := toError(err)
		if errors.Is(err, ErrJobNotFound) {
			e = &Error{Status: http.StatusNotFound, Stage: "deliver", Code: "response_not_found", Message: fmt.Sprintf("response %q not found", id)}
			if p.NotStored {
				e.Message += " (it was created with store: false)"
			}
		}
		return job, nil, e
	}
	return job, &p, nil
}

// writeResponse answers a response's job as it stands: running (its output
// so far not included) or ended.
func (s *Server) writeResponse(w http.ResponseWriter, r *http.Request, job api.Job, p *responsesJob) {
	switch job.State {
	case api.StateDone:
		var res Result
		if err := json.Unmarshal(job.Result, &res); err != nil {
			writeOpenAIError(w, toError(fmt.Errorf("deliver: response %s: reading its result: %w", responseID(job.ID), err)))
			return
		}
		var lps []api.Logprob // the answer's, when the reply was all answer
		if res.Thinking == "" && len(res.ToolCalls) == 0 {
			lps = res.Logprobs
		}
		writeJSON(w, http.StatusOK, p.finished(job.ID, &res, s.thinkingTokens(r.Context(), job.ID), lps))
	case api.StateFailed, api.StateCancelled:
		e := &Error{Status: http.StatusInternalServerError, Code: job.State, Message: "the job " + job.State}
		if job.Error != nil {
			e.Stage, e.Message, e.Hint = job.Error.Stage, job.Error.Message, job.Error.Hint
		}
		out := p.failedResponse(job.ID, e)
		if job.State == api.StateCancelled {
			out.Status = "cancelled"
		}
		writeJSON(w, http.StatusOK, out)
	case api.StateQueued:
		writeJSON(w, http.StatusOK, p.response(job.ID, "queued", nil))
	default:
		writeJSON(w, http.StatusOK, p.response(job.ID, "in_progress", nil))
	}
}

// thinkingTokens counts a finished job's tokens of reasoning text.
func (s *Server) thinkingTokens(ctx context.Context, jobID string) int {
	events, err := s.cfg.Jobs.Events(ctx, jobID, 0)
	if err != nil {
		return 0
	}
	n := 0
	for ev := range events {
		if ev.Type == api.TypeToken && ev.Token != nil && ev.Token.Thinking != "" {
			n++
		}
	}
	return n
}
