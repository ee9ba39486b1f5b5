package model

import (
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/compute"
)

// Experts is a sparse mixture-of-experts feed-forward block (Shazeer et
// al. 2017, "Outrageously Large Neural Networks", arXiv:1701.06538; as
// Mixtral runs it: Jiang et al. 2024, arXiv:2401.04088): a router scores
// every expert for each token, the token goes through its ExpertsUsed
// best (each a SwiGLU network), and their outputs are summed, weighted by
// the router's softmax probabilities renormalized over the chosen ones.
type Experts struct {
	Router compute.Matrix   // (experts, dim): ffn_gate_inp
	Gate   []compute.Matrix // per expert (expertHidden, dim): ffn_gate_exps
	Up     []compute.Matrix // per expert (expertHidden, dim): ffn_up_exps
	Down   []compute.Matrix // per expert (dim, expertHidden): ffn_down_exps
	// A shared expert every token goes through (Qwen2-MoE's; nil: none),
	// its output weighted by sigmoid(xb·SharedGate).
	Shared     *FFN      // ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp
	SharedGate []float32 // (dim): ffn_gate_inp_shexp
	// gpt-oss's experts add biases after the router and after each of an
	// expert's matrices (nil: none), and gate with compute.SwiGLUOAI
	// (Act; nil: compute.SwiGLU).
	RouterBias []float32   // (experts): ffn_gate_inp.bias
	GateBias   [][]float32 // per expert (expertHidden): ffn_gate_exps.bias
	UpBias     [][]float32 // per expert (expertHidden): ffn_up_exps.bias
	DownBias   [][]float32 // per expert (dim): ffn_down_exps.bias
	Act        func(gate, up []float32)
}

// act is the experts' gated unit.
func (e *Experts) act() func(gate, up []float32) {
	if e.Act != nil {
		return e.Act
	}
	return compute.SwiGLU
}

// addBias adds bias (width w; nil: none) to each of the m rows of x.
func addBias(x []float32, bias []float32, m int) {
	if bias == nil {
		return
	}
	w := len(bias)
	for i := range m {
		compute.Add(x[i*w:(i+1)*w], x[i*w:(i+1)*w], bias)
	}
}

// BindExperts binds the experts of the block whose tensors start with
// prefix ("blk.3."): the stacked tensors llama.cpp's converters write
// (ffn_gate_exps, ...), or the one-per-expert tensors of older Mixtral
// files (ffn_gate.0.weight, ...).
func BindExperts(b *Binder, c *Config, prefix string) *Experts {
	n, hid := c.Experts, c.ExpertHiddenDim
	b.used, b.of = c.ExpertsUsed, c.Experts
	e := &Experts{Router: b.Matrix(prefix+"ffn_gate_inp.weight", n, c.Dim)}
	if c.ExpertSharedHiddenDim == 0 && b.Has(prefix+"ffn_gate_shexp.weight") {
		b.fail("tensor %sffn_gate_shexp.weight is a shared expert, but metadata %s.expert_shared_feed_forward_length is missing", prefix, c.Arch)
	}
	if sh := c.ExpertSharedHiddenDim; sh > 0 {
		e.Shared = &FFN{Gate: b.Matrix(prefix+"ffn_gate_shexp.weight", sh, c.Dim), Up: b.Matrix(prefix+"ffn_up_shexp.weight", sh, c.Dim),
			Down: b.Matrix(prefix+"ffn_down_shexp.weight", c.Dim, sh)}
		e.SharedGate = b.Vector(prefix+"ffn_gate_inp_shexp.weight", c.Dim)
	}
	if b.Has(prefix+"ffn_gate_exps.weight") || !b.Has(prefix+"ffn_gate.0.weight") {
		e.Gate = b.Experts(prefix+"ffn_gate_exps.weight", n, hid, c.Dim)
		e.Up = b.Experts(prefix+"ffn_up_exps.weight", n, hid, c.Dim)
		e.Down = b.Experts(prefix+"ffn_down_exps.weight", n, c.Dim, hid)
		return e
	}
	for i := range n {
		e.Gate = append(e.Gate, b.expert(fmt.Sprintf("%sffn_gate.%d.weight", prefix, i), hid, c.Dim))
		e.Up = append(e.Up, b.expert(fmt.Sprintf("%sffn_up.%d.weight", prefix, i), hid, c.Dim))
		e.Down = append(e.Down, b.expert(fmt.Sprintf("%sffn_down.%d.weight", prefix, i), c.Dim, hid))
	}
	return e
}

