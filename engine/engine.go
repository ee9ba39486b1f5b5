package engine

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sample"
)

// Sampler picks the next token from the logits of the last position, given
// the sequence so far (for penalties). *sample.Sampler implements it.
type Sampler interface {
	Sample(logits []float32, history []int) int
}

// Constraint limits the tokens a generation may pick (sample.JSON: one
// JSON object). Mask sets the logits of the tokens that may not come next
// to −Inf and reports whether any may; Accept advances past the pick.
type Constraint interface {
	Mask(logits []float32) bool
	Accept(id int)
}

// TextDecoder turns ids into text incrementally without splitting a UTF-8
// character; the tokenizer's stream decoder implements it.
type TextDecoder interface {
	Add(id int) string
	Flush() string
}

// Request is one generation.
type Request struct {
	Prompt    []int          // token ids, BOS included if wanted
	MaxTokens int            // stop after this many tokens; ≤ 0: until EOG or the context is full
	Sampler   Sampler        // nil: greedy (argmax, lowest id wins a tie)
	IsEOG     func(int) bool // nil: never stop on a token
	Decoder   TextDecoder    // nil: no text (ids only)
	Stops     []string       // stop strings (need Decoder); cut from the output
	// Constraint, when set, masks the logits before every pick (the
	// sampler sees only the tokens it allows).
	Constraint Constraint
	// OnToken receives each generated token and the text it releases
	// (empty while held back). Returning an error stops generation.
	OnToken func(id int, text string) error
	// Logprobs asks for each generated token's log-probability under the
	// model and its TopLogprobs (at most MaxTopLogprobs) most likely
	// alternatives (api.Logprob), on the token events and in
	// Result.Logprobs, their texts from Piece (nil: none).
	Logprobs    bool
	TopLogprobs int
	Piece       func(id int) string
	// SplitThinking separates a reasoning model's thinking (a <think>
	// block at the start of the reply; ThinkingOpen: the prompt opened it)
	// from its answer: the token events carry it as Thinking, OnToken and
	// Result.Text get the answer only, Result.Thinking the thinking.
	SplitThinking bool
	ThinkingOpen  bool
	// Harmony, with SplitThinking, reads the reply in OpenAI's harmony
	// format (gpt-oss; harmony.go) instead of <think> tags: the analysis
	// channel is the thinking, the final channel (and commentary without a
	// recipient) the answer, and a message to functions.NAME a tool call
	// (Result.ToolCalls). HarmonyOpen is the header of a message the
	// prompt left open ("" for none); HideThinking drops the thinking
	// (the model cannot stop thinking, but the caller did not want it).
	Harmony      bool
	HarmonyOpen  string
	HideThinking bool
	// WeightBytes is what one decode step reads (Model.WeightBytes); the
	// generate stage reports WeightBytes per token as the bytes it read,
	// from which 'glassbox explain' derives the roofline. 0: unknown.
	WeightBytes int64
	// Roofline is the best generation rate this machine allows (tokens/s:
	// memory bandwidth ÷ bytes read per token, from the planner) and
	// Limiter what bounds it ("memory bandwidth (19.8 GB/s, measured)",
	// "compute"); the generate stage reports both so 'glassbox explain'
	// places the measured rate against them. 0: unknown.
	Roofline float64
	Limiter  string
	// Draft, when set, makes the decode loop speculative (see Draft).
	Draft *Draft
	// PromptLogprobs asks for each prompt token's log-probability given
	// the tokens before it, and its TopLogprobs most likely alternatives
	// (Result.PromptLogprobs): the prefill keeps every row's logits. The
	// whole prompt is evaluated for it (a cache's start is not reused).
	PromptLogprobs bool
	// NoGenerate stops after the prefill: the prompt is evaluated (and
	// scored, with PromptLogprobs), nothing is generated.
	NoGenerate bool
}

