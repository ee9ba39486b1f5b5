package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/glassbox-ai/glassbox/api"
)

// llama.cpp's llama-server dialect, for tools written against it: POST
// /completion (and /completions) with its sampling fields, whole or as
// SSE chunks of {"content", "stop"}; POST /tokenize, /detokenize and
// /apply-template; GET /props and /health. llama-server serves one
// model: here "model" names one (or ?model= on /props), and may be left
// out when the server has only one. Sampling settings glassbox does not
// have (mirostat, typical_p, DRY, XTC, …) may be sent at their off values;
// other values, and GBNF grammars, are refused by name.

// llamaModel is the model a request names, or the server's only one.
func (s *Server) llamaModel(ctx context.Context, name string) (string, *Error) {
	if name != "" {
		return name, nil
	}
	ms, err := s.cfg.Backend.Models(ctx)
	if err != nil {
		return "", toError(err)
	}
	if len(ms) != 1 {
		names := make([]string, len(ms))
		for i, m := range ms {
			names[i] = m.Name
		}
		return "", badRequest("missing_model", "model", "model is required: this server has %d models (%s)", len(ms), strings.Join(names, ", "))
	}
	return ms[0].Name, nil
}

// llamaModelField is the "model" of a llama-server request.
type llamaModelField struct {
	Model string `json:"model"`
}

func (f *llamaModelField) modelName() string { return f.Model }

// llamaDecode reads a request's body into req and returns the model it
// names (or the server's only one); on failure it has answered.
func (s *Server) llamaDecode(w http.ResponseWriter, r *http.Request, req interface{ modelName() string }) (string, bool) {
	e := s.decodeBody(w, r, req)
	model := ""
	if e == nil {
		model, e = s.llamaModel(r.Context(), req.modelName())
	}
	if e != nil {
		writeOpenAIError(w, e)
		return "", false
	}
	return model, true
}

// llamaOff are the sampling settings of llama-server that glassbox does not
// have, each with its off value: a request may send that, not another.
var llamaOff = map[string]float64{"typical_p": 1, "mirostat": 0, "dynatemp_range": 0, "xtc_probability": 0,
	"dry_multiplier": 0, "top_n_sigma": -1, "n_indent": 0, "t_max_predict_ms": 0}

// llamaOptionNames maps /completion's option names to Ollama's, which
// applyOllamaOptions checks.
var llamaOptionNames = map[string]string{"n_predict": "num_predict", "temperature": "temperature", "top_k": "top_k",
	"top_p": "top_p", "min_p": "min_p", "repeat_penalty": "repeat_penalty", "repeat_last_n": "repeat_last_n",
	"presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty", "seed": "seed", "stop": "stop"}

// llamaNever is the bias of a logit_bias entry of false: the token is
// never picked.
const llamaNever = -1e30

