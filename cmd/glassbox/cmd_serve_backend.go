package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/metrics"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/modelinfo"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sample"
	"github.com/glassbox-ai/glassbox/sched"
	"github.com/glassbox-ai/glassbox/server"
	"github.com/glassbox-ai/glassbox/store"
	"github.com/glassbox-ai/glassbox/tokenizer"
)

// serveBackend is server.Backend over the real packages: the model store
// (and --model files) for names, the planner for admission, the residency
// manager for loaded models, and the engine for generation.
type serveBackend struct {
	parallel int               // sequences decoded together per model
	files    map[string]string // --model files: name → path
	store    *store.Store      // may be nil
	dev      *plan.Device
	budget   int64
	session  model.SessionOptions // defaults for every generation
	res      *sched.Residency[*servedModel]
	metrics  *metrics.Metrics
	drafts   map[string]string // --draft: the model's resident name → the draft's file
	draftMax int
}

// setDrafts checks serve's --draft MODEL=DRAFT pairs before anything is
// loaded: both known, the vocabularies the same (from the files' headers),
// and one generation at a time (the batcher does not speculate).
func (b *serveBackend) setDrafts(pairs []string, parallel int) error {
	if len(pairs) > 0 && parallel > 1 {
		return errors.New("load: --draft: speculative decoding runs one generation at a time (--parallel 1)")
	}
	if b.draftMax < 1 || b.draftMax > 64 {
		return fmt.Errorf("--draft-max: generate: %d proposals per step is out of range (1 to 64)", b.draftMax)
	}
	for _, pair := range pairs {
		name, draft, ok := strings.Cut(pair, "=")
		if !ok || name == "" || draft == "" {
			return fmt.Errorf("load: --draft %q: want MODEL=DRAFT", pair)
		}
		name, path, err := b.lookup(name)
		if err != nil {
			return fmt.Errorf("load: --draft %s: %w", pair, err)
		}
		name, path = b.resident(name, path)
		dpath, err := resolveModel(draft)
		if err != nil {
			return fmt.Errorf("load: --draft %s: %w", pair, err)
		}
		if err := checkDraftPair(path, dpath); err != nil {
			return fmt.Errorf("load: --draft %s: %w", pair, err)
		}
		b.drafts[name] = dpath
	}
	return nil
}

// checkDraftPair compares two files' vocabularies from their headers.
func checkDraftPair(path, draft string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := gguf.Open(draft)
	if err != nil {
		return err
	}
	defer d.Close()
	return engine.CheckDraftFiles(f, d)
}

// servedModel is a resident model: engine.Text (the path glassbox run
// takes too), whether the file has a chat template of its own, and with
// --parallel > 1 the batcher that steps its parallel streams together
// (which keeps its sessions for prompt caching itself); with --parallel 1
// the last request's session, kept for prompt caching (see
// engine.SessionCache). baseBytes is the model's memory without a session
// (the load's plan less its KV cache and buffers): the residency counts
// it plus the kept session's, so its figure stays true when a request
// with another context is kept.
type servedModel struct {
	text      *engine.Text
	template  bool
	batch     *engine.Batcher // nil with --parallel 1
	cache     *engine.SessionCache
	draft     *engine.Text         // serve --draft's model for this one, or nil
	draftKept *engine.SessionCache // the draft's last session, kept as cache keeps the model's
	baseBytes int64
	// With --parallel > 1: the KV caches the load planned (--parallel
	// of them) and the batcher's buffers.
	plannedKV, computeBytes int64
}

func (m *servedModel) Close() {
	if m.batch != nil {
		m.batch.Close()
	}
	m.cache.Close()
	m.text.Close()
	if m.draft != nil {
		m.draftKept.Close()
		m.draft.Close()
	}
}

// resolve turns a request's model name into a file path. Only names the
// server knows are accepted: a client cannot make it open arbitrary paths.
func (b *serveBackend) resolve(name string) (string, error) {
	_, p, err := b.lookup(name)
	return p, err
}

// lookup is resolve that also returns the model's own name: a store
// model asked for by the reference it was pulled by is resident (and
// unloaded) under its store name.
func (b *serveBackend) lookup(name string) (canonical, path string, err error) {
	if p, ok := b.files[name]; ok {
		return name, p, nil
	}
	if b.store != nil {
		if e, err := b.store.Find(name); err == nil {
			return e.Name, e.Path, nil
		}
	}
	return "", "", pipeline.Errorf(pipeline.StageLoad, "GET /v1/models lists the models this server has",
		"model %q: %w", name, server.ErrModelNotFound)
}