// Draft is a draft model's session for speculative decoding (Leviathan et
// al., "Fast Inference from Transformers via Speculative Decoding", ICML
// 2023): after each token the model picks, the draft proposes up to Max
// more, each its greedy choice, stopping early where its choice's
// probability is below MinProb; the model evaluates its pick and the
// proposals in one pass (the cost of about one token when decoding reads
// the weights once per pass) and picks at each of their positions in
// turn, keeping proposals while its picks equal them. Every token is the
// model's own pick from its own logits after the same tokens, as one by
// one — the sampler, constraint and stop strings see the same sequence —
// so the output is the one plain decoding gives: bit for bit where a
// batched pass gives each row the logits a single pass does (quantized
// weights), within rounding otherwise.
type Draft struct {
	Session     model.Session // fresh, of a model whose vocabulary is the model's
	Vocab       int
	Max         int     // tokens proposed per step, ≥ 1
	MinProb     float64 // 0: always propose Max
	WeightBytes int64   // what one of its passes reads
	// Cached is how many leading prompt tokens the session's KV cache
	// holds already (a SessionCache's), not evaluated again.
	Cached int
	// kept is set when the run ends: the ids the session's KV cache then
	// holds at positions 0…, for a SessionCache.
	kept []int
}

// Stop reasons.
const (
	StopEOG    = "eog"    // the model produced an end-of-generation token
	StopString = "stop"   // a stop string appeared in the text
	StopLength = "length" // max tokens reached, or the context is full
)

// Result is what a generation produced and how long each part took.
type Result struct {
	Tokens       []int  // generated ids (the EOG token included when it ended the run)
	Text         string // generated text, stop string and everything after it removed
	StopReason   string
	StopDetail   string // human sentence with the numbers, e.g. "context full: 256 of 256 positions"
	StopText     string // the stop string that ended it (StopString)
	PromptTokens int
	// CachedTokens is how many leading prompt tokens were already in the
	// session's KV cache (a SessionCache's prompt caching): not evaluated,
	// not in PrefillTime.
	CachedTokens int
	EncodeTime   time.Duration // Text.Generate only
	PrefillTime  time.Duration
	GenerateTime time.Duration // from the first sampled token to the end
	KVBytes      int64         // the session's KV cache (Text.Generate only)
	KVType       string        // its type: f16, q8_0 or f32 (Text.Generate only)
	ArenaBytes   int64         // the session's activation buffers (Text.Generate only)
	// Logprobs holds each generated token's log-probability, with
	// Request.Logprobs.
	Logprobs []api.Logprob
	// Thinking is the reasoning separated from Text (Request.SplitThinking).
	Thinking string
	// ToolCalls are the calls a reply made in a format of its own
	// (Request.Harmony), numbered call_0, call_1, …; nil otherwise (calls
	// written as text are for chat.ParseToolCalls to find in Text).
	ToolCalls []chat.ToolCall
	// Drafted and Accepted count a speculative run's proposals and those
	// the model's picks kept; Passes its model's decode passes.
	Drafted, Accepted, Passes int
	DraftCached               int // prompt tokens the draft's kept session held
	// PromptLogprobs holds, with Request.PromptLogprobs, an entry per
	// prompt token: its piece and, from the second on, its log-probability
	// given the tokens before it and the most likely alternatives there
	// (the first has nothing before it: Logprob 0, no alternatives).
	PromptLogprobs []api.Logprob
}

// MaxTopLogprobs is the most alternatives a token's logprob lists
// (OpenAI's limit).
const MaxTopLogprobs = 20

// impossibleLogprob stands for a log-probability of −Inf, which JSON
// cannot carry (OpenAI's value for it).
const impossibleLogprob = -9999

// SpeculationNote says how a speculative run went: the proposals the
// model kept, and the tokens each of its passes gave.
func (r *Result) SpeculationNote() string {
	pct, per := 0.0, 0.0
	if r.Drafted > 0 {
		pct = 100 * float64(r.Accepted) / float64(r.Drafted)
	}
	if r.Passes > 0 {
		per = float64(len(r.Tokens)-1) / float64(r.Passes)
	}
	note := fmt.Sprintf("speculative: %d of %d drafted tokens kept (%.0f%%), %.2f tokens per pass of the model", r.Accepted, r.Drafted, pct, per)
	if r.DraftCached > 0 {
		note += fmt.Sprintf(", the draft's first %d prompt tokens from its cache", r.DraftCached)
	}
	return note
}

