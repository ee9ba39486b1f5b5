package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/sample"
)

// Ollama's API: https://github.com/ollama/ollama/blob/main/docs/api.md

type ollamaGenerateRequest struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	Suffix    string          `json:"suffix"`
	System    string          `json:"system"`
	Template  string          `json:"template"`
	Raw       bool            `json:"raw"`
	Stream    *bool           `json:"stream"` // default true
	Format    json.RawMessage `json:"format"`
	Images    []string        `json:"images"`
	Options   map[string]any  `json:"options"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	ollamaLogprobsRequest
}

// ollamaLogprobsRequest are the fields generate, chat (and the jobs API)
// share beside the options: logprobs, and think (a bool, or one of the
// effort levels "low", "medium", "high": thinking on, at that effort).
type ollamaLogprobsRequest struct {
	Logprobs    bool            `json:"logprobs"`
	TopLogprobs int             `json:"top_logprobs"`
	Think       json.RawMessage `json:"think"`
}

// apply checks the shared fields and sets them in o.
func (r *ollamaLogprobsRequest) apply(o *Options) *Error {
	if e := setLogprobs(o, r.Logprobs, r.TopLogprobs, "top_logprobs"); e != nil {
		return e
	}
	switch t := string(bytes.TrimSpace(r.Think)); t {
	case "", "null":
	case "true":
		o.Think = new(bool)
		*o.Think = true
	case `"low"`, `"medium"`, `"high"`:
		o.Think = new(bool)
		*o.Think = true
		o.Effort = t[1 : len(t)-1]
	case "false":
		o.Think = new(bool)
	default:
		return badRequest("invalid_value", "think", "think must be true or false (or \"low\", \"medium\", \"high\"), not %s", t)
	}
	return nil
}

// ollamaLogprob is one token's entry in a chunk's "logprobs".
type ollamaLogprob struct {
	ollamaTokenLogprob
	TopLogprobs []ollamaTokenLogprob `json:"top_logprobs,omitempty"`
}

type ollamaTokenLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes,omitempty"` // only when the token is part of a character
}

// ollamaLogprobs converts the engine's logprobs (nil for none).
func ollamaLogprobs(lps []api.Logprob) []ollamaLogprob {
	var out []ollamaLogprob
	for _, lp := range lps {
		o := ollamaLogprob{ollamaTokenLogprob: ollamaTokenLogprob{Token: lp.Piece, Logprob: lp.Logprob}}
		if lp.Bytes != nil {
			o.Bytes = tokenBytes(lp.Piece, lp.Bytes)
		}
		for _, a := range lp.Top {
			t := ollamaTokenLogprob{Token: a.Piece, Logprob: a.Logprob}
			if a.Bytes != nil {
				t.Bytes = tokenBytes(a.Piece, a.Bytes)
			}
			o.TopLogprobs = append(o.TopLogprobs, t)
		}
		out = append(out, o)
	}
	return out
}

type ollamaChatRequest struct {
	Model     string          `json:"model"`
	Messages  []ollamaMessage `json:"messages"`
	Stream    *bool           `json:"stream"`
	Format    json.RawMessage `json:"format"`
	Tools     json.RawMessage `json:"tools"`
	Options   map[string]any  `json:"options"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	ollamaLogprobsRequest
}

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Thinking  string           `json:"thinking,omitempty"`
	Images    []string         `json:"images,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName  string           `json:"tool_name,omitempty"` // a tool turn: the function it answers for
}

// ollamaToolCall is a call as Ollama writes it: arguments as an object.
type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

func ollamaToolCalls(calls []ToolCall) []ollamaToolCall {
	var out []ollamaToolCall
	for _, c := range calls {
		var o ollamaToolCall
		o.ID, o.Function.Name, o.Function.Arguments = c.ID, c.Name, c.Arguments
		out = append(out, o)
	}
	return out
}