// resident returns the name and path a model is held in memory under: a
// model made from another (create, copy) over the same file (a hard link)
// shares its base's residency — one copy of the weights, whichever name a
// request uses — down to the first model of the chain; any other model is
// its own.
func (b *serveBackend) resident(name, path string) (string, string) {
	if b.store == nil {
		return name, path
	}
	for range 16 { // a chain longer than this is not followed further
		e, err := b.store.Find(name)
		if err != nil || e.From == "" {
			return name, path
		}
		base, basePath, err := b.lookup(e.From)
		if err != nil {
			return name, path
		}
		a, aerr := os.Stat(path)
		c, cerr := os.Stat(basePath)
		if aerr != nil || cerr != nil || !os.SameFile(a, c) {
			return name, path
		}
		name, path = base, basePath
	}
	return name, path
}

// serveShapes caches each model file's plan.Shape by path, size and
// modification time: opening a file and reading its header (the
// vocabulary's strings included) took 5.3 ms for the 1B model, planning
// from the shape 6 µs, and every generation request plans.
var serveShapes sync.Map

// shape returns the plan.Shape of the model file at path.
func shape(path string) (*plan.Shape, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	key := fmt.Sprintf("%s@%d@%d", path, st.Size(), st.ModTime().UnixNano())
	if s, ok := serveShapes.Load(key); ok {
		return s.(*plan.Shape), nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	defer f.Close()
	s, err := plan.ReadShape(f)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	serveShapes.Store(key, s)
	return s, nil
}

// planFor plans one generation of model name with the request's options.
func (b *serveBackend) planFor(path string, opts model.SessionOptions, parallel int, kv string) (*plan.Plan, error) {
	s, err := shape(path)
	if err != nil {
		return nil, err
	}
	if kv == "" {
		kv = opts.KVName()
	}
	p, err := plan.ForShape(s, plan.Options{Ctx: opts.CtxLen, Batch: opts.Batch, Parallel: parallel, KV: kv, Threads: opts.Threads}, b.device())
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	return p, nil
}

// device returns this machine as it is now: available RAM read again
// (other programs come and go), plus what evicting the idle resident models
// would give back. It copies b.dev, which concurrent requests share.
func (b *serveBackend) device() *plan.Device {
	d := *b.dev
	if err := d.RefreshMemory(); err != nil {
		d = *b.dev // keep the figures read at start
	}
	return d.WithReclaimable(b.res.Reclaimable())
}

// acquire makes model name resident (loading it if needed) and returns the
// lease; the load stage is reported through ctx's trace.
func (b *serveBackend) acquire(ctx context.Context, name, path string, mem plan.Memory, keep *time.Duration) (*sched.Lease[*servedModel], error) {
	bytes := mem.ModelBytes()
	draft := b.drafts[name]
	if draft != "" {
		// The draft is resident with its model: its weights, cache and
		// buffers count with the model's.
		dp, err := b.planFor(draft, b.session, 1, "")
		if err != nil {
			return nil, err
		}
		bytes += dp.Memory.ModelBytes()
	}
	req := sched.Request[*servedModel]{Model: name, Bytes: bytes, Placement: "cpu",
		Load: func(ctx context.Context) (*servedModel, int64, error) {
			sm, n, err := loadServed(ctx, path, draft, b.session, b.parallel, bytes)
			if sm != nil {
				sm.baseBytes = bytes - mem.KVCacheBytes - mem.ComputeBytes
				sm.plannedKV, sm.computeBytes = mem.KVCacheBytes, mem.ComputeBytes
			}
			return sm, n, err
		}}
	if keep != nil {
		req.KeepAlive = sched.Keep(*keep)
	}
	return b.res.Acquire(ctx, req)
}

// loadServed loads a model and checks its tokenizer, so a broken
// vocabulary fails the load rather than every request. With parallel > 1
// it starts the model's batcher: continuous batching, where a new request
// joins the decode loop at the next step and a finished one leaves it.
//
// bytes is the plan's prediction of the model's own memory (weights, KV
// cache, arena; not the process's base), which the residency budget counts.
func loadServed(ctx context.Context, path, draft string, opts model.SessionOptions, parallel int, bytes int64) (*servedModel, int64, error) {
	t, d, err := engine.LoadTextDraft(ctx, path, draft)
	if err != nil {
		return nil, 0, err
	}
	if _, err := t.Tokenizer(); err != nil {
		t.Close()
		if d != nil {
			d.Close()
		}
		return nil, 0, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	_, terr := t.File.Meta.String(chat.KeyTemplate)
	sm := &servedModel{text: t, template: terr == nil, cache: engine.NewSessionCache(1), draft: d}
	if d != nil {
		sm.draftKept = engine.NewSessionCache(1)
	}
	if parallel > 1 {
		sm.batch = engine.NewBatcher(t.Model, opts, parallel)
	}
	return sm, bytes, nil
}

// admit is plan → load for a request of model name with its context,
// batch and threads (0: the server's): it plans the model with them,
// admits the job and makes the model resident, returning the lease, the
// session options, the plan and the time the load took.
func (b *serveBackend) admit(ctx context.Context, name string, numCtx, numBatch, numThread int, keep *time.Duration) (
	*sched.Lease[*servedModel], model.SessionOptions, *plan.Plan, time.Duration, error) {
	opts := b.session
	name, path, err := b.lookup(name)
	if err != nil {
		return nil, opts, nil, 0, err
	}
	name, path = b.resident(name, path)
	if numCtx > 0 {
		opts.CtxLen = numCtx
	}
	if numBatch > 0 {
		opts.Batch = numBatch
	}
	if numThread > 0 {
		opts.Threads = numThread
	}
	p, err := b.planFor(path, opts, b.parallel, "")
	if err != nil {
		return nil, opts, nil, 0, err
	}
	if err := plan.AdmitJob(ctx, p, b.budget); err != nil {
		return nil, opts, nil, 0, err
	}
	t0 := time.Now()
	lease, err := b.acquire(ctx, name, path, p.Memory, keep)
	if err != nil {
		return nil, opts, nil, 0, err
	}
	if b.metrics != nil {
		b.metrics.SetModelResident(name, lease.Value().text.File.TensorBytes())
	}
	return lease, opts, p, time.Since(t0), nil
}

// textRequest is the engine's request for req on model sm.
func textRequest(req *server.GenerateRequest, sm *servedModel, opts model.SessionOptions) engine.TextRequest {
	treq := engine.TextRequest{Prompt: req.Prompt, PromptIDs: req.PromptIDs, System: req.System, Sampling: serveSampling(req.Options),
		MaxTokens: max(req.Options.NumPredict, 0), Stops: req.Options.Stop, Session: opts, Format: req.Options.Format,
		Logprobs: req.Options.Logprobs, TopLogprobs: req.Options.TopLogprobs,
		PromptLogprobs: req.Options.PromptLogprobs, NoGenerate: req.Options.NoGenerate,
		// A prompt goes through the template only when the model has one
		// of its own and the client did not ask for raw: base models (no
		// template) continue the text as given.
		Chat: !req.Raw && sm.template}
	for _, m := range req.Messages {
		msg := chat.Message{Role: m.Role, Content: m.Content, ReasoningContent: m.Thinking, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: c.ID, Type: "function",
				Function: chat.ToolFunction{Name: c.Name, Arguments: c.Arguments}})
		}
		treq.Messages = append(treq.Messages, msg)
	}
	treq.Tools = req.Tools
	// A reasoning model's thinking is kept apart from the answer in replies
	// rendered with its template (raw completions stay raw).
	treq.Think, treq.Effort, treq.SplitThinking = req.Options.Think, req.Options.Effort, treq.Chat || len(treq.Messages) > 0
	if !treq.Chat && len(treq.Messages) == 0 && req.System != "" {
		treq.Prompt = req.System + "\n\n" + req.Prompt
	}
	if f := req.FIM; f != nil {
		// Fill in the middle: the prompt is the code before the cursor, in
		// the vocabulary's FIM tokens, not the chat template.
		treq.FIM = &engine.FIM{Suffix: f.Suffix}
		for _, file := range f.Files {
			treq.FIM.Files = append(treq.FIM.Files, engine.FIMFile{Name: file.Name, Text: file.Text})
		}
		treq.Chat, treq.SplitThinking, treq.Prompt = false, false, req.Prompt
	}
	return treq
}