// DecodeSteps is how many decode passes GenerateTime holds: the first
// generated token is sampled from the prompt's last pass, and the last
// one is never evaluated.
func (r *Result) DecodeSteps() int { return max(0, len(r.Tokens)-1) }

// DecodeRate is decode passes per second (llama.cpp's "eval" rate; 0
// without one): tokens ÷ GenerateTime would count the first token, whose
// pass belongs to the prompt, and read a one-token reply as thousands of
// tokens/s.
func (r *Result) DecodeRate() float64 {
	if r.GenerateTime <= 0 || r.DecodeSteps() == 0 {
		return 0
	}
	return float64(r.DecodeSteps()) / r.GenerateTime.Seconds()
}

// Generate runs req on s, which must be fresh (an empty KV cache). The
// generated tokens are streamed through req.OnToken and the trace in ctx.
func Generate(ctx context.Context, s model.Session, vocab int, req Request) (*Result, error) {
	_, res, err := generate(ctx, s, vocab, req, 0)
	return res, err
}

// generate is Generate on a session whose cache already holds the first
// cached prompt tokens (0 ≤ cached < len(req.Prompt)); it also returns the
// sequence (nil if it never started), whose evaluated ids the session's
// cache then holds.
func generate(ctx context.Context, s model.Session, vocab int, req Request, cached int) (*seq, *Result, error) {
	q, err := prefill(ctx, s, vocab, req, cached)
	if err != nil {
		return q, nil, err
	}
	if req.NoGenerate {
		q.res.StopReason, q.res.StopDetail = StopLength, "no tokens were asked for: the prompt was evaluated only"
		q.finish()
		return q, q.res, nil
	}
	if req.Draft != nil {
		err := q.speculate()
		if err == nil {
			q.finish()
		}
		return q, q.res, err
	}
	for {
		done, err := q.next()
		if err != nil {
			return q, q.res, err
		}
		if done {
			break
		}
		if err := s.Forward(ctx, q.history[q.pos:q.pos+1], q.pos, q.logits); err != nil {
			return q, q.res, pipeline.Wrap(pipeline.StageGenerate, err, "")
		}
		q.pos++
	}
	q.finish()
	return q, q.res, nil
}

// seq is one generation in progress: what the decode loop keeps between
// tokens. It allocates nothing per token beyond what the decoder and the
// callbacks do: history has room for the whole context.
type seq struct {
	ctx     context.Context
	tr      *pipeline.Trace
	req     Request
	s       model.Session
	res     *Result
	history []int     // prompt and generated ids
	logits  []float32 // (vocab) logits of the last evaluated position
	pos     int       // position of the token to evaluate next
	done    int       // prompt tokens evaluated (len(Prompt) once prefilled)
	cached  int       // leading prompt tokens the session's cache held already
	stops   *sample.StopMatcher
	text    []byte
	t0      time.Time // start of the current stage
	threads int       // worker threads that evaluate it (0: its session's)
	// With Request.Logprobs, the step's distribution before the
	// constraint and the sampler change the logits.
	lpLogits []float32
	lpLSE    float64
	lpTop    []int
	lpBuf    sample.LogSumExpBuf
	think    replySplitter // with Request.SplitThinking
	thinking []byte
	// passes and draftPasses count a speculative run's passes of the
	// model and of its draft (Request.Draft).
	passes, draftPasses int
}

// placement is where the sequence runs, for the stage reports.
func (q *seq) placement() string {
	th := q.threads
	if th == 0 {
		th = q.s.Options().Threads
	}
	return fmt.Sprintf("cpu:%d threads", th)
}

