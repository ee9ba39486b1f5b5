package server

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// Backend does the work behind the endpoints. The serve command adapts the
// engine, the residency manager, the planner and the model store to it.
// Errors wrap ErrModelNotFound for unknown models and carry their pipeline
// stage (a pipeline.Error, or any error with a Stage() string method).
type Backend interface {
	// Generate runs one generation to its end, reporting stages, progress
	// and every token through pipeline.TraceFrom(ctx). When ctx ends it
	// must stop within one decode step (also during prefill) and return
	// ctx's error.
	Generate(ctx context.Context, req *GenerateRequest) (*Result, error)
	// CountTokens returns how many tokens req's prompt is for its model
	// (its conversation through the chat template, tools included), as a
	// generation would evaluate it, generating nothing.
	CountTokens(ctx context.Context, req *GenerateRequest) (int, error)
	// Tokenize turns text into the model's token ids, each with its bytes;
	// addSpecial adds the BOS/EOS its vocabulary asks for, parseSpecial
	// reads the text of control tokens (<|im_start|>) as those tokens.
	Tokenize(ctx context.Context, model, text string, addSpecial, parseSpecial bool) ([]TokenPiece, error)
	// Detokenize is the text of ids, control tokens written as their text.
	Detokenize(ctx context.Context, model string, ids []int) (string, error)
	// RenderPrompt is the text req's prompt is encoded from: its
	// conversation through the model's chat template (tools included).
	RenderPrompt(ctx context.Context, req *GenerateRequest) (string, error)
	// Embed turns texts into vectors, one each, reporting its stages
	// through pipeline.TraceFrom(ctx); when ctx ends it stops within one
	// forward pass and returns ctx's error.
	Embed(ctx context.Context, req *EmbedRequest) (*EmbedResult, error)
	// Pull downloads a model into the store (Ollama's /api/pull),
	// reporting its bytes as the load stage's progress through
	// pipeline.TraceFrom(ctx), and returns the name it is stored under (a
	// model the store holds already is not downloaded again). The
	// reference names it afterwards too.
	Pull(ctx context.Context, ref string) (string, error)
	// Create makes a model from another (Ollama's /api/create): the same
	// weights under a new name, with req's profile laid over the base's;
	// or, with req.Files, from an uploaded GGUF blob.
	Create(ctx context.Context, req *CreateRequest) error
	// HasBlob reports whether a blob (an uploaded file, named by its
	// "sha256:…" digest) is held; PutBlob stores one, if r's bytes have
	// that digest (Ollama's /api/blobs).
	HasBlob(ctx context.Context, digest string) (bool, error)
	PutBlob(ctx context.Context, digest string, r io.Reader) error
	// Profile reports what a model was made with (nil: a model that was
	// not made from another, or one the backend does not know).
	Profile(ctx context.Context, name string) (*ModelProfile, error)
	// Delete removes a model from the store, unloading it first.
	Delete(ctx context.Context, name string) error
	// Copy stores model src again under the name dst (Ollama's
	// /api/copy): a hard link where it can, so no bytes are copied.
	Copy(ctx context.Context, src, dst string) error
	// Models lists the models the server can run.
	Models(ctx context.Context) ([]ModelInfo, error)
	// Show describes one model.
	Show(ctx context.Context, name string) (*ModelDetail, error)
	// Running lists the resident models.
	Running(ctx context.Context) ([]RunningModel, error)
	// Load makes a model resident (Ollama's empty prompt), keeping it for
	// keepAlive (nil: the default).
	Load(ctx context.Context, name string, keepAlive *time.Duration) error
	// Unload drops a model now (Ollama's keep_alive 0).
	Unload(ctx context.Context, name string) error
	// Plan predicts memory and speed for a model on this machine.
	Plan(ctx context.Context, req *PlanRequest) (json.RawMessage, error)
}

