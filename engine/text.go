package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sample"
	"github.com/glassbox-ai/glassbox/tokenizer"
)

// Text is a text model ready to generate: the mapped file, the bound
// architecture and, built on first use, its tokenizer and chat template.
// It is safe for concurrent use; every Generate call has its own Session.
type Text struct {
	File  *gguf.File
	Model model.Model

	tokOnce sync.Once
	tok     *tokenizer.Tokenizer
	tokErr  error

	vocabOnce sync.Once
	vocab     *sample.Vocab // what output constraints read of the vocabulary
}

// LoadText maps the model file at path and binds its architecture,
// reporting the load stage through the trace in ctx. Close releases it.
func LoadText(ctx context.Context, path string) (*Text, error) {
	t, _, err := LoadTextDraft(ctx, path, "")
	return t, err
}

// LoadTextDraft is LoadText with a draft model for speculative decoding
// (TextRequest.Draft) loaded in the same load stage, its vocabulary
// checked against the model's; with draft "" it loads the model alone.
func LoadTextDraft(ctx context.Context, path, draft string) (*Text, *Text, error) {
	tr := pipeline.TraceFrom(ctx)
	tr.OnStageStart(pipeline.StageLoad)
	t, err := openText(path)
	if err != nil {
		return nil, nil, err
	}
	bytes := t.File.TensorBytes()
	note := fmt.Sprintf("%s, %s of tensors mapped; a token reads %s", t.Model.Config().Arch,
		byteSize(bytes), byteSize(t.Model.WeightBytes()))
	var d *Text
	if draft != "" {
		if d, err = openText(draft); err == nil {
			if err = t.CheckDraft(d); err != nil {
				d.Close()
			}
		}
		if err != nil {
			t.Close()
			return nil, nil, err
		}
		bytes += d.File.TensorBytes()
		note += fmt.Sprintf("; draft model: %s, %s mapped, a pass reads %s", d.Model.Config().Arch,
			byteSize(d.File.TensorBytes()), byteSize(d.Model.WeightBytes()))
	}
	tr.OnStageDone(pipeline.StageLoad, pipeline.StageStats{Bytes: bytes, PeakRSS: plan.PeakRSS(), Note: note})
	return t, d, nil
}

