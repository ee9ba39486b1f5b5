package sample

import "math"

// Candidate is one token of the distribution the last draw was made from.
type Candidate struct {
	ID    int
	Logit float32 // after penalties (before temperature)
	P     float64 // probability in the final distribution
}

// Top appends to dst the n most probable candidates of the last Sample
// call, most probable first (ties: lowest id), and returns it: the
// distribution after penalties, top-k, top-p, min-p and temperature, i.e.
// the one the token was drawn from. After a greedy call it is the softmax
// of the penalized logits at temperature 1 over the whole vocabulary, to
// show how sure the argmax was (read from the logits passed to that call,
// which must not have changed since). It is meant for inspection (a run's
// --json output, the UI) and costs O(vocabulary) per call; Sample does not
// pay for it. Before the first Sample it returns dst unchanged.
func (s *Sampler) Top(dst []Candidate, n int) []Candidate {
	if s.greedy != nil { // a greedy Sample that did not load its logits
		s.load(s.greedy)
		s.last, s.greedy = s.cands, nil
	}
	c := s.last
	if len(c) == 0 || n <= 0 {
		return dst
	}
	invT := 1.0
	if s.p.Temperature > 0 {
		invT = 1 / float64(s.p.Temperature)
	}
	n = min(n, len(c))
	sortTop(c, 0, n, &s.sort) // reorders the survivors; the next Sample reloads them
	mx := float64(c[0].logit)
	if math.IsInf(mx, 0) || mx != mx {
		for _, x := range c[:n] {
			p := 0.0
			if x.logit == c[0].logit {
				p = math.NaN() // no finite distribution to report
			}
			dst = append(dst, Candidate{int(x.id), x.logit, p})
		}
		return dst
	}
	total := expSum(c, mx, invT, s.probs)
	for _, x := range c[:n] {
		dst = append(dst, Candidate{int(x.id), x.logit, expf64(float64(float64(x.logit)-mx)*invT) / total})
	}
	return dst
}
