package backend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sample"
	"github.com/glassbox-ai/glassbox/server"
)

// textRequest is the engine's request for req on model sm.
func textRequest(req *server.GenerateRequest, sm *served, opts model.SessionOptions) engine.TextRequest {
	treq := engine.TextRequest{Prompt: req.Prompt, PromptIDs: req.PromptIDs, System: req.System, Sampling: sampling(req.Options),
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

// Generate is plan → load → encode → prefill → generate.
func (b *Backend) Generate(ctx context.Context, req *server.GenerateRequest) (*server.Result, error) {
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
	if b.cfg.Roofline != nil {
		treq.Roofline, treq.Limiter = b.cfg.Roofline(p, sm.text.Model.WeightBytes(), opts.Threads)
	}
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

// generate runs treq alone (engine.Text) or, with Parallel > 1, through
// the model's batcher so parallel streams share each decode step.
func (b *Backend) generate(ctx context.Context, sm *served, treq engine.TextRequest, numCtx int) (*engine.Result, error) {
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

func sampling(o server.Options) sample.Params {
	seed := rand.Uint64() >> 1
	if o.Seed != nil {
		seed = *o.Seed
	}
	return sample.Params{Temperature: o.Temperature, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP,
		RepeatPenalty: o.RepeatPenalty, FreqPenalty: o.FrequencyPenalty, PresencePenalty: o.PresencePenalty,
		PenaltyLastN: o.RepeatLastN, Seed: seed, LogitBias: o.LogitBias}
}