// prefill checks that the prompt fits, evaluates it after the cached
// tokens in chunks of the session's batch size (only the last row's
// logits are kept), and starts the generate stage. On a failed chunk it
// returns the sequence with the error (nil if it never started).
func prefill(ctx context.Context, s model.Session, vocab int, req Request, cached int) (*seq, error) {
	q, err := newSeq(ctx, s, vocab, req, cached)
	if err != nil {
		return nil, err
	}
	np, batch := len(req.Prompt), s.Options().Batch
	if req.PromptLogprobs {
		return q, q.scorePrompt()
	}
	for q.done < np {
		n := min(batch, np-q.done)
		if err := s.Forward(ctx, req.Prompt[q.done:q.done+n], q.done, q.logits); err != nil {
			return q, pipeline.Wrap(pipeline.StagePrefill, err, "")
		}
		q.prefilled(n)
	}
	return q, nil
}

// promptLogitsBytes bounds the logits a scored prefill keeps at once:
// chunks of fewer rows for larger vocabularies.
const promptLogitsBytes = 64 << 20

// scorePrompt is the prefill with Request.PromptLogprobs: every row's
// logits, from which each next prompt token's log-probability is read
// (the raw distribution: no sampler, bias or format applies to it).
func (q *seq) scorePrompt() error {
	req, s := &q.req, q.s
	np, vocab := len(req.Prompt), len(q.logits)
	rows := max(1, min(s.Options().Batch, promptLogitsBytes/(4*vocab)))
	buf := make([]float32, rows*vocab)
	if q.done == 0 {
		piece := ""
		if req.Piece != nil {
			piece = req.Piece(req.Prompt[0])
		}
		q.res.PromptLogprobs = append(q.res.PromptLogprobs, api.Logprob{Piece: piece})
	}
	for q.done < np {
		n := min(rows, np-q.done)
		out := buf[:n*vocab]
		if err := s.Forward(q.ctx, req.Prompt[q.done:q.done+n], q.done, out); err != nil {
			return pipeline.Wrap(pipeline.StagePrefill, err, "")
		}
		for j := range n {
			next := q.done + j + 1
			if next >= np {
				break
			}
			q.lpLogits = out[j*vocab : (j+1)*vocab]
			q.lpLSE = q.lpBuf.LogSumExp(q.lpLogits)
			q.lpTop = sample.TopIDs(q.lpLogits, req.TopLogprobs, q.lpTop)
			q.res.PromptLogprobs = append(q.res.PromptLogprobs, q.logprob(req.Prompt[next]))
		}
		copy(q.logits, out[(n-1)*vocab:])
		q.prefilled(n)
	}
	q.lpLogits = nil // the generation's own copies
	return nil
}

// newSeq checks that the prompt fits s's context and starts the prefill
// stage of a sequence whose prompt is still to be evaluated after the
// cached tokens s's cache holds (q.done = cached < len(req.Prompt)).
func newSeq(ctx context.Context, s model.Session, vocab int, req Request, cached int) (*seq, error) {
	tr := pipeline.TraceFrom(ctx)
	opts := s.Options()
	np := len(req.Prompt)
	if np == 0 {
		return nil, pipeline.Errorf(pipeline.StageEncode, "give a non-empty prompt", "prompt has no tokens")
	}
	if np > opts.CtxLen {
		room := req.MaxTokens
		if room <= 0 {
			room = 256
		}
		// An encode-stage error: the encoded prompt does not fit, before
		// any of it is evaluated.
		return nil, pipeline.Errorf(pipeline.StageEncode, fmt.Sprintf("raise the context to %d (--ctx, num_ctx) or shorten the prompt", np+room),
			"prompt has %d tokens but the context holds %d", np, opts.CtxLen).
			With("tokens", int64(np)).With("ctx", int64(opts.CtxLen))
	}
	cached = max(0, min(cached, np-1))
	q := &seq{ctx: ctx, tr: tr, req: req, s: s, res: &Result{PromptTokens: np, CachedTokens: cached},
		history: make([]int, np, opts.CtxLen+1), logits: make([]float32, vocab), pos: np, done: cached, cached: cached}
	copy(q.history, req.Prompt)
	if len(req.Stops) > 0 {
		q.stops = sample.NewStopMatcher(req.Stops)
	}
	switch {
	case req.SplitThinking && req.Harmony:
		q.think = newHarmonySplitter(req.HarmonyOpen, req.HideThinking)
	case req.SplitThinking:
		q.think = newThinkSplitter(req.ThinkingOpen)
	}
	tr.OnStageStart(pipeline.StagePrefill)
	q.t0 = time.Now()
	return q, nil
}

