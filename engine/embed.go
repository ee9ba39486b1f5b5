package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
)

// Poolings: how an embedding is made of a text's final hidden states (the
// rows the output norm gives, before the output matrix).
const (
	PoolMean = "mean" // the average over the text's tokens (Ollama's for models that do not say)
	PoolLast = "last" // the last token's (decoder embedders: Qwen3-Embedding, e5-mistral)
	PoolCLS  = "cls"  // the first token's
)

// ModelPooling is the pooling a model's file asks for (<arch>.pooling_type)
// or, when it names none, mean; a reranker's pooling (rank) is an error.
func ModelPooling(c model.Config) (string, error) {
	switch c.Pooling {
	case 0, 1:
		return PoolMean, nil
	case 2:
		return PoolCLS, nil
	case 3:
		return PoolLast, nil
	}
	return "", fmt.Errorf("%s.pooling_type %d (a reranker's, or unknown) makes no embedding (supported: 1 mean, 2 cls, 3 last)", c.Arch, c.Pooling)
}

// EmbedRequest is one embeddings request: texts in, one vector each.
type EmbedRequest struct {
	Inputs   []string
	InputIDs [][]int // token ids instead of text (after Inputs' when both)
	// Pooling is PoolMean, PoolLast or PoolCLS; "" takes the model's
	// (ModelPooling).
	Pooling string
	// Truncate cuts an input longer than the context to its first tokens
	// (and says so in Result.Truncated and a warning); without it such an
	// input is an encode-stage error with both numbers.
	Truncate bool
	// Normalize scales each vector to length 1 (Ollama's /api/embed,
	// OpenAI's /v1/embeddings).
	Normalize bool
	// Dimensions keeps each vector's first Dimensions values (then
	// normalized, with Normalize), as OpenAI's dimensions parameter; 0:
	// all of the model's.
	Dimensions int
	Session    model.SessionOptions
}

// EmbedResult is the vectors, in the inputs' order, and what making them
// took.
type EmbedResult struct {
	Embeddings [][]float32
	Tokens     []int // tokens evaluated per input
	Truncated  []int // indexes of the inputs cut to the context
	Pooling    string
	Dim        int // the model's hidden size (before Dimensions)
	EncodeTime time.Duration
	EvalTime   time.Duration
}

// PromptTokens is the tokens evaluated over all inputs.
func (r *EmbedResult) PromptTokens() int {
	n := 0
	for _, t := range r.Tokens {
		n += t
	}
	return n
}

