package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"time"
)

// Embeddings: Ollama's /api/embed (and the older /api/embeddings), OpenAI's
// /v1/embeddings and the native jobs API's input. Each request is a job of
// kind "embed" with the stages of a generation up to prefill: queued, plan,
// load, encode, prefill. An input longer than the context is refused with
// both numbers unless the request asks for truncation (truncate: true),
// never cut silently; the vectors are then whole embeddings of the first
// tokens, and the job's result says which inputs were cut.

// textInputs reads an input that is one string or an array of strings
// (Ollama's and OpenAI's "input"); with ids, OpenAI's arrays of token ids
// (one array, or an array of arrays) are taken too.
func textInputs(raw json.RawMessage, field string, ids bool) ([]string, [][]int, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, badRequest("missing_input", field, "%s is required: a string or an array of strings", field)
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		if len(many) == 0 {
			return nil, nil, badRequest("missing_input", field, "%s is an empty array", field)
		}
		return many, nil, nil
	}
	if ids {
		var seq []int
		if json.Unmarshal(raw, &seq) == nil && len(seq) > 0 {
			return nil, [][]int{seq}, nil
		}
		var seqs [][]int
		if json.Unmarshal(raw, &seqs) == nil && len(seqs) > 0 {
			return nil, seqs, nil
		}
		return nil, nil, badRequest("invalid_input", field, "%s must be a string, an array of strings, or token ids (an array of integers, or of arrays of them)", field)
	}
	return nil, nil, badRequest("invalid_input", field, "%s must be a string or an array of strings", field)
}

// embedSettings reads what an embeddings request takes of Ollama's options
// (num_ctx, num_batch, num_thread; a made model's own under them) and its
// keep_alive.
func (s *Server) embedSettings(ctx context.Context, req *EmbedRequest, options map[string]any, keepAlive json.RawMessage) *Error {
	options, _ = s.withProfile(ctx, req.Model, options)
	o, ka, e := ollamaCommon(req.Model, nil, options, keepAlive)
	if e != nil {
		return e
	}
	req.NumCtx, req.NumBatch, req.NumThread, req.KeepAlive = o.NumCtx, o.NumBatch, o.NumThread, ka
	return nil
}

// embedSpec describes req for the job manager and the journal.
func embedSpec(req *EmbedRequest) JobSpec {
	params, _ := json.Marshal(req) // plain data: cannot fail
	return JobSpec{Kind: "embed", Model: req.Model, Params: params}
}

// checkDimensions refuses a negative dimensions field.
func checkDimensions(d int) *Error {
	if d < 0 {
		return badRequest("invalid_value", "dimensions", "dimensions must be positive, not %d", d)
	}
	return nil
}

// embed runs req as a job for the client of r and waits for its vectors;
// the answer's X-Glassbox-Job header names the job.
func (s *Server) embed(w http.ResponseWriter, r *http.Request, req *EmbedRequest) (*generation, *EmbedResult, *Error) {
	if e := checkDimensions(req.Dimensions); e != nil {
		return nil, nil, e
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	g, e := s.startEmbedding(ctx, embedSpec(req), req)
	if e != nil {
		return nil, nil, e
	}
	select {
	case <-g.done:
	case <-ctx.Done():
		return g, nil, toError(ctx.Err())
	}
	if g.err != nil {
		return g, nil, toError(g.err)
	}
	w.Header().Set("X-Glassbox-Job", g.job.ID)
	return g, g.emb, nil
}

type ollamaEmbedRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Truncate   *bool           `json:"truncate"`
	Dimensions int             `json:"dimensions"`
	Options    map[string]any  `json:"options"`
	KeepAlive  json.RawMessage `json:"keep_alive"`
}

type ollamaEmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"`
	LoadDuration    int64       `json:"load_duration"`
	PromptEvalCount int         `json:"prompt_eval_count"`
	Truncated       []int       `json:"truncated,omitempty"` // glassbox: the inputs cut to the context
	JobID           string      `json:"job_id,omitempty"`
}