// CountTokens is plan → load → encode: the prompt's tokens, as a
// generation of req would evaluate them.
func (b *serveBackend) CountTokens(ctx context.Context, req *server.GenerateRequest) (int, error) {
	o := req.Options
	lease, opts, _, _, err := b.admit(ctx, req.Model, o.NumCtx, o.NumBatch, o.NumThread, req.KeepAlive)
	if err != nil {
		return 0, err
	}
	defer lease.Release()
	sm := lease.Value()
	r, err := sm.text.Prepare(ctx, textRequest(req, sm, opts))
	if err != nil {
		return 0, err
	}
	return len(r.Prompt), nil
}

// header opens a model's file for what its metadata holds (tokenizer,
// chat template), without loading its weights.
func (b *serveBackend) header(name string) (*gguf.File, error) {
	_, path, err := b.lookup(name)
	if err != nil {
		return nil, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	return f, nil
}

// Tokenize is the encode stage alone: the model's tokenizer, from its
// file's metadata.
func (b *serveBackend) Tokenize(ctx context.Context, model, text string, addSpecial, parseSpecial bool) ([]server.TokenPiece, error) {
	f, err := b.header(model)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	ids, err := tok.Encode(text, addSpecial, parseSpecial)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	out := make([]server.TokenPiece, len(ids))
	for i, id := range ids {
		out[i] = server.TokenPiece{ID: id, Bytes: []byte(tok.Piece(id))}
	}
	return out, nil
}

// Detokenize is the decode stage alone; an id outside the vocabulary is
// an error that says its size.
func (b *serveBackend) Detokenize(ctx context.Context, model string, ids []int) (string, error) {
	f, err := b.header(model)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return "", pipeline.Wrap(pipeline.StageDecode, err, "")
	}
	for i, id := range ids {
		if id < 0 || id >= tok.VocabSize() {
			return "", server.BadRequest(pipeline.Errorf(pipeline.StageDecode, "", "token %d (number %d) is outside the vocabulary of %d", id, i+1, tok.VocabSize()))
		}
	}
	return tok.DecodeSpecial(ids), nil
}