// evaluated is how many positions of q's history its session's cache
// holds: the prompt tokens evaluated so far, then every token fed back
// (the last generated one never is). A step that failed counts none of
// its rows.
func (q *seq) evaluated() int {
	if q.prefilling() {
		return q.done
	}
	return q.pos
}

// prefilled records that the next n prompt tokens were evaluated (q.logits
// holds the last one's logits once the prompt is done); after the last
// chunk it ends the prefill stage and starts the generate stage.
func (q *seq) prefilled(n int) {
	np := len(q.req.Prompt)
	q.done += n
	// Progress counts the tokens to evaluate (its rate is a speed): not
	// those the cache held.
	q.tr.OnProgress(pipeline.StagePrefill, int64(q.done-q.cached), int64(np-q.cached))
	if q.done < np {
		return
	}
	q.res.PrefillTime = time.Since(q.t0)
	note := ""
	if q.cached > 0 {
		note = fmt.Sprintf("%d of the prompt's %d tokens were in the KV cache already (prompt cache); %d evaluated",
			q.cached, np, np-q.cached)
	}
	q.tr.OnStageDone(pipeline.StagePrefill, pipeline.StageStats{Items: int64(np - q.cached), Cached: int64(q.cached), Unit: "tokens",
		Placement: q.placement(), PeakRSS: plan.PeakRSS(), Note: note})
	q.tr.OnStageStart(pipeline.StageGenerate)
	q.t0 = time.Now()
}

// next samples a token from q.logits, streams its text and decides whether
// the generation ends. When it does not, the caller evaluates
// q.history[q.pos] at q.pos into q.logits and increments q.pos.
func (q *seq) next() (done bool, err error) { return q.accept(q.pick()) }

// pick chooses the next token from q.logits. It touches nothing but q's
// sampler, so the picks of several sequences may run in parallel.
func (q *seq) pick() int {
	if q.req.Logprobs {
		q.lpLogits = append(q.lpLogits[:0], q.logits...)
		q.lpLSE = q.lpBuf.LogSumExp(q.lpLogits)
		q.lpTop = sample.TopIDs(q.lpLogits, q.req.TopLogprobs, q.lpTop)
	}
	if q.req.Constraint != nil && !q.req.Constraint.Mask(q.logits) {
		return -1
	}
	if q.req.Sampler != nil {
		return q.req.Sampler.Sample(q.logits, q.history)
	}
	return greedy(q.logits)
}