// llamaOptions turns a /completion body into options (glassbox run's
// defaults, which are llama-server's, under a made model's parameters).
func llamaOptions(body map[string]json.RawMessage, profile map[string]any) (Options, *Error) {
	o := nativeDefaults()
	m := map[string]any{}
	for k, v := range profile {
		m[k] = v
	}
	for k, raw := range body {
		if off, ok := llamaOff[k]; ok {
			var f float64
			if json.Unmarshal(raw, &f) != nil || f != off {
				return o, badRequest("unsupported", k, "%s is not supported: send %v (off) or leave it out", k, off)
			}
			continue
		}
		name, ok := llamaOptionNames[k]
		if !ok {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return o, badRequest("invalid_value", k, "%s: %v", k, err)
		}
		m[name] = v
	}
	if e := applyOllamaOptions(&o, m); e != nil {
		for k, name := range llamaOptionNames {
			if e.Param == "options."+name {
				e.Param, e.Message = k, strings.ReplaceAll(e.Message, "options."+name, k)
			}
		}
		return o, e
	}
	var flags struct {
		IgnoreEOS         bool            `json:"ignore_eos"`
		Grammar           string          `json:"grammar"`
		PostSamplingProbs bool            `json:"post_sampling_probs"`
		NProbs            *float64        `json:"n_probs"`
		JSONSchema        json.RawMessage `json:"json_schema"`
		LogitBias         json.RawMessage `json:"logit_bias"`
		Lora              json.RawMessage `json:"lora"`
	}
	for k, dst := range map[string]any{"ignore_eos": &flags.IgnoreEOS, "grammar": &flags.Grammar, "post_sampling_probs": &flags.PostSamplingProbs,
		"n_probs": &flags.NProbs, "json_schema": &flags.JSONSchema, "logit_bias": &flags.LogitBias, "lora": &flags.Lora} {
		if raw, ok := body[k]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return o, badRequest("invalid_value", k, "%s: %v", k, err)
			}
		}
	}
	switch {
	case flags.IgnoreEOS:
		return o, badRequest("unsupported", "ignore_eos", "ignore_eos is not supported: a generation ends at the model's end-of-generation token (set n_predict for a length)")
	case flags.Grammar != "":
		return o, badRequest("unsupported", "grammar", "GBNF grammars are not supported: give json_schema (a JSON schema) instead")
	case flags.PostSamplingProbs:
		return o, badRequest("unsupported", "post_sampling_probs", "post_sampling_probs is not supported: n_probs gives the model's probabilities before sampling")
	case len(flags.Lora) > 0 && string(flags.Lora) != "null" && string(flags.Lora) != "[]":
		return o, badRequest("unsupported", "lora", "LoRA adapters are not supported")
	}
	if n := flags.NProbs; n != nil && *n != 0 {
		if e := setLogprobs(&o, true, int(*n), "n_probs"); e != nil || float64(int(*n)) != *n {
			return o, badRequest("invalid_value", "n_probs", "n_probs is %v, not an integer 0..%d", *n, maxTopLogprobs)
		}
	}
	if s := strings.TrimSpace(string(flags.JSONSchema)); s != "" && s != "null" && s != "{}" {
		var e *Error
		if o.Format, e = schemaFormat(flags.JSONSchema, "json_schema"); e != nil {
			return o, e
		}
	}
	bias, e := llamaLogitBias(flags.LogitBias)
	if e != nil {
		return o, e
	}
	o.LogitBias = bias
	return o, nil
}

// llamaLogitBias reads logit_bias: [[id, bias], …] or {"id": bias}, a bias
// of false meaning never.
func llamaLogitBias(raw json.RawMessage) (map[int]float32, *Error) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" || t == "[]" || t == "{}" {
		return nil, nil
	}
	value := func(v any) (float32, bool) {
		switch x := v.(type) {
		case bool:
			return llamaNever, !x
		case float64:
			return float32(x), x == x && x >= -100 && x <= 100
		}
		return 0, false
	}
	bad := badRequest("invalid_value", "logit_bias", `logit_bias must be [[token id, bias], …] or {"token id": bias}, a bias -100..100 or false (never)`)
	out := map[int]float32{}
	var pairs [][]any
	if json.Unmarshal(raw, &pairs) == nil {
		for _, p := range pairs {
			id, ok := p[0].(float64)
			if len(p) != 2 || !ok || id != float64(int(id)) || id < 0 {
				return nil, bad
			}
			b, ok := value(p[1])
			if !ok {
				return nil, bad
			}
			out[int(id)] = b
		}
		return out, nil
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return nil, bad
	}
	for k, v := range obj {
		var id int
		if _, err := fmt.Sscanf(k, "%d", &id); err != nil || id < 0 || fmt.Sprint(id) != k {
			return nil, bad
		}
		b, ok := value(v)
		if !ok {
			return nil, bad
		}
		out[id] = b
	}
	return out, nil
}

