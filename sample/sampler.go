package sample

import (
	"math"
	"math/rand/v2"
)

// cand is one candidate token during sampling.
type cand struct {
	id    int32
	logit float32
}

// less orders candidates by logit descending, then id ascending; NaN
// logits were mapped to -Inf before, so this is a strict total order.
func less(a, b cand) bool {
	if a.logit != b.logit {
		return a.logit > b.logit
	}
	return a.id < b.id
}

// Sampler picks tokens from logits with a fixed chain of transforms (see
// the package doc). It keeps its buffers between calls and is not safe for
// concurrent use.
type Sampler struct {
	p      Params
	rng    *rand.Rand
	cands  []cand    // (vocabSize) working set; cands[:n] are alive
	probs  []float64 // (vocabSize) softmax scratch
	counts []int32   // (vocabSize) occurrences in the penalty window
	last   []cand    // the final candidate set of the last Sample (for Top)
	sort   sortBuf   // radixSort's scratch
	greedy []float32 // the logits of the last Sample when it skipped loading them
}

// New returns a sampler for p. Out-of-range settings are normalised as
// documented on Params (call p.Validate first to reject them instead).
func New(p Params) *Sampler {
	p = p.normalized()
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, pcgStream))}
}

// pcgStream is the fixed second PCG seed word (the stream), so a Seed maps
// to one sequence forever.
const pcgStream = 0x676c617373626f78 // "glassbox"

// Params returns the settings in effect after normalisation.
func (s *Sampler) Params() Params { return s.p }

// Reseed restarts the random sequence as if the sampler were new with seed.
func (s *Sampler) Reseed(seed uint64) {
	s.p.Seed = seed
	s.rng = rand.New(rand.NewPCG(seed, pcgStream))
}

// Sample returns the next token id for logits (vocabSize), given the ids
// generated or read so far (history, oldest first; used only by the
// penalties). NaN logits count as -Inf; history ids outside the vocabulary
// are ignored. It returns -1 only when logits is empty. The logits slice is
// not modified.
func (s *Sampler) Sample(logits []float32, history []int) int {
	if len(logits) == 0 {
		return -1
	}
	if s.p.Temperature == 0 && !s.p.penalties() && len(s.p.LogitBias) == 0 {
		// Greedy with nothing to adjust: the argmax of the logits
		// themselves; Top loads the candidates if it is asked.
		s.last, s.greedy = nil, logits
		return argmaxLogits(logits)
	}
	s.greedy = nil
	s.load(logits)
	if s.p.penalties() {
		s.penalize(history)
	}
	if s.p.Temperature == 0 {
		s.last = s.cands
		return int(s.argmax())
	}
	s.last = s.filter()
	return int(s.draw(s.last))
}

// filter runs top-k, top-p and min-p over the loaded candidates and
// returns the survivors.
func (s *Sampler) filter() []cand {
	c := s.cands
	sorted := 0 // c[:sorted] is in final order and holds the best
	if s.p.TopK > 0 && s.p.TopK < len(c) {
		sortTop(c, 0, s.p.TopK, &s.sort)
		c, sorted = c[:s.p.TopK], s.p.TopK
	}
	if s.p.TopP < 1 {
		c, sorted = s.topP(c, sorted)
	}
	if s.p.MinP > 0 {
		c = s.minP(c, sorted)
	}
	return c
}

// load copies logits into the candidate buffer, growing it on first use.
func (s *Sampler) load(logits []float32) {
	n := len(logits)
	if cap(s.cands) < n {
		s.cands = make([]cand, n)
		s.probs = make([]float64, n)
		s.counts = make([]int32, n)
	}
	s.cands = s.cands[:n]
	for i, l := range logits {
		if l != l {
			l = float32(math.Inf(-1))
		}
		s.cands[i] = cand{int32(i), l}
	}
	for id, b := range s.p.LogitBias {
		if id < n {
			s.cands[id].logit += b
		}
	}
}

// penalize applies the repetition, frequency and presence penalties for
// the ids in the window. Candidates are still in id order here.
func (s *Sampler) penalize(history []int) {
	win := history
	if k := s.p.PenaltyLastN; k > 0 && len(win) > k {
		win = win[len(win)-k:]
	}
	n := len(s.cands)
	counts := s.counts[:n]
	for _, id := range win {
		if id >= 0 && id < n {
			counts[id]++
		}
	}
	r, f, pr := s.p.RepeatPenalty, s.p.FreqPenalty, s.p.PresencePenalty
	for _, id := range win {
		if id < 0 || id >= n || counts[id] == 0 {
			continue // out of range, or already applied
		}
		c := &s.cands[id]
		if c.logit <= 0 {
			c.logit *= r
		} else {
			c.logit /= r
		}
		c.logit -= float32(float32(counts[id])*f) + pr // explicit rounding: no FMA
		counts[id] = 0
	}
}