// openText maps a model file and binds its architecture.
func openText(path string) (*Text, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	m, err := model.Load(f)
	if err != nil {
		f.Close()
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	return &Text{File: f, Model: m}, nil
}

// Close unmaps the file and runs the collector at once, which releases the
// weights' x16 copies (compute.ForDecode; they are unmapped when their
// matrices become unreachable), so that a model loaded next does not find
// the evicted one still resident; the Text must not be used afterwards.
func (t *Text) Close() error {
	err := t.File.Close()
	t.Model = nil
	debug.FreeOSMemory()
	return err
}

// Tokenizer returns the model's tokenizer, built once from its metadata.
func (t *Text) Tokenizer() (*tokenizer.Tokenizer, error) {
	t.tokOnce.Do(func() {
		t.tok, t.tokErr = tokenizer.FromGGUF(t.File)
		if t.tokErr != nil {
			t.tokErr = pipeline.Wrap(pipeline.StageEncode, t.tokErr, "")
		}
	})
	return t.tok, t.tokErr
}

// constraintVocab returns the vocabulary as output constraints read it,
// built on first use (a pass over every token's text).
func (t *Text) constraintVocab(tok *tokenizer.Tokenizer) *sample.Vocab {
	t.vocabOnce.Do(func() { t.vocab = sample.NewVocab(tok.VocabSize(), tok.TextPiece, tok.IsEOG) })
	return t.vocab
}

// TextRequest is one text generation.
type TextRequest struct {
	Prompt   string         // plain text (with Chat: the user message)
	Chat     bool           // render Prompt (and System) with the model's chat template
	System   string         // system message, with Chat
	Messages []chat.Message // a whole conversation, rendered with the template; overrides Prompt
	// Tools are the function definitions offered to the model (a JSON
	// array of {"type": "function", "function": {"name", "description",
	// "parameters"}}), given to the chat template as its tools variable;
	// a template that does not use them is an encode-stage error.
	Tools     json.RawMessage
	PromptIDs []int // token ids instead of text: no tokenizer involved in encoding
	// FIM asks for the text between Prompt (the code before the cursor)
	// and FIM.Suffix (after it), in the vocabulary's fill-in-the-middle
	// tokens; no chat template.
	FIM       *FIM
	NoBOS     bool          // do not add BOS (and other special tokens the vocabulary adds)
	Sampling  sample.Params // temperature 0 = greedy
	MaxTokens int           // ≤ 0: until EOG or a full context
	Stops     []string
	// Format constrains the output (sample.JSON): "json" to one JSON
	// object, a JSON schema's text (starting with '{') to a value the
	// schema allows (sample.CompileSchema); "" leaves it free.
	Format  string
	Session model.SessionOptions
	// Cache, when set, gives the request a kept session whose KV cache
	// holds the longest start of its prompt (those tokens are not
	// evaluated again) and keeps the session there afterwards; nil: a
	// new session, closed at the end.
	Cache *SessionCache
	// OnToken receives each generated token and the text it releases.
	OnToken func(id int, text string) error
	// Think, when set, goes to the chat template as enable_thinking
	// (Qwen3's switch for its reasoning). A harmony model (gpt-oss) cannot
	// stop thinking: false asks it for the least (reasoning_effort "low",
	// unless Effort says otherwise) and drops its thinking from the reply.
	Think *bool
	// Effort, when set, goes to the chat template as reasoning_effort:
	// "low", "medium" or "high" (gpt-oss's levels; its template's default
	// is medium).
	Effort string
	// SplitThinking separates a reasoning model's thinking from its answer
	// (see Request); whether the rendered prompt opened the block is found
	// here.
	SplitThinking bool
	// Logprobs and TopLogprobs ask for each token's log-probability and
	// its most likely alternatives (see Request).
	Logprobs    bool
	TopLogprobs int
	// Roofline and Limiter go to the generate stage (see Request).
	Roofline float64
	Limiter  string
	// PromptLogprobs and NoGenerate: see Request (the prompt scored, and
	// nothing generated).
	PromptLogprobs, NoGenerate bool
	// Draft, when set, is a smaller model of the same vocabulary that
	// proposes up to DraftMax tokens after each pick for the model to check
	// in one pass (speculative decoding; see Draft). DraftMinProb stops a
	// proposal early where the draft is less sure of its choice.
	Draft        *Text
	DraftMax     int
	DraftMinProb float64
	// DraftCache, when set, keeps the draft's session as Cache keeps the
	// model's, so the next request's draft starts after the tokens its
	// KV cache holds (nil: a new draft session each request).
	DraftCache *SessionCache
}

// Prepare encodes the prompt (encode stage, reported through the trace in
// ctx) and returns the engine request for it: ids, sampler, stream decoder
// primed with the prompt, stop strings. Use it to hand text requests to a
// Batcher; Generate uses it too.
func (t *Text) Prepare(ctx context.Context, req TextRequest) (Request, error) {
	tr := pipeline.TraceFrom(ctx)
	if err := req.Sampling.Validate(); err != nil {
		// The sampler's settings belong to the generate stage; they are
		// checked before encoding so that a bad request fails at once.
		return Request{}, pipeline.Wrap(pipeline.StageGenerate, err, "")
	}
	if req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs || req.TopLogprobs > 0 && !req.Logprobs && !req.PromptLogprobs {
		return Request{}, pipeline.Errorf(pipeline.StageGenerate, fmt.Sprintf("ask for 0 to %d alternatives, with logprobs on", MaxTopLogprobs),
			"top logprobs %d is out of range (0 to %d, and only with logprobs)", req.TopLogprobs, MaxTopLogprobs)
	}
	schema, err := OutputSchema(req.Format)
	if err != nil {
		return Request{}, pipeline.Wrap(pipeline.StageGenerate, err, `give format "json", a JSON schema this supports, or none`)
	}
	tr.OnStageStart(pipeline.StageEncode)
	tok, err := t.Tokenizer()
	if err != nil {
		return Request{}, err
	}
	for id := range req.Sampling.LogitBias {
		if id >= tok.VocabSize() {
			return Request{}, pipeline.Errorf(pipeline.StageGenerate, "bias ids of this model's vocabulary",
				"logit bias for token %d: the vocabulary has %d tokens", id, tok.VocabSize())
		}
	}
	enc, err := t.encode(tok, &req)
	if err != nil {
		return Request{}, err
	}
	ids, thinkOpen := enc.ids, enc.thinkOpen
	tr.OnStageDone(pipeline.StageEncode, pipeline.StageStats{Items: int64(len(ids)), Unit: "tokens", PeakRSS: plan.PeakRSS()})
	// The decoder sees the prompt first, so the continuation keeps its
	// leading space (SentencePiece strips it only at the start of a text).
	dec := tok.NewStreamDecoder()
	for _, id := range ids {
		dec.Add(id)
	}
	r := Request{Prompt: ids, MaxTokens: req.MaxTokens, Sampler: sample.New(req.Sampling),
		IsEOG: tok.IsEOG, Decoder: dec, Stops: req.Stops, OnToken: req.OnToken, WeightBytes: t.Model.WeightBytes(),
		Roofline: req.Roofline, Limiter: req.Limiter, Logprobs: req.Logprobs, TopLogprobs: req.TopLogprobs,
		SplitThinking: req.SplitThinking, ThinkingOpen: thinkOpen, PromptLogprobs: req.PromptLogprobs, NoGenerate: req.NoGenerate,
		Harmony: enc.harmony, HarmonyOpen: enc.harmonyOpen, HideThinking: enc.harmony && req.Think != nil && !*req.Think}
	if req.Logprobs || req.PromptLogprobs {
		r.Piece = tok.Piece
	}
	if schema != nil {
		r.Constraint = schema.Constraint(t.constraintVocab(tok))
		switch {
		case req.SplitThinking && enc.harmony:
			// The format is the final message's: the model thinks and
			// writes headers first.
			r.Constraint = newHarmonyFirst(r.Constraint, tok.TextPiece, enc.harmonyOpen)
		case req.SplitThinking:
			// The format is the answer's: a reasoning model thinks first.
			open := thinkToken(func(s string) ([]int, error) { return tok.Encode(s, false, true) }, tok.TextPiece)
			if open >= 0 || thinkOpen {
				r.Constraint = newThinkFirst(r.Constraint, open, tok.TextPiece, thinkOpen)
			}
		}
	}
	return r, nil
}

// OutputSchema reads a request's output format: nil for none (""), the
// one-object schema for "json", else format compiled as a JSON schema.
func OutputSchema(format string) (*sample.Schema, error) {
	switch {
	case format == "":
		return nil, nil
	case format == "json":
		return sample.ObjectSchema(), nil
	case strings.HasPrefix(strings.TrimLeft(format, " \t\r\n"), "{"):
		return sample.CompileSchema([]byte(format))
	}
	return nil, fmt.Errorf("unknown output format %q (give \"json\" or a JSON schema)", format)
}

// Generate encodes the prompt, allocates a session, and runs prefill and
// generation. Result.Text is the generated text only.
func (t *Text) Generate(ctx context.Context, req TextRequest) (*Result, error) {
	tr := pipeline.TraceFrom(ctx)
	t0 := time.Now()
	r, err := t.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	encodeTime := time.Since(t0)

	cfg := t.Model.Config()
	opts := req.Session.Fill(cfg)
	if opts.CtxLen > cfg.CtxLen && cfg.CtxLen > 0 && !tr.Warned(plan.CtxWarningCode) {
		tr.OnWarning(plan.CtxWarningCode, fmt.Sprintf(
			"context of %d is more than the %d positions the model was trained on; output past %d may degrade",
			opts.CtxLen, cfg.CtxLen, cfg.CtxLen))
	}
	var s model.Session
	cached := 0
	if req.Cache != nil {
		s, cached, err = req.Cache.Session(t.Model, opts, r.Prompt)
		if r.PromptLogprobs {
			cached = 0 // every row's logits are needed
		}
	} else {
		s, err = t.Model.NewSession(opts)
	}
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePrefill, err, "")
	}
	if req.Draft != nil {
		dopts := model.SessionOptions{CtxLen: opts.CtxLen, Batch: opts.Batch, Threads: opts.Threads, KVF32: opts.KVF32, KVQ8: opts.KVQ8}
		var ds model.Session
		dcached := 0
		if req.DraftCache != nil {
			ds, dcached, err = req.DraftCache.Session(req.Draft.Model, dopts, r.Prompt)
		} else {
			ds, err = req.Draft.Model.NewSession(dopts)
		}
		if err != nil {
			if req.Cache == nil {
				s.Close()
			} else {
				req.Cache.Put(s, r.Prompt[:cached])
			}
			return nil, pipeline.Wrap(pipeline.StagePrefill, fmt.Errorf("the draft model's session: %w", err), "")
		}
		r.Draft = &Draft{Session: ds, Vocab: req.Draft.Model.Config().VocabSize, Max: max(req.DraftMax, 1),
			MinProb: req.DraftMinProb, WeightBytes: req.Draft.Model.WeightBytes(), Cached: min(dcached, len(r.Prompt)-1)}
		defer func() {
			if req.DraftCache == nil {
				ds.Close()
				return
			}
			// What the draft's cache holds: the ids it evaluated that the
			// sequence kept.
			req.DraftCache.Put(ds, r.Draft.kept)
		}()
	}
	q, res, err := generate(ctx, s, cfg.VocabSize, r, cached)
	switch {
	case req.Cache == nil:
		defer s.Close()
	case q == nil: // the prompt was refused: the cache still holds what matched
		req.Cache.Put(s, r.Prompt[:cached])
	default:
		defer req.Cache.Put(s, q.history[:q.evaluated()])
	}
	if res != nil {
		res.EncodeTime, res.KVBytes, res.ArenaBytes = encodeTime, s.KVBytes(), s.ArenaBytes()
		res.KVType = s.Options().KVName()
	}
	if err != nil {
		return res, err
	}
	tr.OnStageSkipped(pipeline.StageDecode, "text was decoded as it was generated")
	return res, nil
}