// ollamaMetrics are the final chunk's measurements, in nanoseconds.
type ollamaMetrics struct {
	TotalDuration      int64 `json:"total_duration,omitempty"`
	LoadDuration       int64 `json:"load_duration,omitempty"`
	PromptEvalCount    int   `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64 `json:"prompt_eval_duration,omitempty"`
	EvalCount          int   `json:"eval_count,omitempty"`
	EvalDuration       int64 `json:"eval_duration,omitempty"`
}

type ollamaGenerateChunk struct {
	Model      string          `json:"model"`
	CreatedAt  time.Time       `json:"created_at"`
	Response   string          `json:"response"`
	Thinking   string          `json:"thinking,omitempty"`
	Done       bool            `json:"done"`
	DoneReason string          `json:"done_reason,omitempty"`
	JobID      string          `json:"job_id,omitempty"` // glassbox: the job in the journal
	Logprobs   []ollamaLogprob `json:"logprobs,omitempty"`
	ollamaMetrics
}

type ollamaChatChunk struct {
	Model      string          `json:"model"`
	CreatedAt  time.Time       `json:"created_at"`
	Message    *ollamaMessage  `json:"message,omitempty"`
	Done       bool            `json:"done"`
	DoneReason string          `json:"done_reason,omitempty"`
	JobID      string          `json:"job_id,omitempty"`
	Logprobs   []ollamaLogprob `json:"logprobs,omitempty"`
	ollamaMetrics
}

func metricsOf(g *generation, res *Result) ollamaMetrics {
	return ollamaMetrics{
		TotalDuration: int64(time.Since(g.start)),
		LoadDuration:  int64(res.LoadDuration),
		// Ollama counts the prompt tokens it evaluated: those the KV
		// cache held from an earlier request are not (prompt caching).
		PromptEvalCount:    res.PromptTokens - res.CachedTokens,
		PromptEvalDuration: int64(res.PromptDuration),
		EvalCount:          res.Tokens,
		EvalDuration:       int64(res.EvalDuration),
	}
}

// ollamaCommon checks what /api/generate and /api/chat share and builds
// the options.
func ollamaCommon(model string, format json.RawMessage, options map[string]any, keepAlive json.RawMessage) (Options, *time.Duration, *Error) {
	return optionsWith(ollamaDefaults(), model, format, options, keepAlive)
}

// schemaFormat checks a JSON schema given in field and returns it as the
// compact text Options.Format carries.
func schemaFormat(schema json.RawMessage, field string) (string, *Error) {
	if _, err := sample.CompileSchema(schema); err != nil {
		return "", badRequest("unsupported_schema", field, "%v", err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, schema); err != nil {
		return "", badRequest("invalid_format", field, "%s is not valid JSON: %v", field, err)
	}
	return b.String(), nil
}

// optionsWith applies Ollama-style options over the defaults o.
func optionsWith(o Options, model string, format json.RawMessage, options map[string]any, keepAlive json.RawMessage) (Options, *time.Duration, *Error) {
	if model == "" {
		return o, nil, badRequest("missing_model", "model", "model is required")
	}
	switch f := string(format); f {
	case "", "null", `""`:
	case `"json"`:
		o.Format = "json"
	default:
		if len(f) == 0 || f[0] != '{' {
			return o, nil, badRequest("invalid_format", "format", `format must be "json" or a JSON schema, not %s`, f)
		}
		text, e := schemaFormat(format, "format")
		if e != nil {
			return o, nil, e
		}
		o.Format = text
	}
	if e := applyOllamaOptions(&o, options); e != nil {
		return o, nil, e
	}
	ka, e := parseKeepAlive(keepAlive)
	return o, ka, e
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	var req ollamaGenerateRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeOllamaError(w, e)
		return
	}
	s.warnOptions(r, req.Options)
	options, prof := s.withProfile(r.Context(), req.Model, req.Options)
	opts, ka, e := ollamaCommon(req.Model, req.Format, options, req.KeepAlive)
	if e == nil {
		e = req.apply(&opts)
	}
	if e == nil && len(req.Images) > 0 {
		e = badRequest("unsupported", "images", "images are not supported by text models")
	}
	if e == nil && req.Template != "" {
		e = badRequest("unsupported", "template", "template overrides are not supported yet")
	}
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	if req.Prompt == "" && req.System == "" {
		s.ollamaPreload(w, r, req.Model, ka, func(reason string) any {
			return ollamaGenerateChunk{Model: req.Model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: reason}
		})
		return
	}
	system := req.System
	if system == "" && prof != nil {
		system = prof.System
	}
	greq := &GenerateRequest{Model: req.Model, Prompt: req.Prompt, System: system, Raw: req.Raw,
		Options: opts, KeepAlive: ka}
	if req.Suffix != "" {
		// Fill in the middle: the prompt is the code before the cursor.
		greq.FIM, greq.System = &FIM{Suffix: req.Suffix}, ""
	}
	stream := req.Stream == nil || *req.Stream
	s.ollamaRun(w, r, "text", greq, stream,
		func(d delta, _ []ToolCall) any {
			return ollamaGenerateChunk{Model: req.Model, CreatedAt: time.Now().UTC(), Response: d.Text, Thinking: d.Thinking, Logprobs: ollamaLogprobs(d.Logprobs)}
		},
		func(g *generation, res *Result, full delta, _ []ToolCall) any {
			lps := full.Logprobs
			return ollamaGenerateChunk{Model: req.Model, CreatedAt: time.Now().UTC(), Response: full.Text, Thinking: full.Thinking, Done: true,
				DoneReason: res.DoneReason, JobID: g.job.ID, Logprobs: ollamaLogprobs(lps), ollamaMetrics: metricsOf(g, res)}
		})
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	var req ollamaChatRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeOllamaError(w, e)
		return
	}
	s.warnOptions(r, req.Options)
	options, prof := s.withProfile(r.Context(), req.Model, req.Options)
	opts, ka, e := ollamaCommon(req.Model, req.Format, options, req.KeepAlive)
	if e == nil {
		e = req.apply(&opts)
	}
	var tools []toolDef
	var toolsJSON json.RawMessage
	if e == nil {
		tools, toolsJSON, e = parseTools(req.Tools)
	}
	var msgs []Message
	for i, m := range req.Messages {
		if e != nil {
			break
		}
		e = checkRole(m.Role, i)
		if e == nil && len(m.Images) > 0 {
			e = badRequest("unsupported", "messages", "messages[%d]: images are not supported by text models", i)
		}
		msg := Message{Role: m.Role, Content: m.Content, Thinking: m.Thinking, Name: m.ToolName}
		for _, c := range m.ToolCalls {
			var args json.RawMessage
			if args, e = argumentsObject(c.Function.Arguments, i); e != nil {
				break
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
		msgs = append(msgs, msg)
	}
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	if len(msgs) == 0 {
		s.ollamaPreload(w, r, req.Model, ka, func(reason string) any {
			return ollamaChatChunk{Model: req.Model, CreatedAt: time.Now().UTC(),
				Message: &ollamaMessage{Role: "assistant"}, Done: true, DoneReason: reason}
		})
		return
	}
	greq := &GenerateRequest{Model: req.Model, Messages: systemFirst(prof, msgs), Options: opts, KeepAlive: ka}
	if e := applyTools(greq, tools, toolsJSON, ""); e != nil {
		writeOllamaError(w, e)
		return
	}
	stream := req.Stream == nil || *req.Stream
	s.ollamaRun(w, r, "chat", greq, stream,
		func(d delta, calls []ToolCall) any {
			return ollamaChatChunk{Model: req.Model, CreatedAt: time.Now().UTC(),
				Message: &ollamaMessage{Role: "assistant", Content: d.Text, Thinking: d.Thinking, ToolCalls: ollamaToolCalls(calls)}, Logprobs: ollamaLogprobs(d.Logprobs)}
		},
		func(g *generation, res *Result, full delta, calls []ToolCall) any {
			lps := full.Logprobs
			return ollamaChatChunk{Model: req.Model, CreatedAt: time.Now().UTC(),
				Message: &ollamaMessage{Role: "assistant", Content: full.Text, Thinking: full.Thinking, ToolCalls: ollamaToolCalls(calls)}, Done: true,
				DoneReason: res.DoneReason, JobID: g.job.ID, Logprobs: ollamaLogprobs(lps), ollamaMetrics: metricsOf(g, res)}
		})
}

func checkRole(role string, i int) *Error {
	switch role {
	case "system", "user", "assistant", "developer":
		return nil
	case "tool":
		return nil
	}
	return badRequest("invalid_role", "messages", "messages[%d]: role %q is not one of system, user, assistant, tool", i, role)
}

// ollamaPreload handles an empty prompt: load the model (or, with
// keep_alive 0, unload it) and answer with one done chunk.
func (s *Server) ollamaPreload(w http.ResponseWriter, r *http.Request, model string, ka *time.Duration, chunk func(reason string) any) {
	var err error
	reason := "load"
	if ka != nil && *ka == 0 {
		reason = "unload"
		err = s.cfg.Backend.Unload(r.Context(), model)
	} else {
		err = s.cfg.Backend.Load(r.Context(), model, ka)
	}
	if err != nil {
		writeOllamaError(w, toError(err))
		return
	}
	writeJSON(w, http.StatusOK, chunk(reason))
}

// ollamaRun runs a generation and answers as NDJSON chunks (stream) or as
// one JSON object. Errors before the first chunk get their HTTP status;
// errors after it arrive as a final {"error": ...} line, as Ollama does.
func (s *Server) ollamaRun(w http.ResponseWriter, r *http.Request, kind string, req *GenerateRequest, stream bool,
	chunk func(d delta, calls []ToolCall) any, final func(g *generation, res *Result, full delta, calls []ToolCall) any) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	g, e := s.startGeneration(ctx, jobSpec(kind, req), req)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	w.Header().Set("X-Glassbox-Job", g.job.ID)
	if !stream {
		var all []api.Logprob
		res, err := s.follow(ctx, g, func(d delta) error { all = append(all, d.Logprobs...); return nil })
		if err != nil {
			writeOllamaError(w, toError(err))
			return
		}
		writeJSON(w, http.StatusOK, final(g, res, delta{Text: res.Text, Thinking: res.Thinking, Logprobs: all}, res.ToolCalls))
		return
	}
	var sw *streamWriter
	res, rest, err := s.followStream(ctx, g, req, func(d delta) error {
		if sw == nil {
			sw = newStreamWriter(w, "application/x-ndjson", s.cfg.WriteTimeout)
		}
		return sw.ndjson(chunk(d, nil))
	})
	switch {
	case err != nil && sw == nil:
		writeOllamaError(w, toError(err))
	case err != nil:
		sw.ndjson(toError(err).ollama())
	default:
		if sw == nil {
			sw = newStreamWriter(w, "application/x-ndjson", s.cfg.WriteTimeout)
		}
		if rest.Text != "" || len(rest.Logprobs) > 0 || len(res.ToolCalls) > 0 {
			sw.ndjson(chunk(rest, res.ToolCalls))
		}
		sw.ndjson(final(g, res, delta{}, nil))
	}
}