// RenderPrompt is the chat template's part of the encode stage.
func (b *serveBackend) RenderPrompt(ctx context.Context, req *server.GenerateRequest) (string, error) {
	f, err := b.header(req.Model)
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, terr := f.Meta.String(chat.KeyTemplate)
	treq := textRequest(req, &servedModel{template: terr == nil}, model.SessionOptions{})
	prompt, _, err := engine.RenderPrompt(f, &treq)
	return prompt, err
}

// Generate is plan → load → encode → prefill → generate.
func (b *serveBackend) Generate(ctx context.Context, req *server.GenerateRequest) (*server.Result, error) {
	o := req.Options
	lease, opts, p, load, err := b.admit(ctx, req.Model, o.NumCtx, o.NumBatch, o.NumThread, req.KeepAlive)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	sm := lease.Value()
	treq := textRequest(req, sm, opts)
	// The generate stage reports the plan's roofline, so explain places
	// the measured rate against this machine's memory bandwidth.
	treq.Roofline, treq.Limiter = generateRoofline(p, sm.text.Model.WeightBytes(), opts.Threads)
	if sm.batch == nil {
		treq.Cache = sm.cache
	}
	res, err := b.generate(ctx, sm, treq, req.Options.NumCtx)
	if treq.Cache != nil && sm.cache.Len() > 0 {
		// The kept session is this request's (the last one put; with
		// requests of other contexts in flight at once, the last to end).
		kept := p.Memory.KVCacheBytes + p.Memory.ComputeBytes
		lease.Resize(sm.baseBytes+kept, fmt.Sprintf("keeps the last request's session for prompt caching: its KV cache for %d positions and buffers, %s",
			opts.Fill(sm.text.Model.Config()).CtxLen, plan.FormatBytes(kept)))
	}
	if sm.batch != nil {
		// The batcher keeps up to --parallel finished sessions, each of
		// its request's context: counted when they hold more than the
		// load planned for.
		n, kv := sm.batch.Kept()
		lease.Resize(sm.baseBytes+sm.computeBytes+max(kv, sm.plannedKV), fmt.Sprintf(
			"keeps %d finished requests' sessions for prompt caching: KV caches of %s (the load planned %s for %d)",
			n, plan.FormatBytes(kv), plan.FormatBytes(sm.plannedKV), b.parallel))
	}
	if err != nil {
		return nil, err
	}
	reason := "stop"
	if res.StopReason == engine.StopLength {
		reason = "length"
	}
	n := len(res.Tokens)
	if res.StopReason == engine.StopEOG && n > 0 {
		n-- // the end-of-generation token is not part of the answer
	}
	out := &server.Result{Text: res.Text, PromptTokens: res.PromptTokens, CachedTokens: res.CachedTokens, Tokens: n, DoneReason: reason,
		LoadDuration: load, PromptDuration: res.EncodeTime + res.PrefillTime, EvalDuration: res.GenerateTime, Logprobs: res.Logprobs,
		Thinking: res.Thinking, StopSequence: res.StopText, PromptLogprobs: res.PromptLogprobs}
	out.Text, out.ToolCalls = replyCalls(req, res)
	return out, nil
}