// expert binds one expert's matrix of an older Mixtral file.
func (b *Binder) expert(name string, rows, cols int) compute.Matrix {
	before := b.bytes
	m := b.Matrix(name, rows, cols)
	b.expertBytes += b.bytes - before
	return m
}

// moeBuffers are a session's scratch for Experts: the router's scores
// and each token's choices, and an expert's rows gathered and computed.
type moeBuffers struct {
	scores []float32 // (batch, experts)
	in     []float32 // (batch, dim) the rows an expert takes
	out    []float32 // (batch, dim) its outputs
	pick   []int32   // (batch, used) each token's experts
	weight []float32 // (batch, used) and their weights
	count  []int32   // (experts + 1) tokens per expert, then their offsets
	rows   []int32   // (batch·used) the (token, rank) entries by expert
}

// MoE computes out (n, dim) = the mixture of experts e over the normed
// rows xb (n, dim). The experts run one after another, each over the rows
// routed to it as one batch (so a prompt reads each expert's weights
// once); a row's weighted outputs are summed in expert order, whatever
// the batch, so one token alone gives the same sum as in a prompt.
func (d *Decoder) MoE(e *Experts, out, xb []float32, n int) {
	c, mb := d.cfg, &d.moe
	dim, hid, k, ne := c.Dim, c.ExpertHiddenDim, c.ExpertsUsed, c.Experts
	scores := mb.scores[:n*ne]
	d.MatMul(d.Pool, scores, e.Router, xb[:n*dim], n)
	addBias(scores, e.RouterBias, n)
	for t := range n {
		Route(scores[t*ne:(t+1)*ne], mb.pick[t*k:(t+1)*k], mb.weight[t*k:(t+1)*k], !c.ExpertProbs)
	}
	defer d.sharedExpert(e, out, xb, n)
	if n == 1 && k*hid <= len(d.HB) && k*dim <= len(mb.out) { // room for the k experts' rows (--batch may be small)
		d.moeToken(e, out, xb)
		return
	}
	// Counting sort of the (token, rank) entries by expert.
	count := mb.count[:ne+1]
	clear(count)
	for _, x := range mb.pick[:n*k] {
		count[x+1]++
	}
	for i := 1; i <= ne; i++ {
		count[i] += count[i-1]
	}
	for j, x := range mb.pick[:n*k] {
		mb.rows[count[x]] = int32(j)
		count[x]++
	}
	clear(out[:n*dim])
	start := 0
	for x := range ne {
		end := int(count[x]) // the entries of expert x: rows[start:end]
		m := end - start
		if m == 0 {
			continue
		}
		in := mb.in[:m*dim]
		for i, j := range mb.rows[start:end] {
			t := int(j) / k
			copy(in[i*dim:(i+1)*dim], xb[t*dim:(t+1)*dim])
		}
		d.MatMuls(in, m, compute.Product{Out: d.HB[:m*hid], W: e.Gate[x]}, compute.Product{Out: d.HB2[:m*hid], W: e.Up[x]})
		if e.GateBias != nil {
			addBias(d.HB, e.GateBias[x], m)
			addBias(d.HB2, e.UpBias[x], m)
		}
		GLU(d.Pool, e.act(), d.HB[:m*hid], d.HB2[:m*hid])
		y := mb.out[:m*dim]
		d.MatMul(d.Pool, y, e.Down[x], d.HB[:m*hid], m)
		if e.DownBias != nil {
			addBias(y, e.DownBias[x], m)
		}
		for i, j := range mb.rows[start:end] {
			t, w := int(j)/k, mb.weight[j]
			o, yi := out[t*dim:(t+1)*dim], y[i*dim:(i+1)*dim]
			for i := range o {
				o[i] += w * yi[i]
			}
		}
		start = end
	}
}