// llamaPrompt tokenizes /completion's prompt: a string, token ids, or a
// mix of both (each string tokenized with the vocabulary's BOS when it
// comes first), control-token text read as those tokens, as llama-server
// does. Several prompts at once are refused.
func (s *Server) llamaPrompt(ctx context.Context, model string, raw json.RawMessage) ([]int, string, *Error) {
	var parts []any
	t := strings.TrimSpace(string(raw))
	switch {
	case t == "" || t == "null":
		return nil, "", badRequest("missing_prompt", "prompt", "prompt is required: a string or token ids")
	case t[0] == '"':
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return nil, "", badRequest("invalid_value", "prompt", "prompt: %v", err)
		}
		parts = []any{str}
	default:
		if err := json.Unmarshal(raw, &parts); err != nil || len(parts) == 0 {
			return nil, "", badRequest("invalid_value", "prompt", "prompt must be a string, or an array of token ids and strings")
		}
	}
	var ids []int
	var text strings.Builder
	for i, p := range parts {
		switch x := p.(type) {
		case string:
			toks, err := s.cfg.Backend.Tokenize(ctx, model, x, i == 0, true)
			if err != nil {
				return nil, "", toError(err)
			}
			for _, tp := range toks {
				ids = append(ids, tp.ID)
			}
			text.WriteString(x)
		case float64:
			if x != float64(int(x)) || x < 0 {
				return nil, "", badRequest("invalid_value", "prompt", "prompt[%d] is %v, not a token id", i, x)
			}
			ids = append(ids, int(x))
		default:
			return nil, "", badRequest("unsupported", "prompt", "prompt[%d]: one prompt per request (a string, or token ids and strings)", i)
		}
	}
	return ids, text.String(), nil
}

