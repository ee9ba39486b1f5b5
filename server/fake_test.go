package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// fakeBackend generates words from a fixed list, one per step, through the
// real pipeline hooks. Its timing is set per test; it records what it saw.
//
// A test that needs a generation to be running at some point does not rely
// on the steps' durations (a loaded machine can be arbitrarily slow or fast
// between two lines of a test): it sets hold, and a generation's steps from
// holdAt on (counting prefill steps first, then decode steps) wait until
// hold is closed or the generation's context ends.
type fakeBackend struct {
	words       []string      // generated in order, cycling
	prefill     int           // prefill steps
	step        time.Duration // time per prefill or decode step
	hold        chan struct{} // if not nil, steps from holdAt on wait for it to close
	holdAt      int           // the first step that waits for hold
	ctxLen      int           // prompt tokens (words) allowed
	maxTokens   int           // tokens generated when NumPredict is -1
	tokenPrefix string        // prepended to every token's text (to make big tokens)

	mu        sync.Mutex
	running   int
	peak      int
	requests  []*GenerateRequest
	embeds    []*EmbedRequest
	deleted   []string
	copied    []string
	ended     []error       // each generation's outcome, in end order
	inPrefill chan struct{} // receives when a generation enters prefill (if not nil)
	inDecode  chan struct{} // receives when a generation emits its first token (if not nil)
	loaded    map[string]time.Duration
	unloaded  []string
	profiles  map[string]*ModelProfile // made models (Create)
	blobs     map[string][]byte        // uploads (PutBlob)
	free      func() (int64, bool)     // BlobFree (nil: cannot tell)
	putErr    error                    // what PutBlob fails with, if set
}

func newFake() *fakeBackend {
	return &fakeBackend{words: []string{"Once", " upon", " a", " time", ",", " there", " was", " a", " cat", "."},
		prefill: 2, ctxLen: 64, maxTokens: 10, loaded: map[string]time.Duration{}}
}

var fakeModels = []ModelInfo{
	{Name: "tiny", Path: "/models/tiny.gguf", Size: 1185376, Family: "llama", ParameterSize: "260K",
		Quantization: "F32", ContextLength: 128, Modified: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Verdict: "fits, ~9000 tok/s"},
	{Name: "other", Path: "/models/other.gguf", Size: 862656, Family: "llama", Quantization: "Q4_0"},
}

func (f *fakeBackend) known(name string) error {
	for _, m := range fakeModels {
		if m.Name == name {
			return nil
		}
	}
	if f.made(name) {
		return nil
	}
	return pipeline.Errorf(pipeline.StageLoad, "see GET /v1/models", "model %q: %w", name, ErrModelNotFound)
}