// CheckDraft reports whether d can draft for t: the same vocabulary,
// token for token, so that its ids mean the same text.
func (t *Text) CheckDraft(d *Text) error {
	if tv, dv := t.Model.Config().VocabSize, d.Model.Config().VocabSize; tv != dv {
		return pipeline.Errorf(pipeline.StageLoad, draftHint, "the draft model's vocabulary has %d tokens, the model's %d", dv, tv)
	}
	return CheckDraftFiles(t.File, d.File)
}

const draftHint = "give a draft model of the same family and tokenizer (a smaller or more quantized one)"

// CheckDraftFiles is CheckDraft on two files' tokenizers alone (their
// headers, before the weights are loaded).
func CheckDraftFiles(model, draft *gguf.File) error {
	tt, err := tokenizer.FromGGUF(model)
	if err != nil {
		return pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	dt, err := tokenizer.FromGGUF(draft)
	if err != nil {
		return pipeline.Wrap(pipeline.StageLoad, fmt.Errorf("the draft model: %w", err), "")
	}
	if tt.VocabSize() != dt.VocabSize() {
		return pipeline.Errorf(pipeline.StageLoad, draftHint, "the draft model's vocabulary has %d tokens, the model's %d", dt.VocabSize(), tt.VocabSize())
	}
	for id := range tt.VocabSize() {
		if tt.Token(id) != dt.Token(id) {
			return pipeline.Errorf(pipeline.StageLoad, draftHint, "the draft model's token %d is %q, the model's %q: their vocabularies differ", id, dt.Token(id), tt.Token(id))
		}
	}
	return nil
}

// RenderPrompt is the text a request's prompt is encoded from: its
// conversation (or, with Chat, its prompt and system message) through f's
// chat template, or the prompt as given; special says whether the text of
// control tokens in it stands for those tokens (a template writes them).
func RenderPrompt(f *gguf.File, req *TextRequest) (prompt string, special bool, err error) {
	r, err := renderPrompt(f, req)
	return r.text, r.special, err
}

// rendered is a prompt's text and what its template says of the reply.
type rendered struct {
	text    string
	special bool // control tokens are written as their text (a template's)
	chat    bool // through the chat template
	harmony bool // the template is in OpenAI's harmony format (gpt-oss)
}

// renderPrompt is RenderPrompt. A harmony template gets the conversation
// as it accepts it (chat.HarmonyMessages) and, for think false, the least
// reasoning effort.
func renderPrompt(f *gguf.File, req *TextRequest) (rendered, error) {
	if !req.Chat && len(req.Messages) == 0 {
		return rendered{text: req.Prompt}, nil
	}
	tmpl, err := chat.FromGGUF(f)
	if err != nil {
		return rendered{}, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	msgs := req.Messages
	if len(msgs) == 0 {
		if req.System != "" {
			msgs = append(msgs, chat.Message{Role: "system", Content: req.System})
		}
		msgs = append(msgs, chat.Message{Role: "user", Content: req.Prompt})
	}
	harmony := chat.IsHarmony(tmpl.Source)
	vars := map[string]any{}
	if req.Think != nil {
		vars["enable_thinking"] = *req.Think
	}
	switch {
	case req.Effort != "":
		vars["reasoning_effort"] = req.Effort
	case harmony && req.Think != nil && !*req.Think:
		vars["reasoning_effort"] = "low" // the least thinking gpt-oss does
	}
	if harmony {
		msgs = chat.HarmonyMessages(msgs)
	}
	if len(req.Tools) > 0 {
		if !strings.Contains(tmpl.Source, "tools") {
			return rendered{}, pipeline.Errorf(pipeline.StageEncode, "use a model whose chat template takes tools (Qwen 2.5/3, Llama 3.1+, Mistral, Hermes, gpt-oss…)",
				"the chat template (%s) does not use tools: the model would never see them", tmpl.Origin)
		}
		vars["tools"] = req.Tools
	}
	text, err := tmpl.Render(msgs, true, vars)
	if err != nil {
		return rendered{}, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	// The template writes control tokens as text.
	return rendered{text: text, special: true, chat: true, harmony: harmony}, nil
}

// encoded is a prompt's token ids and what its rendering says of the
// reply: whether it leaves a <think> block open, whether it is in the
// harmony format and, if so, the header of a message it leaves open.
type encoded struct {
	ids         []int
	thinkOpen   bool
	harmony     bool
	harmonyOpen string
}

// encode turns the request's prompt (ids, text, or a conversation through
// the chat template) into token ids.
func (t *Text) encode(tok *tokenizer.Tokenizer, req *TextRequest) (encoded, error) {
	if req.FIM != nil {
		ids, err := encodeFIM(tok, req.Prompt, req.FIM, !req.NoBOS)
		return encoded{ids: ids}, err
	}
	if req.PromptIDs != nil {
		for i, id := range req.PromptIDs {
			if id < 0 || id >= tok.VocabSize() {
				return encoded{}, pipeline.Errorf(pipeline.StageEncode, "",
					"prompt id %d (number %d) is outside the vocabulary of %d", id, i+1, tok.VocabSize())
			}
		}
		if len(req.PromptIDs) == 0 {
			return encoded{}, pipeline.Errorf(pipeline.StageEncode, "", "the prompt has no token ids")
		}
		return encoded{ids: req.PromptIDs}, nil
	}
	r, err := renderPrompt(t.File, req)
	if err != nil {
		return encoded{}, err
	}
	ids, err := tok.Encode(r.text, !req.NoBOS, r.special)
	if err != nil {
		return encoded{}, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	// A template that writes the BOS text itself would give BOS twice.
	if len(ids) >= 2 && ids[0] == tok.BOS() && ids[1] == tok.BOS() {
		ids = ids[1:]
	}
	if len(ids) == 0 {
		return encoded{}, pipeline.Errorf(pipeline.StageEncode, "give a prompt, or allow BOS", "the prompt encodes to no tokens")
	}
	e := encoded{ids: ids, harmony: r.harmony}
	switch {
	case r.harmony:
		e.harmonyOpen = harmonyOpenHeader(r.text)
	case r.chat:
		e.thinkOpen = promptOpensThink(r.text)
	}
	return e, nil
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