// argmaxLogits is argmax over logits before loading: NaN counts as -Inf
// (never wins), and the lowest id wins ties (0 when nothing beats -Inf).
func argmaxLogits(logits []float32) int {
	best, at := float32(math.Inf(-1)), 0
	for i, l := range logits {
		if l > best {
			best, at = l, i
		}
	}
	return at
}

// argmax returns the id with the highest logit; the lowest id wins ties.
func (s *Sampler) argmax() int32 {
	best := s.cands[0]
	for _, c := range s.cands[1:] {
		if c.logit > best.logit {
			best = c
		}
	}
	return best.id
}

// topP keeps the smallest sorted prefix of c whose softmax mass reaches
// TopP (at least one candidate). c[:sorted] is already in final order; the
// sorted prefix grows geometrically until the mass is reached, so a large
// vocabulary is sorted only as far as needed. The total mass is added in
// c's order on entry (id order, or the sorted order top-k left), before
// any selection moves the rest, so it does not depend on how the prefix
// is selected.
func (s *Sampler) topP(c []cand, sorted int) ([]cand, int) {
	if len(c) == 0 {
		return c, sorted
	}
	mx := float64(c[0].logit)
	if sorted == 0 {
		mx = float64(maxLogit(c))
	}
	if math.IsInf(mx, -1) {
		sortTop(c, 0, 1, &s.sort)
		return c[:1], 1 // every logit is -Inf: nothing to weigh
	}
	total := expSum(c, mx, 1, s.probs)
	if sorted == 0 {
		sorted = min(64, len(c))
		if sortTop(c, 0, sorted, &s.sort) {
			sorted = len(c)
		}
	}
	want := float64(s.p.TopP) * total
	var cum float64
	for i := 0; ; i++ {
		if i == sorted {
			next := min(sorted*4, len(c))
			if sortTop(c, sorted, next, &s.sort) {
				next = len(c)
			}
			sorted = next
		}
		cum += expf64(float64(c[i].logit) - mx)
		if cum >= want || i+1 == len(c) {
			return c[:i+1], i + 1
		}
	}
}

// minP drops candidates below MinP times the top probability: logit <
// max + ln(MinP). The survivors keep their order.
func (s *Sampler) minP(c []cand, sorted int) []cand {
	if len(c) == 0 {
		return c
	}
	mx := c[0].logit
	if sorted == 0 {
		mx = maxLogit(c)
	}
	if math.IsInf(float64(mx), -1) {
		return c
	}
	th := float64(mx) + math.Log(float64(s.p.MinP))
	if sorted > 0 { // a sorted prefix: cut it
		k := 1
		for k < len(c) && float64(c[k].logit) >= th {
			k++
		}
		return c[:k]
	}
	k := 0
	for _, x := range c {
		if float64(x.logit) >= th {
			c[k] = x
			k++
		}
	}
	return c[:k]
}

// draw applies the temperature to the survivors, takes their softmax and
// picks one by inverting the cumulative sum at a uniform variate.
func (s *Sampler) draw(c []cand) int32 {
	if len(c) == 0 { // unreachable: every filter keeps at least one
		return s.argmax()
	}
	if len(c) == 1 {
		return c[0].id
	}
	invT := 1 / float64(s.p.Temperature)
	mx := float64(maxLogit(c))
	if math.IsInf(mx, -1) {
		return lowestID(c)
	}
	probs := s.probs[:len(c)]
	total := expSum(c, mx, invT, probs)
	if !(total > 0) || math.IsInf(total, 0) {
		return c[0].id
	}
	u := float64(s.rng.Uint64()>>11) * (1.0 / (1 << 53)) * total
	var cum float64
	last := 0
	for i := range c {
		if probs[i] == 0 {
			continue
		}
		cum += probs[i]
		last = i
		if u < cum {
			return c[i].id
		}
	}
	return c[last].id // u rounded past the final sum
}

// maxLogit returns the fold of max over the logits of c (len(c) > 0), as
// the builtin gives it (NaN if any logit is NaN, +0 over -0), at about a
// cycle per candidate: the builtin's NaN and signed-zero handling runs
// only on a tie or a new maximum.
func maxLogit(c []cand) float32 {
	m := c[0].logit
	for _, x := range c[1:] {
		if x.logit >= m {
			m = max(m, x.logit)
		} else if !(x.logit < m) { // x or m is NaN
			return float32(math.NaN())
		}
	}
	return m
}

func lowestID(c []cand) int32 {
	id := c[0].id
	for _, x := range c[1:] {
		id = min(id, x.id)
	}
	return id
}
