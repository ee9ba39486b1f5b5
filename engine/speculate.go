package engine

import (
	"math"

	"github.com/glassbox-ai/glassbox/pipeline"
)

// speculate is the decode loop with a draft model (Request.Draft). Each
// step starts with the model's last pick at q.history[q.pos], evaluated
// by neither model yet: the draft catches up to it and proposes, the model
// evaluates the pick and the proposals at q.pos, q.pos+1, … in one pass,
// then picks from each row in turn while its picks equal the proposals.
// The first pick that differs (or the pick after the last proposal) starts
// the next step.
func (q *seq) speculate() error {
	d := q.req.Draft
	vocab := len(q.logits)
	ctxLen := q.s.Options().CtxLen
	dl := make([]float32, d.Vocab)
	rows := make([]float32, (d.Max+1)*vocab)
	props := make([]int, 0, d.Max)
	toks := make([]int, 0, d.Max+1)
	dpos := d.Cached // leading positions of q.history the draft's cache holds
	q.res.DraftCached = d.Cached
	defer func() { d.kept = append([]int(nil), q.history[:dpos]...) }()
	dbatch := d.Session.Options().Batch
	// catchUp evaluates q.history[dpos:upto] in the draft; dl then holds
	// the logits after q.history[upto-1].
	catchUp := func(upto int) error {
		for dpos < upto {
			n := min(dbatch, upto-dpos)
			if err := d.Session.Forward(q.ctx, q.history[dpos:dpos+n], dpos, dl); err != nil {
				return pipeline.Wrap(pipeline.StageGenerate, err, "the draft model")
			}
			dpos += n
			q.draftPasses++
		}
		return nil
	}
	done, err := q.next()
	for !done && err == nil {
		start := q.pos
		// Room for the proposals: positions start..start+k in the context,
		// and no more than the tokens left to generate after the pick.
		k := min(d.Max, ctxLen-start-1)
		if q.req.MaxTokens > 0 {
			k = min(k, q.req.MaxTokens-len(q.res.Tokens)-1)
		}
		props = props[:0]
		if k > 0 {
			if err = catchUp(start + 1); err != nil {
				return err
			}
			for {
				id := greedy(dl)
				if d.MinProb > 0 && drafted(dl, id) < d.MinProb {
					break
				}
				props = append(props, id)
				if len(props) == k {
					break
				}
				if err = d.Session.Forward(q.ctx, props[len(props)-1:], start+len(props), dl); err != nil {
					return pipeline.Wrap(pipeline.StageGenerate, err, "the draft model")
				}
				q.draftPasses++
			}
		}
		toks = append(append(toks[:0], q.history[start]), props...)
		out := rows[:len(toks)*vocab]
		if len(props) == 0 {
			out = q.logits
		}
		if err = q.s.Forward(q.ctx, toks, start, out); err != nil {
			return pipeline.Wrap(pipeline.StageGenerate, err, "")
		}
		q.passes++
		q.pos++
		q.res.Drafted += len(props)
		kept := 0
		for i := range props {
			copy(q.logits, out[i*vocab:(i+1)*vocab])
			if done, err = q.next(); done || err != nil {
				break
			}
			if q.history[q.pos] != props[i] {
				break
			}
			kept++
			q.pos++
		}
		q.res.Accepted += kept
		// The draft's cache holds the pick (at start) and proposals 0..n-2
		// after it: what the model kept of them stays valid.
		if len(props) > 0 {
			dpos = min(dpos+len(props)-1, start+1+kept)
		}
		if done || err != nil {
			break
		}
		if kept == len(props) {
			if len(props) > 0 {
				copy(q.logits, out[len(props)*vocab:])
			}
			done, err = q.next()
		}
	}
	return err
}

// drafted is the probability the draft gives its greedy choice id: the
// softmax of its logits at id (their largest).
func drafted(logits []float32, id int) float64 {
	m := logits[id]
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - m))
	}
	return 1 / sum
}