// Embed tokenizes each input as a prompt is (the special tokens the
// vocabulary adds included), evaluates it with causal attention from
// position 0 of one session sized for the longest, and pools its final
// hidden states. Stages: encode (every input), then prefill (the tokens
// evaluated); generate and decode are skipped.
func (t *Text) Embed(ctx context.Context, req EmbedRequest) (*EmbedResult, error) {
	tr := pipeline.TraceFrom(ctx)
	cfg := t.Model.Config()
	pool := req.Pooling
	if pool == "" {
		var err error
		if pool, err = ModelPooling(cfg); err != nil {
			return nil, pipeline.Wrap(pipeline.StageLoad, err, "use a model made for embeddings, or ask for a pooling")
		}
	}
	switch {
	case pool != PoolMean && pool != PoolLast && pool != PoolCLS:
		return nil, pipeline.Errorf(pipeline.StagePrefill, "give mean, last or cls", "pooling %q is not supported", pool)
	case len(req.Inputs)+len(req.InputIDs) == 0:
		return nil, pipeline.Errorf(pipeline.StageEncode, "give at least one input", "no inputs to embed")
	case req.Dimensions < 0 || req.Dimensions > cfg.Dim:
		return nil, pipeline.Errorf(pipeline.StagePrefill, fmt.Sprintf("give 1 to %d dimensions, or none for all", cfg.Dim),
			"dimensions %d: the model's embeddings have %d", req.Dimensions, cfg.Dim)
	}
	opts := req.Session.Fill(cfg)
	res := &EmbedResult{Pooling: pool, Dim: cfg.Dim}

	// Encode every input first: one that does not fit fails the request
	// before anything is evaluated.
	t0 := time.Now()
	tr.OnStageStart(pipeline.StageEncode)
	tok, err := t.Tokenizer()
	if err != nil {
		return nil, err
	}
	ids := make([][]int, len(req.Inputs), len(req.Inputs)+len(req.InputIDs))
	for i, text := range req.Inputs {
		if ids[i], err = tok.Encode(text, true, false); err != nil {
			return nil, pipeline.Wrap(pipeline.StageEncode, fmt.Errorf("input %d: %w", i, err), "")
		}
	}
	for i, in := range req.InputIDs {
		for _, id := range in {
			if id < 0 || id >= cfg.VocabSize {
				return nil, pipeline.Errorf(pipeline.StageEncode, "", "input %d: token id %d is outside the vocabulary of %d",
					len(req.Inputs)+i, id, cfg.VocabSize)
			}
		}
		ids = append(ids, in)
	}
	longest, total := 0, 0
	for i := range ids {
		n := len(ids[i])
		switch {
		case n == 0:
			return nil, pipeline.Errorf(pipeline.StageEncode, "give non-empty inputs", "input %d has no tokens", i)
		case n > opts.CtxLen && !req.Truncate:
			return nil, pipeline.Errorf(pipeline.StageEncode,
				fmt.Sprintf("raise the context to %d (num_ctx, --ctx), shorten the input, or ask for truncation (truncate: true)", n),
				"input %d has %d tokens but the context holds %d", i, n, opts.CtxLen).
				With("tokens", int64(n)).With("ctx", int64(opts.CtxLen))
		case n > opts.CtxLen:
			tr.OnWarning("input_truncated", fmt.Sprintf("input %d cut from %d to the context's %d tokens (truncate)", i, n, opts.CtxLen))
			ids[i] = ids[i][:opts.CtxLen]
			res.Truncated = append(res.Truncated, i)
		}
		longest, total = max(longest, len(ids[i])), total+len(ids[i])
		res.Tokens = append(res.Tokens, len(ids[i]))
	}
	res.EncodeTime = time.Since(t0)
	tr.OnStageDone(pipeline.StageEncode, pipeline.StageStats{Items: int64(total), Unit: "tokens", PeakRSS: plan.PeakRSS(),
		Note: fmt.Sprintf("%d inputs", len(ids))})

	// One session sized for the longest input; each input starts at
	// position 0, so its keys overwrite the previous input's.
	opts.CtxLen = min(opts.CtxLen, longest)
	opts.Batch = min(opts.Batch, opts.CtxLen)
	s, err := t.Model.NewSession(opts)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePrefill, err, "")
	}
	defer s.Close()
	e, ok := s.(model.Embedder)
	if !ok {
		return nil, pipeline.Errorf(pipeline.StagePrefill, "", "%s sessions give no hidden states", cfg.Arch)
	}
	tr.OnStageStart(pipeline.StagePrefill)
	t0 = time.Now()
	hidden := make([]float32, opts.Batch*cfg.Dim)
	sum := make([]float64, cfg.Dim)
	done := 0
	for i, in := range ids {
		clear(sum)
		for pos := 0; pos < len(in); {
			n := min(opts.Batch, len(in)-pos)
			h := hidden[:n*cfg.Dim]
			if err := e.Hidden(ctx, in[pos:pos+n], pos, h); err != nil {
				return nil, pipeline.Wrap(pipeline.StagePrefill, fmt.Errorf("input %d: %w", i, err), "")
			}
			poolRows(sum, h, cfg.Dim, pos, len(in), pool)
			pos += n
			done += n
			tr.OnProgress(pipeline.StagePrefill, int64(done), int64(total))
		}
		if pool == PoolMean {
			for k := range sum {
				sum[k] /= float64(len(in))
			}
		}
		for _, x := range sum {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, pipeline.Errorf(pipeline.StagePrefill, "check the model file (glassbox show --tensors); corrupt or overflowing weights give this",
					"input %d: the model's hidden states hold %v", i, x)
			}
		}
		res.Embeddings = append(res.Embeddings, finishVector(sum, req.Dimensions, req.Normalize))
	}
	res.EvalTime = time.Since(t0)
	tr.OnStageDone(pipeline.StagePrefill, pipeline.StageStats{Items: int64(total), Unit: "tokens",
		Placement: fmt.Sprintf("cpu:%d threads", opts.Threads), PeakRSS: plan.PeakRSS(),
		Note: fmt.Sprintf("%d embeddings of %d dimensions, %s pooling", len(ids), len(res.Embeddings[0]), pool)})
	tr.OnStageSkipped(pipeline.StageGenerate, "embeddings generate no tokens")
	tr.OnStageSkipped(pipeline.StageDecode, "the vectors are the output: no text to decode")
	return res, nil
}

// poolRows adds the rows of h (hidden states of positions pos, pos+1, ...
// of a text of n tokens) that the pooling takes to sum.
func poolRows(sum []float64, h []float32, dim, pos, n int, pool string) {
	rows := len(h) / dim
	for r := range rows {
		p := pos + r
		if pool == PoolLast && p != n-1 || pool == PoolCLS && p != 0 {
			continue
		}
		for k, v := range h[r*dim : (r+1)*dim] {
			sum[k] += float64(v)
		}
	}
}

// finishVector keeps the first dims values of v (all when 0) and scales
// them to length 1 when normalize (a zero vector stays zero).
func finishVector(v []float64, dims int, normalize bool) []float32 {
	if dims > 0 {
		v = v[:dims]
	}
	scale := 1.0
	if normalize {
		var ss float64
		for _, x := range v {
			ss += x * x
		}
		if ss > 0 {
			scale = 1 / math.Sqrt(ss)
		}
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x * scale)
	}
	return out
}