// Jobs is the job manager (pipeline.Manager behind an adapter): it numbers
// events, keeps them for replay and journals them.
type Jobs interface {
	// Start creates a job and returns its summary at once; work runs on a
	// goroutine of its own with a context carrying the job's trace. That
	// context ends when ctx ends or the job is cancelled. work's result is
	// the job's result event.
	Start(ctx context.Context, spec JobSpec, work func(ctx context.Context) (any, error)) (api.Job, error)
	// Get returns a job's summary (running or from the journal).
	Get(ctx context.Context, id string) (api.Job, error)
	// List returns up to limit jobs, newest first, created before the job
	// with id before ("" = from the newest).
	List(ctx context.Context, before string, limit int) ([]api.Job, error)
	// Cancel asks a job to stop; a job already ended is left as it is.
	Cancel(ctx context.Context, id string) error
	// Events follows a job from the event after seq: the events it already
	// has, then live ones. The channel is closed after the job's last event
	// or when ctx ends, and never blocks the job.
	Events(ctx context.Context, id string, after int64) (<-chan api.Event, error)
}

// JobSpec describes a job for the job manager and the journal.
type JobSpec struct {
	Kind   string          // "text" or "chat"
	Model  string          // the model as requested
	Params json.RawMessage // the request as received, for the journal
}

// GenerateRequest is one generation, whichever API it came from.
type GenerateRequest struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt,omitempty"` // used when Messages is empty
	// PromptIDs is the prompt as token ids instead (llama-server's
	// /completion takes them), evaluated as given.
	PromptIDs []int     `json:"prompt_ids,omitempty"`
	System    string    `json:"system,omitempty"`   // system prompt for Prompt
	Messages  []Message `json:"messages,omitempty"` // chat: rendered with the model's template
	// Raw sends Prompt as is, without the model's template.
	Raw bool `json:"raw,omitempty"`
	// FIM asks for the text between Prompt (the code before the cursor)
	// and FIM.Suffix in the model's fill-in-the-middle tokens (Ollama's and
	// OpenAI's suffix, llama-server's /infill); no template.
	FIM     *FIM    `json:"fim,omitempty"`
	Options Options `json:"options"`
	// Tools are the functions offered (a JSON list for the chat template),
	// ToolNames their names, ToolChoice auto, none, required or a name.
	// Unless it is none, the Backend looks for calls in the reply
	// (Result.ToolCalls) and the API streams the reply only up to where a
	// call may begin.
	Tools      json.RawMessage `json:"tools,omitempty"`
	ToolNames  []string        `json:"tool_names,omitempty"`
	ToolChoice string          `json:"tool_choice,omitempty"`
	// KeepAlive is how long the model stays resident after this request;
	// nil means the server's default, 0 unload at once, negative forever.
	KeepAlive *time.Duration `json:"keep_alive,omitempty"`
}

// FIM is a fill-in-the-middle request: the code after the cursor, and
// other files the model sees first (llama-server's input_extra).
type FIM struct {
	Suffix string    `json:"suffix"`
	Files  []FIMFile `json:"files,omitempty"`
}

// FIMFile is a file of context for a FIM request.
type FIMFile struct {
	Name string `json:"filename"`
	Text string `json:"text"`
}

// parsesCalls reports whether the reply is read for tool calls: their text
// must not leak into the streamed content (followStream).
func (r *GenerateRequest) parsesCalls() bool {
	return len(r.Tools) > 0 && r.ToolChoice != ToolChoiceNone
}