// replyCalls is a reply's content and the calls it made to the functions
// req offered: those its own format carried (a harmony model's messages to
// functions.NAME, parsed as it was generated), else those written in its
// text (chat.ParseToolCalls), which are cut out of the content. Calls of
// functions not offered are not calls; without tools there are none.
func replyCalls(req *server.GenerateRequest, res *engine.Result) (string, []server.ToolCall) {
	if len(req.Tools) == 0 || req.ToolChoice == server.ToolChoiceNone {
		return res.Text, nil
	}
	var out []server.ToolCall
	for _, c := range res.ToolCalls {
		if slices.Contains(req.ToolNames, c.Function.Name) {
			out = append(out, server.ToolCall{ID: fmt.Sprintf("call_%d", len(out)), Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	if len(out) > 0 {
		return res.Text, out
	}
	content, calls := chat.ParseToolCalls(res.Text, req.ToolNames)
	if len(calls) == 0 {
		return res.Text, nil
	}
	for _, c := range calls {
		out = append(out, server.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return content, out
}

// Pull downloads a model into the store (pipeline stage load, its bytes
// as progress at most every 200 ms); a model the store holds already, by
// name or by the reference, is not downloaded again.
func (b *serveBackend) Pull(ctx context.Context, ref string) (string, error) {
	tr := pipeline.TraceFrom(ctx)
	if b.store == nil {
		return "", pipeline.Errorf(pipeline.StageLoad, "start serve with a glassbox home it can write", "this server has no model store to pull into")
	}
	if e, err := b.store.Find(ref); err == nil {
		tr.OnStageSkipped(pipeline.StageLoad, fmt.Sprintf("already in the store as %s (sha256 %s)", e.Name, e.SHA256))
		return e.Name, nil
	}
	tr.OnStageStart(pipeline.StageLoad)
	var last time.Time
	e, err := b.store.Pull(ctx, ref, store.PullOptions{
		Progress: func(done, total int64) {
			if now := time.Now(); now.Sub(last) >= 200*time.Millisecond || done == total {
				last = now
				tr.OnProgress(pipeline.StageLoad, done, total)
			}
		},
		Logf: func(format string, a ...any) { tr.OnWarning("pull", fmt.Sprintf(format, a...)) },
	})
	if err != nil {
		return "", pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	if e, err = keepRunnable(b.store, e, func(m string) { tr.OnWarning("pull", m) }); err != nil {
		return "", pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	tr.OnStageDone(pipeline.StageLoad, pipeline.StageStats{Bytes: e.Bytes,
		Note: fmt.Sprintf("downloaded %s into the store as %s, sha256 %s", e.Source, e.Name, e.SHA256)})
	return e.Name, nil
}

// Copy stores model src again as dst (a hard link where the file system
// allows); an existing dst is an error. A copy is a model made from src
// with nothing of its own: the same file, src's profile, and src's
// residency (resident).
func (b *serveBackend) Copy(ctx context.Context, src, dst string) error {
	return b.Create(ctx, &server.CreateRequest{Name: dst, ModelProfile: server.ModelProfile{From: src}})
}

// Create stores model req.From again as req.Name (a hard link where the
// file system allows), with req's profile laid over the one From was made
// with: Ollama's create.
func (b *serveBackend) Create(ctx context.Context, req *server.CreateRequest) error {
	if b.store == nil {
		return pipeline.Errorf(pipeline.StageLoad, "start serve with a glassbox home it can write", "this server has no model store to create models in")
	}
	if len(req.Files) > 0 {
		return b.createFromBlob(req)
	}
	from, path, err := b.lookup(req.From)
	if err != nil {
		return err
	}
	if _, ok := b.files[req.Name]; ok {
		return server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "model %q already exists (a file given to serve)", req.Name))
	}
	var base store.Profile
	var sum string
	var size int64
	if e, err := b.store.Find(from); err == nil && e.Path == path {
		base, sum, size = e.Profile, e.SHA256, e.Bytes
	}
	p := store.Profile{System: req.System, Parameters: req.Parameters, License: req.License}.Over(base)
	if _, err := b.store.Create(req.Name, from, path, sum, size, p); err != nil {
		return server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "create %s from %s: %w", req.Name, from, err))
	}
	return nil
}

// createFromBlob stores an uploaded GGUF file (one blob) as req.Name with
// req's profile.
func (b *serveBackend) createFromBlob(req *server.CreateRequest) error {
	bad := func(err error) error {
		return server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "create %s: %w", req.Name, err))
	}
	for name, digest := range req.Files { // one, server.ollamaCreate checked
		path, err := b.store.BlobPath(digest)
		if err != nil {
			return bad(err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			return bad(fmt.Errorf("%s: %w", name, err))
		}
		f.Close()
		st, err := os.Stat(path)
		if err != nil {
			return bad(err)
		}
		p := store.Profile{System: req.System, Parameters: req.Parameters, License: req.License}
		if _, err := b.store.Create(req.Name, "", path, strings.TrimPrefix(digest, "sha256:"), st.Size(), p); err != nil {
			return bad(err)
		}
		// The model holds the bytes now: rm frees them.
		if err := b.store.DropBlob(digest); err != nil {
			return bad(err)
		}
	}
	return nil
}

// HasBlob reports whether the store holds an uploaded blob.
func (b *serveBackend) HasBlob(ctx context.Context, digest string) (bool, error) {
	if b.store == nil {
		return false, nil
	}
	_, err := b.store.BlobPath(digest)
	return err == nil, nil
}

// PutBlob stores an upload in the store, checked against its digest.
func (b *serveBackend) PutBlob(ctx context.Context, digest string, r io.Reader) error {
	if b.store == nil {
		return pipeline.Errorf(pipeline.StageLoad, "start serve with a glassbox home it can write", "this server has no model store to upload into")
	}
	if _, err := b.store.PutBlob(digest, r); err != nil {
		return server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "upload: %w", err))
	}
	return nil
}

// Profile reports what a store model was made with (nil for the others).
func (b *serveBackend) Profile(ctx context.Context, name string) (*server.ModelProfile, error) {
	if _, ok := b.files[name]; ok || b.store == nil {
		return nil, nil
	}
	e, err := b.store.Find(name)
	if err != nil || !e.HasProfile() {
		return nil, nil
	}
	from := e.From
	if from == "" {
		from = e.Ref // pulled from Ollama's registry with its parameters
	}
	return &server.ModelProfile{From: from, System: e.System, Parameters: e.Parameters, License: e.License}, nil
}

// Delete unloads a store model and removes it from the store; a --model
// file is not the server's to delete.
func (b *serveBackend) Delete(ctx context.Context, name string) error {
	name, _, err := b.lookup(name)
	if err != nil {
		return err
	}
	if _, ok := b.files[name]; ok {
		return pipeline.Errorf(pipeline.StageLoad, "remove the --model flag instead", "model %q is a file given to serve, not in the store", name)
	}
	if err := b.res.Unload(name); err != nil && !errors.Is(err, sched.ErrNotResident) {
		return err
	}
	if err := b.store.Remove(name); err != nil {
		return pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	return nil
}

// Embed is plan → load → encode → prefill, pooling the final hidden
// states of each input (engine.Text.Embed) in a session of its own.
func (b *serveBackend) Embed(ctx context.Context, req *server.EmbedRequest) (*server.EmbedResult, error) {
	lease, opts, _, load, err := b.admit(ctx, req.Model, req.NumCtx, req.NumBatch, req.NumThread, req.KeepAlive)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	res, err := lease.Value().text.Embed(ctx, engine.EmbedRequest{Inputs: req.Input, InputIDs: req.InputIDs, Pooling: req.Pooling,
		Truncate: req.Truncate, Normalize: req.Normalize, Dimensions: req.Dimensions, Session: opts})
	if err != nil {
		return nil, err
	}
	return &server.EmbedResult{Embeddings: res.Embeddings, PromptTokens: res.PromptTokens(), Truncated: res.Truncated,
		Pooling: res.Pooling, LoadDuration: load, EvalDuration: res.EncodeTime + res.EvalTime}, nil
}

// generate runs treq alone (engine.Text) or, with --parallel > 1, through
// the model's batcher so parallel streams share each decode step.
func (b *serveBackend) generate(ctx context.Context, sm *servedModel, treq engine.TextRequest, numCtx int) (*engine.Result, error) {
	if sm.batch == nil {
		if sm.draft != nil {
			treq.Draft, treq.DraftMax, treq.DraftCache = sm.draft, b.draftMax, sm.draftKept
		}
		return sm.text.Generate(ctx, treq)
	}
	if treq.PromptLogprobs || treq.NoGenerate {
		return nil, server.BadRequest(pipeline.Errorf(pipeline.StagePrefill, "start serve with --parallel 1 to score prompts",
			"scoring a prompt (echo with logprobs, or max_tokens 0) is done one generation at a time; this server batches %d", b.parallel))
	}
	t0 := time.Now()
	r, err := sm.text.Prepare(ctx, treq)
	if err != nil {
		return nil, err
	}
	encode := time.Since(t0)
	res, err := sm.batch.Generate(ctx, r, numCtx)
	if err != nil {
		return nil, err
	}
	res.EncodeTime = encode
	pipeline.TraceFrom(ctx).OnStageSkipped(pipeline.StageDecode, "text was decoded as it was generated")
	return res, nil
}

func serveSampling(o server.Options) sample.Params {
	seed := rand.Uint64() >> 1
	if o.Seed != nil {
		seed = *o.Seed
	}
	return sample.Params{Temperature: o.Temperature, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP,
		RepeatPenalty: o.RepeatPenalty, FreqPenalty: o.FrequencyPenalty, PresencePenalty: o.PresencePenalty,
		PenaltyLastN: o.RepeatLastN, Seed: seed, LogitBias: o.LogitBias}
}

// names lists every model the server knows: --model files, then the store.
func (b *serveBackend) names() (map[string]string, error) {
	out := map[string]string{}
	if b.store != nil {
		entries, err := b.store.List()
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
		}
		for _, e := range entries {
			out[e.Name] = e.Path
		}
	}
	for n, p := range b.files {
		out[n] = p
	}
	return out, nil
}

func (b *serveBackend) Models(ctx context.Context) ([]server.ModelInfo, error) {
	names, err := b.names()
	if err != nil {
		return nil, err
	}
	out := make([]server.ModelInfo, 0, len(names))
	for name, path := range names {
		info, err := b.info(name, path)
		if err != nil {
			continue // a broken file is reported when it is used
		}
		out = append(out, *info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// serveVerdicts caches plan verdicts by path and modification time.
var serveVerdicts sync.Map

func (b *serveBackend) info(name, path string) (*server.ModelInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum := modelinfo.Summarize(f, false)
	mi := &server.ModelInfo{Name: name, Path: path, Size: st.Size(), Modified: st.ModTime().UTC(),
		Family: sum.Architecture, ParameterSize: humanCount(sum.Parameters), Quantization: sum.FileType}
	if mi.Quantization == "" && len(sum.Quantization) > 0 {
		mi.Quantization = sum.Quantization[0].Type
	}
	if sum.ContextLength != nil {
		mi.ContextLength = int(*sum.ContextLength)
	}
	if _, file := b.files[name]; !file && b.store != nil {
		if e, err := b.store.Get(name); err == nil {
			mi.Parent = e.From
		}
	}
	key := fmt.Sprintf("%s@%d", path, st.ModTime().UnixNano())
	if v, ok := serveVerdicts.Load(key); ok {
		mi.Verdict = v.(string)
	} else if p, err := plan.ForModel(f, plan.Options{Ctx: b.session.CtxLen, Batch: b.session.Batch}, b.dev); err == nil {
		mi.Verdict = p.Verdict
		serveVerdicts.Store(key, p.Verdict)
	}
	return mi, nil
}

func (b *serveBackend) Show(ctx context.Context, name string) (*server.ModelDetail, error) {
	path, err := b.resolve(name)
	if err != nil {
		return nil, err
	}
	info, err := b.info(name, path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	defer f.Close()
	d := &server.ModelDetail{ModelInfo: *info,
		Parameters: "temperature 0.8\ntop_k 40\ntop_p 0.9\nrepeat_penalty 1.1", Metadata: map[string]any{}}
	if t, err := f.Meta.String(chat.KeyTemplate); err == nil {
		d.Template = t
	}
	d.Capabilities = capabilities(f, d.Template)
	for _, kv := range f.Meta.KVs {
		if kv.Value.Len() > 16 {
			continue // vocabularies and merges, as Ollama leaves out without verbose
		}
		if v := serveMetaValue(kv.Value.Any()); v != nil {
			d.Metadata[kv.Key] = v
		}
	}
	return d, nil
}

// capabilities is what Ollama's /api/show lists for a model, by its rules:
// a file that names a pooling (<arch>.pooling_type, made for embeddings)
// is an "embedding" model; any other "completion", with "tools" when its
// chat template takes them and "thinking" when it writes a <think> block,
// has Qwen3's switch or is in the harmony format (gpt-oss's channels).
// (Every model here answers the embeddings endpoints; Ollama lists only
// those made for it.)
func capabilities(f *gguf.File, template string) []string {
	arch, _ := f.Meta.String("general.architecture")
	if n, err := f.Meta.Int(arch + ".pooling_type"); err == nil && n > 0 {
		return []string{"embedding"}
	}
	caps := []string{"completion"}
	if strings.Contains(template, "tools") {
		caps = append(caps, "tools")
	}
	if strings.Contains(template, "<think>") || strings.Contains(template, "enable_thinking") || chat.IsHarmony(template) {
		caps = append(caps, "thinking")
	}
	return caps
}

// serveMetaValue keeps scalar metadata and drops large arrays (vocabularies),
// as Ollama's /api/show does without verbose.
func serveMetaValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 256 {
		return nil
	}
	return json.RawMessage(b)
}

func (b *serveBackend) Running(ctx context.Context) ([]server.RunningModel, error) {
	names, _ := b.names()
	var out []server.RunningModel
	for _, st := range b.res.List() {
		rm := server.RunningModel{ModelInfo: server.ModelInfo{Name: st.Model}, Bytes: st.Bytes, InUse: st.InUse,
			Placement: st.Placement, State: st.State, KeepAlive: st.KeepAlive, ExpiresAt: st.ExpiresAt}
		if p, ok := names[st.Model]; ok {
			if info, err := b.info(st.Model, p); err == nil {
				rm.ModelInfo = *info
			}
		}
		out = append(out, rm)
	}
	return out, nil
}

func (b *serveBackend) Load(ctx context.Context, name string, keep *time.Duration) error {
	name, path, err := b.lookup(name)
	if err != nil {
		return err
	}
	name, path = b.resident(name, path)
	p, err := b.planFor(path, b.session, b.parallel, "")
	if err != nil {
		return err
	}
	if err := plan.Admit(p, b.budget); err != nil {
		return err
	}
	lease, err := b.acquire(ctx, name, path, p.Memory, keep)
	if err != nil {
		return err
	}
	if b.metrics != nil {
		b.metrics.SetModelResident(name, lease.Value().text.File.TensorBytes())
	}
	lease.Release()
	return nil
}

func (b *serveBackend) Unload(ctx context.Context, name string) error {
	name, path, err := b.lookup(name)
	if err != nil {
		return err
	}
	name, _ = b.resident(name, path)
	err = b.res.Unload(name)
	if errors.Is(err, sched.ErrNotResident) {
		return nil // unloading a model that is not loaded is a no-op, as in Ollama
	}
	return err
}

func (b *serveBackend) Plan(ctx context.Context, req *server.PlanRequest) (json.RawMessage, error) {
	path, err := b.resolve(req.Model)
	if err != nil {
		return nil, err
	}
	dev := b.device()
	if req.Device != "" {
		if dev, err = planDevice(req.Device, false); err != nil {
			return nil, pipeline.Wrap(pipeline.StagePlan, err, "")
		}
	}
	opts := b.session
	if req.Ctx > 0 {
		opts.CtxLen = req.Ctx
	}
	if req.Batch > 0 {
		opts.Batch = req.Batch
	}
	s, err := shape(path)
	if err != nil {
		return nil, err
	}
	p, err := plan.ForShape(s, plan.Options{Ctx: opts.CtxLen, Batch: opts.Batch, Parallel: req.Parallel,
		KV: strings.ToLower(req.KV)}, dev)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	return json.Marshal(p)
}