// sleep is the generation's step i: it waits for the hold (if any), then
// takes the step's time.
func (f *fakeBackend) sleep(ctx context.Context, i int) error {
	if f.hold != nil && i >= f.holdAt {
		select {
		case <-f.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.step == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(f.step)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeBackend) Generate(ctx context.Context, req *GenerateRequest) (res *Result, err error) {
	f.mu.Lock()
	f.running++
	f.peak = max(f.peak, f.running)
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.ended = append(f.ended, err)
		f.mu.Unlock()
	}()
	if err := f.known(req.Model); err != nil {
		return nil, err
	}
	tr := pipeline.TraceFrom(ctx)
	tr.OnStageSkipped(pipeline.StageLoad, "model already loaded, 0 ms")
	prompt := req.Prompt
	for _, m := range req.Messages {
		prompt += " " + m.Content
	}
	n := len(strings.Fields(prompt))
	if len(req.PromptIDs) > 0 {
		n = len(req.PromptIDs)
	}
	if n > f.ctxLen {
		return nil, pipeline.Errorf(pipeline.StageEncode, "shorten the prompt",
			"prompt has %d tokens but the context holds %d", n, f.ctxLen).With("tokens", int64(n)).With("ctx", int64(f.ctxLen))
	}
	t0 := time.Now()
	tr.OnStageStart(pipeline.StagePrefill)
	if f.inPrefill != nil {
		f.inPrefill <- struct{}{}
	}
	for i := range f.prefill {
		if err := f.sleep(ctx, i); err != nil {
			return nil, err
		}
		tr.OnProgress(pipeline.StagePrefill, int64(i+1), int64(f.prefill))
	}
	tr.OnStageDone(pipeline.StagePrefill, pipeline.StageStats{Items: int64(n), Unit: "tokens"})
	t1 := time.Now()
	tr.OnStageStart(pipeline.StageGenerate)
	// The fake "model" ends its answer after maxTokens tokens.
	limit, reason := req.Options.NumPredict, "length"
	if limit < 0 || limit >= f.maxTokens {
		limit, reason = f.maxTokens, "stop"
	}
	if req.Options.NoGenerate {
		limit, reason = 0, "length"
	}
	var promptLPs []api.Logprob
	if req.Options.PromptLogprobs {
		// Each prompt word is a token; a word's logprob is −1/(its length).
		for i, w := range strings.Fields(prompt) {
			lp := api.Logprob{Piece: w}
			if i > 0 {
				lp.Logprob = -1 / float64(len(w))
				lp.Top = []api.Alt{{ID: 7, Piece: "the", Logprob: -0.1}}
			}
			promptLPs = append(promptLPs, lp)
		}
	}
	var out strings.Builder
	count := 0
	thinking, stopSeq := "", ""
	if t := req.Options.Think; t != nil && *t {
		// A reasoning "model": two tokens of thinking first.
		for i, th := range []string{"Hmm, ", "a story."} {
			tr.OnTokenInfo(api.Token{ID: 200 + i, Thinking: th})
			thinking += th
		}
	}
	for i := 0; i < limit; i++ {
		if err := f.sleep(ctx, f.prefill+i); err != nil {
			return nil, err
		}
		text := f.tokenPrefix + f.words[i%len(f.words)]
		stopped := ""
		for _, s := range req.Options.Stop {
			if strings.Contains(out.String()+text, s) {
				stopped = s
			}
		}
		if stopped != "" {
			reason, stopSeq = "stop", stopped
			break
		}
		count++
		out.WriteString(text)
		if req.Options.Logprobs {
			// As the engine with a character split across tokens: the
			// first half's text is held back and comes with the second
			// (" upon" here is the tokens " up" and "on").
			piece := text
			if i == 1 {
				tr.OnTokenInfo(api.Token{ID: 1000, Logprob: fakeLogprob(1000, text[:3], req.Options.TopLogprobs)})
				piece = text[3:]
			}
			tr.OnTokenInfo(api.Token{ID: i, Text: text, Logprob: fakeLogprob(i, piece, req.Options.TopLogprobs)})
		} else {
			tr.OnToken(i, text)
		}
		if i == 0 && f.inDecode != nil {
			f.inDecode <- struct{}{}
		}
	}
	if len(req.Tools) > 0 {
		// As the serve backend finds a call in the reply: the fake
		// "model" answers with a call to the first tool offered.
		tr.OnToken(100, "<tool_call>{}</tool_call>")
		tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{Items: int64(count + 1), Unit: "tokens"})
		return &Result{Text: out.String(), PromptTokens: n, Tokens: count + 1, DoneReason: "stop",
			ToolCalls: []ToolCall{{ID: "call_0", Name: req.ToolNames[0], Arguments: json.RawMessage(`{"city":"Paris"}`)}}}, nil
	}
	tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{Items: int64(count), Unit: "tokens"})
	return &Result{Text: out.String(), Thinking: thinking, PromptTokens: n, Tokens: count, DoneReason: reason, StopSequence: stopSeq, PromptLogprobs: promptLPs,
		PromptDuration: t1.Sub(t0), EvalDuration: time.Since(t1)}, nil
}

// Embed makes a 3-dimensional "embedding" of each input: its word count,
// its byte count and 1 (normalized when asked), through the real pipeline
// hooks; an input of more words than ctxLen is refused or cut as the
// engine does.
func (f *fakeBackend) Embed(ctx context.Context, req *EmbedRequest) (*EmbedResult, error) {
	f.mu.Lock()
	f.embeds = append(f.embeds, req)
	f.mu.Unlock()
	if err := f.known(req.Model); err != nil {
		return nil, err
	}
	tr := pipeline.TraceFrom(ctx)
	tr.OnStageStart(pipeline.StagePrefill)
	res := &EmbedResult{Pooling: "mean"}
	inputs := req.Input
	for _, ids := range req.InputIDs {
		inputs = append(inputs, strings.Repeat("x ", len(ids)))
	}
	for i, in := range inputs {
		words := strings.Fields(in)
		if len(words) > f.ctxLen {
			if !req.Truncate {
				return nil, pipeline.Errorf(pipeline.StageEncode, "shorten the input", "input %d has %d tokens but the context holds %d",
					i, len(words), f.ctxLen).With("tokens", int64(len(words))).With("ctx", int64(f.ctxLen))
			}
			words = words[:f.ctxLen]
			res.Truncated = append(res.Truncated, i)
		}
		if err := f.sleep(ctx, i); err != nil {
			return nil, err
		}
		v := []float64{float64(len(words)), float64(len(strings.Join(words, " "))), 1}
		if req.Dimensions > 0 {
			v = v[:min(req.Dimensions, len(v))]
		}
		var ss float64
		for _, x := range v {
			ss += x * x
		}
		out := make([]float32, len(v))
		for k, x := range v {
			if req.Normalize && ss > 0 {
				x /= math.Sqrt(ss)
			}
			out[k] = float32(x)
		}
		res.Embeddings = append(res.Embeddings, out)
		res.PromptTokens += len(words)
	}
	tr.OnStageDone(pipeline.StagePrefill, pipeline.StageStats{Items: int64(res.PromptTokens), Unit: "tokens"})
	return res, nil
}