// accept is next after the pick: it appends id, streams its text and
// decides whether the generation ends. A pick of −1 is a constraint that
// allowed no token.
func (q *seq) accept(id int) (done bool, err error) {
	req, res := &q.req, q.res
	if id < 0 {
		return true, pipeline.Errorf(pipeline.StageGenerate, "raise the token limit, or drop the format",
			"no token of the vocabulary continues the constrained output after %d tokens", len(res.Tokens))
	}
	if req.Constraint != nil {
		req.Constraint.Accept(id)
	}
	q.history = append(q.history, id)
	res.Tokens = append(res.Tokens, id)
	ctxLen := q.s.Options().CtxLen
	switch {
	case req.IsEOG != nil && req.IsEOG(id):
		res.StopReason, res.StopDetail = StopEOG, fmt.Sprintf("end-of-generation token %d", id)
	case req.MaxTokens > 0 && len(res.Tokens) >= req.MaxTokens:
		res.StopReason, res.StopDetail = StopLength, fmt.Sprintf("reached the maximum of %d tokens", req.MaxTokens)
	case q.pos >= ctxLen:
		res.StopReason, res.StopDetail = StopLength, fmt.Sprintf(
			"context full: %d prompt + %d generated tokens, the context holds %d", len(req.Prompt), len(res.Tokens), ctxLen)
		q.tr.OnWarning("ctx_full", res.StopDetail)
	}
	last := res.StopReason != ""
	piece := ""
	if req.Decoder != nil {
		if res.StopReason != StopEOG {
			piece = req.Decoder.Add(id)
		}
		if last {
			piece += req.Decoder.Flush()
		}
	}
	if q.stops != nil {
		var hit bool
		if piece, hit = q.stops.Push(piece); hit {
			_, s := q.stops.Stopped()
			res.StopReason, res.StopDetail, res.StopText = StopString, fmt.Sprintf("stop string %q", s), s
		} else if last {
			piece += q.stops.Flush()
		}
	}
	var thought string
	if q.think != nil {
		thought, piece = q.think.push(piece)
		if res.StopReason != "" {
			t, a := q.think.flush()
			thought, piece = thought+t, piece+a
		}
		q.thinking = append(q.thinking, thought...)
	}
	q.text = append(q.text, piece...)
	tok := api.Token{ID: id, Text: piece, Thinking: thought}
	if req.Logprobs && res.StopReason != StopEOG { // the end-of-generation token is not part of the reply
		lp := q.logprob(id)
		res.Logprobs = append(res.Logprobs, lp)
		tok.Logprob = &lp
	}
	q.tr.OnTokenInfo(tok)
	if req.OnToken != nil {
		if err := req.OnToken(id, piece); err != nil {
			return true, pipeline.Wrap(pipeline.StageGenerate, err, "")
		}
	}
	q.tr.OnProgress(pipeline.StageGenerate, int64(len(res.Tokens)), int64(max(req.MaxTokens, 0)))
	return res.StopReason != "", nil
}

// logprob is token id's log-probability at the step pick read.
func (q *seq) logprob(id int) api.Logprob {
	alt := func(id int) api.Alt {
		a := api.Alt{ID: id, Logprob: impossibleLogprob}
		if v := float64(q.lpLogits[id]) - q.lpLSE; v > impossibleLogprob {
			a.Logprob = v
		}
		if q.req.Piece != nil {
			a.Piece = q.req.Piece(id)
			if !utf8.ValidString(a.Piece) {
				a.Bytes = []byte(a.Piece)
			}
		}
		return a
	}
	a := alt(id)
	lp := api.Logprob{Piece: a.Piece, Logprob: a.Logprob, Bytes: a.Bytes}
	for _, t := range q.lpTop {
		lp.Top = append(lp.Top, alt(t))
	}
	return lp
}

// finish records the text and timing and ends the generate stage.
func (q *seq) finish() {
	q.res.Text = string(q.text)
	q.res.Thinking = string(q.thinking)
	if h, ok := q.think.(*harmonySplitter); ok {
		q.res.ToolCalls = h.toolCalls()
	}
	q.res.GenerateTime = time.Since(q.t0)
	n := int64(len(q.res.Tokens))
	bytes, note := q.req.WeightBytes*n, q.res.StopDetail
	// The stage counts the answer's tokens, as the result does; an
	// end-of-generation token is flagged instead (its pass counts in the
	// rate).
	items, end := n, q.res.StopReason == StopEOG && n > 0
	if end {
		items--
	}
	if d := q.req.Draft; d != nil {
		q.res.Passes = q.passes
		bytes = q.req.WeightBytes*int64(q.passes) + d.WeightBytes*int64(q.draftPasses)
		note += "; " + q.res.SpeculationNote()
	}
	q.tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{Items: items, EndToken: end, Unit: "tokens", Bytes: bytes,
		Placement: q.placement(), Note: note,
		PeakRSS: plan.PeakRSS(), Roofline: q.req.Roofline, Limiter: q.req.Limiter})
}

// greedy returns the index of the largest logit, the lowest on a tie.
func greedy(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}