// ollamaEmbed is POST /api/embed: normalized vectors, one per input.
// Ollama truncates long inputs unless truncate is false; glassbox refuses
// them unless truncate is true (and then says which it cut).
func (s *Server) ollamaEmbed(w http.ResponseWriter, r *http.Request) {
	var body ollamaEmbedRequest
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOllamaError(w, e)
		return
	}
	s.warnOptions(r, body.Options)
	req := &EmbedRequest{Model: body.Model, Normalize: true, Dimensions: body.Dimensions, Truncate: body.Truncate != nil && *body.Truncate}
	var e *Error
	req.Input, _, e = textInputs(body.Input, "input", false)
	if e == nil {
		e = s.embedSettings(r.Context(), req, body.Options, body.KeepAlive)
	}
	var g *generation
	var res *EmbedResult
	if e == nil {
		g, res, e = s.embed(w, r, req)
	}
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, ollamaEmbedResponse{Model: body.Model, Embeddings: res.Embeddings,
		TotalDuration: time.Since(g.start).Nanoseconds(), LoadDuration: res.LoadDuration.Nanoseconds(),
		PromptEvalCount: res.PromptTokens, Truncated: res.Truncated, JobID: g.job.ID})
}

type ollamaEmbeddingsRequest struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	Options   map[string]any  `json:"options"`
	KeepAlive json.RawMessage `json:"keep_alive"`
}

// ollamaEmbeddings is POST /api/embeddings, Ollama's older endpoint: one
// prompt, its vector as the model gives it (not normalized).
func (s *Server) ollamaEmbeddings(w http.ResponseWriter, r *http.Request) {
	var body ollamaEmbeddingsRequest
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOllamaError(w, e)
		return
	}
	s.warnOptions(r, body.Options)
	req := &EmbedRequest{Model: body.Model, Input: []string{body.Prompt}}
	e := s.embedSettings(r.Context(), req, body.Options, body.KeepAlive)
	var res *EmbedResult
	if e == nil {
		_, res, e = s.embed(w, r, req)
	}
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string][]float32{"embedding": res.Embeddings[0]})
}

type openAIEmbeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
	User           string          `json:"user"`
}

type openAIEmbedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of little-endian float32s
}

type openAIEmbeddingsResponse struct {
	Object string            `json:"object"`
	Data   []openAIEmbedding `json:"data"`
	Model  string            `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// openAIEmbeddings is POST /v1/embeddings: normalized vectors, as floats
// or (encoding_format base64, which the official clients ask for) as
// base64 of their little-endian float32 bytes. Too long an input is a
// 400, as OpenAI's.
func (s *Server) openAIEmbeddings(w http.ResponseWriter, r *http.Request) {
	var body openAIEmbeddingsRequest
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOpenAIError(w, e)
		return
	}
	req := &EmbedRequest{Model: body.Model, Normalize: true, Dimensions: body.Dimensions}
	var e *Error
	req.Input, req.InputIDs, e = textInputs(body.Input, "input", true)
	switch {
	case e != nil:
	case body.Model == "":
		e = badRequest("missing_model", "model", "model is required")
	case body.EncodingFormat != "" && body.EncodingFormat != "float" && body.EncodingFormat != "base64":
		e = badRequest("invalid_value", "encoding_format", `encoding_format must be "float" or "base64", not %q`, body.EncodingFormat)
	}
	var res *EmbedResult
	if e == nil {
		_, res, e = s.embed(w, r, req)
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	out := openAIEmbeddingsResponse{Object: "list", Model: body.Model}
	for i, v := range res.Embeddings {
		d := openAIEmbedding{Object: "embedding", Index: i, Embedding: v}
		if body.EncodingFormat == "base64" {
			d.Embedding = floatsBase64(v)
		}
		out.Data = append(out.Data, d)
	}
	out.Usage.PromptTokens, out.Usage.TotalTokens = res.PromptTokens, res.PromptTokens
	writeJSON(w, http.StatusOK, out)
}

// floatsBase64 is v's little-endian float32 bytes in base64.
func floatsBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
