package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/sample"
)

// Sampler picks the next token from the logits of the last position, given
// the sequence so far (for penalties). *sample.Sampler implements it.
type Sampler interface {
	Sample(logits []float32, history []int) int
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
	// OnToken receives each generated token and the text it releases
	// (empty while held back). Returning an error stops generation.
	OnToken func(id int, text string) error
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
	PromptTokens int
	EncodeTime   time.Duration // Text.Generate only
	PrefillTime  time.Duration
	GenerateTime time.Duration // from the first sampled token to the end
	KVBytes      int64         // the session's KV cache (Text.Generate only)
	ArenaBytes   int64         // the session's activation buffers (Text.Generate only)
}

// Generate runs req on s, which must be fresh (an empty KV cache). The
// generated tokens are streamed through req.OnToken and the trace in ctx.
func Generate(ctx context.Context, s model.Session, vocab int, req Request) (*Result, error) {
	tr := pipeline.TraceFrom(ctx)
	opts := s.Options()
	np := len(req.Prompt)
	if np == 0 {
		return nil, pipeline.Errorf(pipeline.StagePrefill, "give a non-empty prompt", "prompt has no tokens")
	}
	if np > opts.CtxLen {
		room := req.MaxTokens
		if room <= 0 {
			room = 256
		}
		return nil, pipeline.Errorf(pipeline.StagePrefill, fmt.Sprintf("raise the context to %d (--ctx, num_ctx) or shorten the prompt", np+room),
			"prompt has %d tokens but the context holds %d", np, opts.CtxLen).
			With("tokens", int64(np)).With("ctx", int64(opts.CtxLen))
	}
	logits := make([]float32, vocab)
	res := &Result{PromptTokens: np}

	// Prefill: the prompt in chunks of at most Batch tokens; only the last
	// chunk's last row of logits is needed.
	tr.OnStageStart(pipeline.StagePrefill)
	t0 := time.Now()
	for done := 0; done < np; {
		n := min(opts.Batch, np-done)
		if err := s.Forward(ctx, req.Prompt[done:done+n], done, logits); err != nil {
			return nil, pipeline.Wrap(pipeline.StagePrefill, err, "")
		}
		done += n
		tr.OnProgress(pipeline.StagePrefill, int64(done), int64(np))
	}
	res.PrefillTime = time.Since(t0)
	tr.OnStageDone(pipeline.StagePrefill, pipeline.StageStats{Items: int64(np), Unit: "tokens",
		Placement: fmt.Sprintf("cpu:%d threads", opts.Threads)})

	err := decode(ctx, s, req, logits, res)
	return res, err
}

// decode is the token-by-token loop. It allocates nothing per token beyond
// what the decoder and callbacks do: history has room for the whole context.
func decode(ctx context.Context, s model.Session, req Request, logits []float32, res *Result) error {
	tr := pipeline.TraceFrom(ctx)
	opts := s.Options()
	np := len(req.Prompt)
	history := make([]int, np, opts.CtxLen+1)
	copy(history, req.Prompt)
	var stops *sample.StopMatcher
	if len(req.Stops) > 0 {
		stops = sample.NewStopMatcher(req.Stops)
	}
	var text []byte
	emit := func(id int, piece string) error {
		text = append(text, piece...)
		tr.OnToken(id, piece)
		if req.OnToken != nil {
			return req.OnToken(id, piece)
		}
		return nil
	}

	tr.OnStageStart(pipeline.StageGenerate)
	t0 := time.Now()
	pos := np // position of the token to evaluate next
	for {
		id := greedy(logits)
		if req.Sampler != nil {
			id = req.Sampler.Sample(logits, history)
		}
		history = append(history, id)
		res.Tokens = append(res.Tokens, id)
		switch {
		case req.IsEOG != nil && req.IsEOG(id):
			res.StopReason, res.StopDetail = StopEOG, fmt.Sprintf("end-of-generation token %d", id)
		case req.MaxTokens > 0 && len(res.Tokens) >= req.MaxTokens:
			res.StopReason, res.StopDetail = StopLength, fmt.Sprintf("reached the maximum of %d tokens", req.MaxTokens)
		case pos >= opts.CtxLen:
			res.StopReason, res.StopDetail = StopLength, fmt.Sprintf(
				"context full: %d prompt + %d generated tokens, the context holds %d", np, len(res.Tokens), opts.CtxLen)
			tr.OnWarning("ctx_full", res.StopDetail)
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
		if stops != nil {
			var hit bool
			if piece, hit = stops.Push(piece); hit {
				_, s := stops.Stopped()
				res.StopReason, res.StopDetail = StopString, fmt.Sprintf("stop string %q", s)
			} else if last {
				piece += stops.Flush()
			}
		}
		if err := emit(id, piece); err != nil {
			return pipeline.Wrap(pipeline.StageGenerate, err, "")
		}
		tr.OnProgress(pipeline.StageGenerate, int64(len(res.Tokens)), int64(max(req.MaxTokens, 0)))
		if res.StopReason != "" {
			break
		}
		if err := s.Forward(ctx, history[pos:pos+1], pos, logits); err != nil {
			return pipeline.Wrap(pipeline.StageGenerate, err, "")
		}
		pos++
	}
	res.Text = string(text)
	res.GenerateTime = time.Since(t0)
	tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{Items: int64(len(res.Tokens)), Unit: "tokens",
		Placement: fmt.Sprintf("cpu:%d threads", opts.Threads), Note: res.StopDetail})
	return nil
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