// TokenPiece is one token of a text: its id and the bytes it stands for.
type TokenPiece struct {
	ID    int
	Bytes []byte
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Thinking is an assistant turn's reasoning (Ollama's thinking,
	// OpenAI's reasoning_content, Anthropic's thinking blocks, a Responses
	// reasoning item), for the templates that render it (gpt-oss's, in a
	// turn that calls tools; Qwen3's, after the last user turn).
	Thinking string `json:"thinking,omitempty"`
	// ToolCalls are the calls an assistant turn made; ToolCallID and Name
	// say which call a tool turn answers.
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// Options are the sampling and context settings of a generation. The API
// handlers fill every field (with their dialect's defaults) and validate
// them before a Backend sees them.
type Options struct {
	// Format constrains the output: "json" to one JSON object (Ollama's
	// format "json", OpenAI's response_format json_object), a JSON
	// schema's compact text to a value it allows (Ollama's format object,
	// OpenAI's json_schema; checked with sample.CompileSchema); "" leaves
	// it free.
	Format           string   `json:"format,omitempty"`
	NumCtx           int      `json:"num_ctx,omitempty"`    // context length; 0 = the model's default
	NumPredict       int      `json:"num_predict"`          // tokens to generate; -1 = until end or context full
	Temperature      float32  `json:"temperature"`          // 0 = greedy
	TopK             int      `json:"top_k"`                // 0 = off
	TopP             float32  `json:"top_p"`                // 1 = off
	MinP             float32  `json:"min_p"`                // 0 = off
	RepeatPenalty    float32  `json:"repeat_penalty"`       // 1 = off
	RepeatLastN      int      `json:"repeat_last_n"`        // tokens the penalties look back over
	FrequencyPenalty float32  `json:"frequency_penalty"`    // 0 = off
	PresencePenalty  float32  `json:"presence_penalty"`     // 0 = off
	Seed             *uint64  `json:"seed,omitempty"`       // nil = a fresh seed per request
	Stop             []string `json:"stop,omitempty"`       // stop strings, never part of the output
	NumBatch         int      `json:"num_batch,omitempty"`  // prefill chunk; 0 = the engine's default
	NumThread        int      `json:"num_thread,omitempty"` // 0 = the engine's default
	// Logprobs asks for each token's log-probability under the model and
	// its TopLogprobs (0–20) most likely alternatives (api.Logprob).
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
	// PromptLogprobs asks for each prompt token's log-probability given the
	// ones before it (Result.PromptLogprobs); NoGenerate evaluates the
	// prompt only (OpenAI's max_tokens 0 with echo: scoring a text).
	PromptLogprobs bool `json:"prompt_logprobs,omitempty"`
	NoGenerate     bool `json:"no_generate,omitempty"`
	// Think, when set, turns a reasoning model's thinking on or off where
	// its chat template has the switch (Qwen3's enable_thinking). A model
	// that cannot stop thinking (gpt-oss) thinks the least it can and its
	// thinking is not returned.
	Think *bool `json:"think,omitempty"`
	// Effort is the reasoning effort asked for — "low", "medium" or
	// "high" (Ollama's think levels, OpenAI's reasoning_effort) — given to
	// the chat template as reasoning_effort (gpt-oss's); "" the template's
	// default.
	Effort string `json:"effort,omitempty"`
	// LogitBias is added to those tokens' logits before sampling
	// (OpenAI's logit_bias, −100…100).
	LogitBias map[int]float32 `json:"logit_bias,omitempty"`
}

// Result is a finished generation with its real measurements.
type Result struct {
	Text         string `json:"text"`
	PromptTokens int    `json:"prompt_tokens"` // tokens of the prompt after the template
	// CachedTokens is how many of them the model's KV cache held from an
	// earlier request (prompt caching): not evaluated again.
	CachedTokens int `json:"cached_tokens"`
	Tokens       int `json:"tokens"` // tokens generated
	// DoneReason is "stop" (end of generation token or stop string) or
	// "length" (NumPredict reached or context full).
	DoneReason     string        `json:"done_reason"`
	StopSequence   string        `json:"stop_sequence,omitempty"` // the stop string that ended it, if one did
	LoadDuration   time.Duration `json:"load_ns"`                 // 0 when the model was resident
	PromptDuration time.Duration `json:"prefill_ns"`              // encoding + prefill
	EvalDuration   time.Duration `json:"generate_ns"`
	// Logprobs, with Options.Logprobs: every generated token's (the
	// end-of-generation token's excepted), also those of a stop string.
	Logprobs []api.Logprob `json:"logprobs,omitempty"`
	// PromptLogprobs, with Options.PromptLogprobs: one per prompt token,
	// the first with nothing before it (engine.Result.PromptLogprobs).
	PromptLogprobs []api.Logprob `json:"prompt_logprobs,omitempty"`
	// ToolCalls are the calls found in the reply (Text is then what is
	// left of it, often nothing).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Thinking is a reasoning model's thinking (its <think> block, or a
	// harmony reply's analysis channel), separated from Text, in replies
	// rendered with a chat template.
	Thinking string `json:"thinking,omitempty"`
	// Worker names the cluster worker that ran the generation (glassbox
	// worker, package cluster); empty when this process ran it.
	Worker string `json:"worker,omitempty"`
}

// EmbedRequest is one embeddings request, whichever API it came from.
type EmbedRequest struct {
	Model    string   `json:"model"`
	Input    []string `json:"input,omitempty"`
	InputIDs [][]int  `json:"input_ids,omitempty"` // token ids instead of text (OpenAI's input as arrays of ids)
	// Pooling is "mean", "last" or "cls"; "" the model's own (its
	// pooling_type, else mean).
	Pooling string `json:"pooling,omitempty"`
	// Truncate cuts an input longer than the context to its first tokens
	// (Result.Truncated says which); without it such an input is an error
	// with both numbers.
	Truncate bool `json:"truncate,omitempty"`
	// Normalize scales each vector to length 1.
	Normalize bool `json:"normalize"`
	// Dimensions keeps each vector's first values (0: all).
	Dimensions int `json:"dimensions,omitempty"`
	// NumCtx, NumBatch and NumThread as in Options (0: the defaults).
	NumCtx    int            `json:"num_ctx,omitempty"`
	NumBatch  int            `json:"num_batch,omitempty"`
	NumThread int            `json:"num_thread,omitempty"`
	KeepAlive *time.Duration `json:"keep_alive,omitempty"`
}

// EmbedResult is the vectors, in the inputs' order, with the real
// measurements.
type EmbedResult struct {
	Embeddings   [][]float32   `json:"embeddings"`
	PromptTokens int           `json:"prompt_tokens"`       // tokens evaluated over all inputs
	Truncated    []int         `json:"truncated,omitempty"` // indexes of the inputs cut to the context
	Pooling      string        `json:"pooling"`
	LoadDuration time.Duration `json:"load_ns"`    // 0 when the model was resident
	EvalDuration time.Duration `json:"prefill_ns"` // encoding + evaluation
}

// ModelInfo is one model the server can run.
type ModelInfo struct {
	Name          string    `json:"name"`
	Path          string    `json:"path,omitempty"`
	Size          int64     `json:"size"` // bytes on disk
	Modified      time.Time `json:"modified_at"`
	Digest        string    `json:"digest,omitempty"`
	Family        string    `json:"family,omitempty"`         // architecture, e.g. "llama"
	ParameterSize string    `json:"parameter_size,omitempty"` // e.g. "260K", "1.1B"
	Quantization  string    `json:"quantization_level,omitempty"`
	ContextLength int       `json:"context_length,omitempty"`
	Parent        string    `json:"parent_model,omitempty"` // the model it was made from (create, copy)
	// Verdict is the planner's one-line verdict for this machine, e.g.
	// "fits, ~23 tok/s"; empty when unknown.
	Verdict string `json:"verdict,omitempty"`
}

// ModelDetail is what /api/show reports.
type ModelDetail struct {
	ModelInfo
	Template     string         `json:"template,omitempty"`   // chat template source
	Parameters   string         `json:"parameters,omitempty"` // default options, one per line
	Metadata     map[string]any `json:"model_info,omitempty"` // GGUF metadata (large arrays left out)
	Capabilities []string       `json:"capabilities,omitempty"`
}

// RunningModel is a resident model.
type RunningModel struct {
	ModelInfo
	Bytes     int64      `json:"size_resident"`        // memory held
	Placement string     `json:"placement,omitempty"`  // e.g. "cpu"
	State     string     `json:"state,omitempty"`      // "loading", "in use" or "idle"
	KeepAlive string     `json:"keep_alive,omitempty"` // e.g. "5m0s", "forever"
	ExpiresAt *time.Time `json:"expires_at,omitempty"` // nil: in use, loading or kept until evicted
	InUse     int        `json:"in_use"`               // generations running on it
}

// PlanRequest asks for a memory and speed prediction.
type PlanRequest struct {
	Model    string `json:"model"`
	Ctx      int    `json:"ctx,omitempty"`
	Batch    int    `json:"batch,omitempty"`
	Parallel int    `json:"parallel,omitempty"`
	KV       string `json:"kv,omitempty"`     // f16, q8_0, f32
	Device   string `json:"device,omitempty"` // a device profile name or a custom form
}