// Pull "downloads" 300 bytes in three steps, reporting them as the real
// backend does; a reference starting with "bad" fails after the first.
func (f *fakeBackend) Pull(ctx context.Context, ref string) (string, error) {
	tr := pipeline.TraceFrom(ctx)
	tr.OnStageStart(pipeline.StageLoad)
	for i := int64(1); i <= 3; i++ {
		if err := f.sleep(ctx, int(i-1)); err != nil {
			return "", err
		}
		tr.OnProgress(pipeline.StageLoad, 100*i, 300)
		if strings.HasPrefix(ref, "bad") {
			return "", pipeline.Errorf(pipeline.StageLoad, "", "pull %s: HTTP 404: not found", ref)
		}
	}
	tr.OnStageDone(pipeline.StageLoad, pipeline.StageStats{Bytes: 300})
	return "pulled", nil
}

func (f *fakeBackend) Copy(ctx context.Context, src, dst string) error {
	if err := f.known(src); err != nil {
		return err
	}
	if dst == "tiny" {
		return BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "model %q already exists", dst))
	}
	f.mu.Lock()
	f.copied = append(f.copied, src+">"+dst)
	f.mu.Unlock()
	return nil
}

// CountTokens counts the words of the conversation (the fake's tokens),
// one more per message for its role.
func (f *fakeBackend) CountTokens(ctx context.Context, req *GenerateRequest) (int, error) {
	if err := f.known(req.Model); err != nil {
		return 0, err
	}
	n := len(strings.Fields(req.Prompt))
	for _, m := range req.Messages {
		n += 1 + len(strings.Fields(m.Content))
	}
	return n, nil
}

// HasBlob and PutBlob keep uploads in memory, checked against their digest.
func (f *fakeBackend) HasBlob(ctx context.Context, digest string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.blobs[digest]
	return ok, nil
}

func (f *fakeBackend) PutBlob(ctx context.Context, digest string, r io.Reader) error {
	b, err := io.ReadAll(r)
	if err == nil && f.putErr != nil {
		err = f.putErr
	}
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(b); "sha256:"+hex.EncodeToString(sum[:]) != digest {
		return BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "upload: digest mismatch"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.blobs == nil {
		f.blobs = map[string][]byte{}
	}
	f.blobs[digest] = b
	return nil
}

// made reports whether name is a model Create made.
func (f *fakeBackend) made(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.profiles[name]
	return ok
}

// Create records a made model ("mario" from "tiny"), whose profile
// Profile then reports; a name taken is refused.
func (f *fakeBackend) Create(ctx context.Context, req *CreateRequest) error {
	for _, digest := range req.Files {
		if ok, _ := f.HasBlob(ctx, digest); !ok {
			return BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "blob %s was not uploaded", digest))
		}
	}
	if err := f.known(req.From); err != nil && len(req.Files) == 0 {
		return err
	}
	if f.known(req.Name) == nil {
		return BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "model %q already exists", req.Name))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.profiles == nil {
		f.profiles = map[string]*ModelProfile{}
	}
	p := req.ModelProfile
	f.profiles[req.Name] = &p
	return nil
}

func (f *fakeBackend) Profile(ctx context.Context, name string) (*ModelProfile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.profiles[name], nil
}

func (f *fakeBackend) Delete(ctx context.Context, name string) error {
	if err := f.known(name); err != nil {
		return err
	}
	f.mu.Lock()
	f.deleted = append(f.deleted, name)
	f.mu.Unlock()
	return nil
}

// fakeLogprob is token id's made-up logprob with top alternatives.
func fakeLogprob(id int, piece string, top int) *api.Logprob {
	lp := &api.Logprob{Piece: piece, Logprob: -0.25 * float64(id%4+1)}
	for k := range top {
		lp.Top = append(lp.Top, api.Alt{ID: 2000 + k, Piece: fmt.Sprintf("alt%d", k), Logprob: -0.1 * float64(k+1)})
	}
	return lp
}

