package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// PerplexityResult is the outcome of Perplexity.
type PerplexityResult struct {
	Cumulative []float64 // PPL over all windows up to and including window i
	PPL        float64   // exp(mean negative log-likelihood)
	StdErr     float64   // standard error of PPL (delta method, as llama-perplexity)
	Scored     int       // number of predictions scored
	Dropped    int       // trailing ids that did not fill a window
}

// Perplexity scores ids the way llama.cpp's llama-perplexity does: split
// them into non-overlapping windows of ctxLen (dropping the tail), put bos
// at the start of each window when bos ≥ 0, evaluate each window from
// position 0, and score the predictions of the second half (positions
// ctxLen/2 … ctxLen−2 predicting the next id). The session's context must
// hold ctxLen positions; onWindow (optional) sees each window's running PPL.
func Perplexity(ctx context.Context, s model.Session, vocab int, ids []int, ctxLen, bos int,
	onWindow func(window, windows int, ppl float64)) (*PerplexityResult, error) {
	opts := s.Options()
	if ctxLen < 4 || ctxLen > opts.CtxLen {
		return nil, pipeline.Errorf(pipeline.StagePrefill, "", "perplexity window of %d tokens: want 4 ≤ window ≤ the context of %d", ctxLen, opts.CtxLen)
	}
	windows := len(ids) / ctxLen
	if windows == 0 {
		return nil, pipeline.Errorf(pipeline.StageEncode, fmt.Sprintf("use a longer text or --ctx ≤ %d", len(ids)),
			"text has %d tokens, fewer than one window of %d", len(ids), ctxLen).
			With("tokens", int64(len(ids))).With("ctx", int64(ctxLen))
	}
	res := &PerplexityResult{Dropped: len(ids) - windows*ctxLen}
	tr := pipeline.TraceFrom(ctx)
	tokens := make([]int, ctxLen)
	logits := make([]float32, opts.Batch*vocab)
	first := ctxLen / 2
	var nll, nll2 float64
	for w := range windows {
		copy(tokens, ids[w*ctxLen:(w+1)*ctxLen])
		if bos >= 0 {
			tokens[0] = bos
		}
		for done := 0; done < ctxLen; {
			n := min(opts.Batch, ctxLen-done)
			out := logits[:n*vocab]
			if err := s.Forward(ctx, tokens[done:done+n], done, out); err != nil {
				return nil, pipeline.Wrap(pipeline.StagePrefill, err, "")
			}
			for i := range n {
				j := done + i // row j predicts tokens[j+1]
				if j < first || j+1 >= ctxLen {
					continue
				}
				l := nllOf(out[i*vocab:(i+1)*vocab], tokens[j+1])
				nll += l
				nll2 += l * l
				res.Scored++
			}
			done += n
		}
		ppl := math.Exp(nll / float64(res.Scored))
		res.Cumulative = append(res.Cumulative, ppl)
		tr.OnProgress(pipeline.StagePrefill, int64(w+1), int64(windows))
		if onWindow != nil {
			onWindow(w, windows, ppl)
		}
	}
	n := float64(res.Scored)
	mean := nll / n
	res.PPL = math.Exp(mean)
	if res.Scored > 1 {
		variance := nll2/n - mean*mean
		res.StdErr = math.Sqrt(max(variance, 0)/(n-1)) * res.PPL
	}
	return res, nil
}

// nllOf returns −log softmax(logits)[id], computed in float64.
func nllOf(logits []float32, id int) float64 {
	mx := logits[0]
	for _, v := range logits {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - mx))
	}
	return math.Log(sum) - float64(logits[id]-mx)
}