// moeToken is MoE for one token (generation), its experts picked: their
// gate and up matrices share the input, so they go two experts to a
// MatMuls loop (one hand-off for four matrices rather than two for two),
// their down matrices four to a MatMulsApart loop, and the sum is in
// expert order, as MoE's, with the same bits.
func (d *Decoder) moeToken(e *Experts, out, xb []float32) {
	c, mb := d.cfg, &d.moe
	dim, hid, k := c.Dim, c.ExpertHiddenDim, c.ExpertsUsed
	pick := mb.pick[:k]
	var ps [4]compute.Product
	for r := 0; r < k; r += 2 {
		np := 0
		for q := r; q < min(r+2, k); q++ {
			x := pick[q]
			ps[np] = compute.Product{Out: d.HB[q*hid : (q+1)*hid], W: e.Gate[x]}
			ps[np+1] = compute.Product{Out: d.HB2[q*hid : (q+1)*hid], W: e.Up[x]}
			np += 2
		}
		d.MatMuls(xb[:dim], 1, ps[:np]...)
	}
	if e.GateBias != nil {
		for q, x := range pick {
			addBias(d.HB[q*hid:], e.GateBias[x], 1)
			addBias(d.HB2[q*hid:], e.UpBias[x], 1)
		}
	}
	GLU(d.Pool, e.act(), d.HB[:k*hid], d.HB2[:k*hid])
	y := mb.out[:k*dim]
	var xs [4][]float32
	for r := 0; r < k; r += 4 {
		np := 0
		for q := r; q < min(r+4, k); q++ {
			ps[np] = compute.Product{Out: y[q*dim : (q+1)*dim], W: e.Down[pick[q]]}
			xs[np] = d.HB[q*hid : (q+1)*hid]
			np++
		}
		d.MatMulsApart(xs[:np], 1, ps[:np]...)
	}
	if e.DownBias != nil {
		for q, x := range pick {
			addBias(y[q*dim:], e.DownBias[x], 1)
		}
	}
	clear(out[:dim])
	for x := range c.Experts { // expert order, as MoE sums
		for r, p := range pick {
			if int(p) != x {
				continue
			}
			w, yr := mb.weight[r], y[r*dim:(r+1)*dim]
			for i := range out[:dim] {
				out[i] += w * yr[i]
			}
		}
	}
}

// sharedExpert adds a shared expert's output, weighted by
// sigmoid(xb·SharedGate) per row, to out (n, dim).
func (d *Decoder) sharedExpert(e *Experts, out, xb []float32, n int) {
	if e.Shared == nil {
		return
	}
	dim := d.cfg.Dim
	y := d.moe.out[:n*dim]
	d.FFN(e.Shared, y, xb[:n*dim], n)
	for t := range n {
		g := float32(0)
		for i, w := range e.SharedGate {
			g += w * xb[t*dim+i]
		}
		g = float32(1 / (1 + math.Exp(-float64(g))))
		o, yt := out[t*dim:(t+1)*dim], y[t*dim:(t+1)*dim]
		for i := range o {
			o[i] += g * yt[i]
		}
	}
}

// Route picks a token's experts from the router's scores: the len(pick)
// with the highest softmax probabilities (the lower index first among
// equals), weighted by their probabilities renormalized to sum to 1 when
// renorm (Mixtral's softmax over the chosen scores and Qwen3-MoE's
// norm_topk_prob are the same weights), else by the probabilities as they
// are (Qwen2-MoE).
func Route(scores []float32, pick []int32, weight []float32, renorm bool) {
	k := len(pick)
	for r := range k {
		best := -1
		for i, s := range scores {
			if taken(pick[:r], i) {
				continue
			}
			if best < 0 || s > scores[best] {
				best = i
			}
		}
		pick[r] = int32(best)
	}
	// Renormalized: the softmax restricted to the chosen, exp(s − max) over
	// their sum (the others' probabilities cancel). Else over every score.
	top := scores[pick[0]]
	var sum float32
	for r, i := range pick {
		weight[r] = float32(math.Exp(float64(scores[i] - top)))
		sum += weight[r]
	}
	if !renorm {
		sum = 0
		for _, s := range scores {
			sum += float32(math.Exp(float64(s - top)))
		}
	}
	for r := range weight {
		weight[r] /= sum
	}
}

// taken reports whether expert i is among pick.
func taken(pick []int32, i int) bool {
	for _, p := range pick {
		if int(p) == i {
			return true
		}
	}
	return false
}