func (f *fakeBackend) Models(ctx context.Context) ([]ModelInfo, error) { return fakeModels, nil }

func (f *fakeBackend) Show(ctx context.Context, name string) (*ModelDetail, error) {
	if err := f.known(name); err != nil {
		return nil, err
	}
	if p, _ := f.Profile(ctx, name); p != nil { // a made model: its base's file
		d, err := f.Show(ctx, p.From)
		if d != nil {
			d.Name = name
		}
		return d, err
	}
	for _, m := range fakeModels {
		if m.Name == name {
			return &ModelDetail{ModelInfo: m, Template: "{{ .Prompt }}", Parameters: "temperature 0.8",
				Metadata: map[string]any{"general.architecture": "llama"}}, nil
		}
	}
	return nil, nil
}

func (f *fakeBackend) Running(ctx context.Context) ([]RunningModel, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []RunningModel
	for _, m := range fakeModels {
		if ka, ok := f.loaded[m.Name]; ok {
			rm := RunningModel{ModelInfo: m, Bytes: m.Size, State: "idle", Placement: "cpu", KeepAlive: ka.String()}
			if ka > 0 {
				exp := time.Now().Add(ka)
				rm.ExpiresAt = &exp
			}
			out = append(out, rm)
		}
	}
	return out, nil
}

func (f *fakeBackend) Load(ctx context.Context, name string, ka *time.Duration) error {
	if err := f.known(name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d := 5 * time.Minute
	if ka != nil {
		d = *ka
	}
	f.loaded[name] = d
	return nil
}

func (f *fakeBackend) Unload(ctx context.Context, name string) error {
	if err := f.known(name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.loaded, name)
	f.unloaded = append(f.unloaded, name)
	return nil
}

func (f *fakeBackend) Plan(ctx context.Context, req *PlanRequest) (json.RawMessage, error) {
	if err := f.known(req.Model); err != nil {
		return nil, err
	}
	return json.RawMessage(fmt.Sprintf(`{"model":%q,"verdict":"fits, ~9000 tok/s","ctx":%d}`, req.Model, req.Ctx)), nil
}

func (f *fakeBackend) stats() (running, peak, requests int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running, f.peak, len(f.requests)
}

// The fake's vocabulary: a token per byte (ids 0–255) and BOS, 256, "<s>".
const fakeBOS = 256

// Tokenize makes each byte a token; "<s>" is BOS where special text is read.
func (f *fakeBackend) Tokenize(ctx context.Context, model, text string, addSpecial, parseSpecial bool) ([]TokenPiece, error) {
	if err := f.known(model); err != nil {
		return nil, err
	}
	var out []TokenPiece
	if addSpecial {
		out = append(out, TokenPiece{ID: fakeBOS, Bytes: []byte("<s>")})
	}
	for i := 0; i < len(text); i++ {
		if parseSpecial && strings.HasPrefix(text[i:], "<s>") {
			out = append(out, TokenPiece{ID: fakeBOS, Bytes: []byte("<s>")})
			i += 2
			continue
		}
		out = append(out, TokenPiece{ID: int(text[i]), Bytes: []byte{text[i]}})
	}
	return out, nil
}

func (f *fakeBackend) Detokenize(ctx context.Context, model string, ids []int) (string, error) {
	if err := f.known(model); err != nil {
		return "", err
	}
	var b strings.Builder
	for i, id := range ids {
		switch {
		case id == fakeBOS:
			b.WriteString("<s>")
		case id >= 0 && id < fakeBOS:
			b.WriteByte(byte(id))
		default:
			return "", BadRequest(pipeline.Errorf(pipeline.StageDecode, "", "token %d (number %d) is outside the vocabulary of %d", id, i+1, fakeBOS+1))
		}
	}
	return b.String(), nil
}

// RenderPrompt writes each message as <|role|>content, then <|assistant|>.
func (f *fakeBackend) RenderPrompt(ctx context.Context, req *GenerateRequest) (string, error) {
	if err := f.known(req.Model); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString("<|" + m.Role + "|>" + m.Content + "\n")
	}
	return b.String() + "<|assistant|>", nil
}

// BlobFree is the free space of the fake's disk, as f.free says.
func (f *fakeBackend) BlobFree() (int64, bool) {
	if f.free == nil {
		return 0, false
	}
	return f.free()
}