// llamaTimings are a completion's timings, in llama-server's fields.
type llamaTimings struct {
	PromptN             int     `json:"prompt_n"`
	PromptMS            float64 `json:"prompt_ms"`
	PromptPerTokenMS    float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMS         float64 `json:"predicted_ms"`
	PredictedPerTokenMS float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`
}

func timingsOf(res *Result) llamaTimings {
	t := llamaTimings{PromptN: res.PromptTokens - res.CachedTokens, PromptMS: ms(res.PromptDuration.Seconds()),
		PredictedN: res.Tokens, PredictedMS: ms(res.EvalDuration.Seconds())}
	if t.PromptN > 0 && t.PromptMS > 0 {
		t.PromptPerTokenMS, t.PromptPerSecond = t.PromptMS/float64(t.PromptN), 1000*float64(t.PromptN)/t.PromptMS
	}
	if t.PredictedN > 0 && t.PredictedMS > 0 {
		t.PredictedPerTokenMS, t.PredictedPerSecond = t.PredictedMS/float64(t.PredictedN), 1000*float64(t.PredictedN)/t.PredictedMS
	}
	return t
}

func ms(seconds float64) float64 { return seconds * 1000 }

// llamaProb is one token's probabilities (n_probs), as llama-server
// writes them: the token picked and its most likely alternatives.
type llamaProb struct {
	ID          int            `json:"id"`
	Token       string         `json:"token"`
	Logprob     float64        `json:"logprob"`
	Bytes       []int          `json:"bytes"`
	TopLogprobs []llamaProbAlt `json:"top_logprobs"`
}

type llamaProbAlt struct {
	ID      int     `json:"id"`
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// llamaProbs writes the logprobs of the tokens ids (an id is -1 where the
// two do not line up: a token whose text a stop string held back).
func llamaProbs(lps []api.Logprob, ids []int) []llamaProb {
	out := []llamaProb{}
	for i, lp := range lps {
		p := llamaProb{ID: -1, Token: lp.Piece, Logprob: lp.Logprob, Bytes: tokenBytes(lp.Piece, lp.Bytes), TopLogprobs: []llamaProbAlt{}}
		if len(ids) == len(lps) {
			p.ID = ids[i]
		}
		for _, a := range lp.Top {
			p.TopLogprobs = append(p.TopLogprobs, llamaProbAlt{ID: a.ID, Token: a.Piece, Logprob: a.Logprob, Bytes: tokenBytes(a.Piece, a.Bytes)})
		}
		out = append(out, p)
	}
	return out
}

// llamaCompletion is POST /completion.
func (s *Server) llamaCompletion(w http.ResponseWriter, r *http.Request) {
	s.llamaComplete(w, r, false)
}

// llamaInfill is POST /infill: llama-server's code infilling, a
// /completion whose prompt is input_prefix (then prompt, the text of the
// cursor's line before it) and input_suffix in the model's
// fill-in-the-middle tokens, with input_extra's files of context
// (engine.FIM has the layout). Texts only: token arrays are refused.
func (s *Server) llamaInfill(w http.ResponseWriter, r *http.Request) { s.llamaComplete(w, r, true) }

func (s *Server) llamaComplete(w http.ResponseWriter, r *http.Request, infill bool) {
	var body map[string]json.RawMessage
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOpenAIError(w, e)
		return
	}
	var head struct {
		Model        string          `json:"model"`
		Prompt       json.RawMessage `json:"prompt"`
		Stream       bool            `json:"stream"`
		ReturnTokens bool            `json:"return_tokens"`
	}
	b, _ := json.Marshal(body) // a decoded object: cannot fail
	if err := json.Unmarshal(b, &head); err != nil {
		writeOpenAIError(w, badRequest("invalid_value", "", "%v", err))
		return
	}
	model, e := s.llamaModel(r.Context(), head.Model)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	params, _ := s.withProfile(r.Context(), model, nil)
	opts, e := llamaOptions(body, params)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	var greq *GenerateRequest
	var text string
	if infill {
		greq, e = llamaInfillRequest(body)
		if e == nil {
			greq.Model, greq.Options, text = model, opts, greq.Prompt
		}
	} else {
		var promptIDs []int
		promptIDs, text, e = s.llamaPrompt(r.Context(), model, head.Prompt)
		greq = &GenerateRequest{Model: model, PromptIDs: promptIDs, Raw: true, Options: opts}
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	g, e := s.startGeneration(ctx, jobSpec("text", greq), greq)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	w.Header().Set("X-Glassbox-Job", g.job.ID)
	var ids []int         // the generated tokens
	var lps []api.Logprob // their logprobs, with n_probs
	final := func(res *Result, content string) map[string]any {
		stopType, word := "eos", ""
		switch {
		case res.DoneReason == "length":
			stopType = "limit"
		case res.StopSequence != "":
			stopType, word = "word", res.StopSequence
		}
		out := map[string]any{"content": content, "id_slot": 0, "stop": true, "model": model,
			"tokens_predicted": res.Tokens, "tokens_evaluated": res.PromptTokens, "tokens_cached": res.CachedTokens,
			"prompt": text, "has_new_line": strings.Contains(res.Text, "\n"), "truncated": false,
			"stop_type": stopType, "stopping_word": word, "timings": timingsOf(res), "glassbox_job": g.job.ID,
			"generation_settings": map[string]any{"n_predict": opts.NumPredict, "temperature": shortest(opts.Temperature),
				"top_k": opts.TopK, "top_p": shortest(opts.TopP), "min_p": shortest(opts.MinP), "seed": opts.Seed,
				"repeat_penalty": shortest(opts.RepeatPenalty), "repeat_last_n": opts.RepeatLastN, "stop": nonNil(opts.Stop)}}
		if head.ReturnTokens {
			out["tokens"] = nonNilInts(ids)
		}
		if opts.Logprobs && content != "" {
			out["completion_probabilities"] = llamaProbs(lps, ids)
		}
		return out
	}
	if !head.Stream {
		res, err := s.follow(ctx, g, func(d delta) error {
			ids, lps = append(ids, d.IDs...), append(lps, d.Logprobs...)
			return nil
		})
		if err != nil {
			writeOpenAIError(w, toError(err))
			return
		}
		writeJSON(w, http.StatusOK, final(res, res.Text))
		return
	}
	sw := newStreamWriter(w, "text/event-stream", s.cfg.WriteTimeout)
	chunk := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("deliver: encoding chunk: %w", err)
		}
		return sw.sse("", "", b)
	}
	res, err := s.follow(ctx, g, func(d delta) error {
		c := map[string]any{"content": d.Text, "stop": false, "id_slot": 0, "index": 0}
		if head.ReturnTokens {
			c["tokens"] = d.IDs
		}
		if opts.Logprobs {
			c["completion_probabilities"] = llamaProbs(d.Logprobs, d.IDs)
		}
		return chunk(c)
	})
	if err != nil {
		chunk(toError(err).openAI())
		return
	}
	ids = nil // the chunks had them
	chunk(final(res, ""))
}

func nonNilInts(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// llamaTokenize is POST /tokenize: {"content", "add_special" (false),
// "parse_special" (true), "with_pieces" (false)} → {"tokens"}.
func (s *Server) llamaTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		llamaModelField
		Content      string `json:"content"`
		AddSpecial   bool   `json:"add_special"`
		ParseSpecial *bool  `json:"parse_special"`
		WithPieces   bool   `json:"with_pieces"`
	}
	model, ok := s.llamaDecode(w, r, &req)
	if !ok {
		return
	}
	toks, err := s.cfg.Backend.Tokenize(r.Context(), model, req.Content, req.AddSpecial, req.ParseSpecial == nil || *req.ParseSpecial)
	if err != nil {
		writeOpenAIError(w, toError(err))
		return
	}
	out := make([]any, len(toks))
	for i, tp := range toks {
		if !req.WithPieces {
			out[i] = tp.ID
			continue
		}
		var piece any = string(tp.Bytes)
		if !utf8.Valid(tp.Bytes) {
			piece = tokenBytes("", tp.Bytes)
		}
		out[i] = map[string]any{"id": tp.ID, "piece": piece}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

// llamaDetokenize is POST /detokenize: {"tokens"} → {"content"}.
func (s *Server) llamaDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		llamaModelField
		Tokens []int `json:"tokens"`
	}
	model, ok := s.llamaDecode(w, r, &req)
	if !ok {
		return
	}
	text, err := s.cfg.Backend.Detokenize(r.Context(), model, req.Tokens)
	if err != nil {
		writeOpenAIError(w, toError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"content": text})
}

// llamaApplyTemplate is POST /apply-template: OpenAI-style messages (and
// tools) → {"prompt"}, the text a chat completion would encode.
func (s *Server) llamaApplyTemplate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		llamaModelField
		Messages []openAIMessage `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	model, ok := s.llamaDecode(w, r, &req)
	if !ok {
		return
	}
	var e *Error
	if len(req.Messages) == 0 {
		e = badRequest("missing_messages", "messages", "messages must hold at least one message")
	}
	var msgs []Message
	if e == nil {
		msgs, e = openAIMessages(req.Messages)
	}
	greq := &GenerateRequest{Model: model}
	if e == nil {
		_, prof := s.withProfile(r.Context(), model, nil)
		greq.Messages = systemFirst(prof, msgs)
		tools, toolsJSON, te := parseTools(req.Tools)
		if e = te; e == nil {
			e = applyTools(greq, tools, toolsJSON, "")
		}
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	prompt, err := s.cfg.Backend.RenderPrompt(r.Context(), greq)
	if err != nil {
		writeOpenAIError(w, toError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": prompt})
}

// llamaProps is GET /props[?model=NAME]: the model's context, chat
// template and default sampling settings, as llama-server reports them.
func (s *Server) llamaProps(w http.ResponseWriter, r *http.Request) {
	model, e := s.llamaModel(r.Context(), r.URL.Query().Get("model"))
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	d, err := s.cfg.Backend.Show(r.Context(), model)
	if err != nil {
		writeOpenAIError(w, toError(err))
		return
	}
	nctx := s.cfg.DefaultCtx
	if nctx == 0 {
		nctx = min(d.ContextLength, 4096)
	}
	o := nativeDefaults()
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": nctx, "model": d.Name, "params": map[string]any{
			"n_predict": o.NumPredict, "temperature": shortest(o.Temperature), "top_k": o.TopK, "top_p": shortest(o.TopP),
			"min_p": shortest(o.MinP), "repeat_penalty": shortest(o.RepeatPenalty), "repeat_last_n": o.RepeatLastN}},
		"total_slots": s.cfg.Parallel, "model_alias": d.Name, "model_path": d.Path, "n_ctx_train": d.ContextLength,
		"chat_template": d.Template, "modalities": map[string]bool{"vision": false, "audio": false},
		"build_info": "glassbox " + Version, "capabilities": nonNil(slices.Clone(d.Capabilities)),
	})
}

// llamaInfillRequest reads /infill's input_prefix, input_suffix,
// input_extra ([{"filename", "text"}]) and prompt.
func llamaInfillRequest(body map[string]json.RawMessage) (*GenerateRequest, *Error) {
	str := func(k string) (string, *Error) {
		raw, ok := body[k]
		if !ok || string(raw) == "null" {
			return "", nil
		}
		var v string
		if json.Unmarshal(raw, &v) != nil {
			return "", badRequest("invalid_value", k, "%s must be a string (token arrays are not supported here)", k)
		}
		return v, nil
	}
	prefix, e := str("input_prefix")
	var suffix, prompt string
	if e == nil {
		suffix, e = str("input_suffix")
	}
	if e == nil {
		prompt, e = str("prompt")
	}
	f := &FIM{Suffix: suffix}
	if raw, ok := body["input_extra"]; e == nil && ok && string(raw) != "null" {
		if json.Unmarshal(raw, &f.Files) != nil {
			e = badRequest("invalid_value", "input_extra", `input_extra must be an array of {"filename": string, "text": string}`)
		}
	}
	if e != nil {
		return nil, e
	}
	return &GenerateRequest{Prompt: prefix + prompt, Raw: true, FIM: f}, nil
}

// llamaEmbedding is POST /embedding (and /embeddings): llama-server's own
// embeddings, not OpenAI's — content (a string, strings, or token ids)
// → [{"index", "embedding": [vector]}], each input's pooled vector (the
// model's pooling; llama-server's per-token vectors, with pooling none,
// are not given) normalized as embd_normalize says: 2 (its default) to
// length 1, −1 not at all; its other norms are refused by name.
func (s *Server) llamaEmbedding(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model     string          `json:"model"`
		Content   json.RawMessage `json:"content"`
		Input     json.RawMessage `json:"input"` // what OpenAI-minded clients send here too
		Normalize *float64        `json:"embd_normalize"`
	}
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOpenAIError(w, e)
		return
	}
	field, raw := "content", body.Content
	if len(raw) == 0 && len(body.Input) > 0 {
		field, raw = "input", body.Input
	}
	model, e := s.llamaModel(r.Context(), body.Model)
	req := &EmbedRequest{Model: model, Normalize: true}
	if e == nil {
		req.Input, req.InputIDs, e = textInputs(raw, field, true)
	}
	if n := body.Normalize; e == nil && n != nil {
		switch *n {
		case 2:
		case -1:
			req.Normalize = false
		default:
			e = badRequest("unsupported", "embd_normalize", "embd_normalize %v is not supported: 2 (Euclidean, the default) or -1 (none)", *n)
		}
	}
	var res *EmbedResult
	if e == nil {
		_, res, e = s.embed(w, r, req)
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	out := make([]map[string]any, len(res.Embeddings))
	for i, v := range res.Embeddings {
		out[i] = map[string]any{"index": i, "embedding": [][]float32{v}}
	}
	writeJSON(w, http.StatusOK, out)
}
