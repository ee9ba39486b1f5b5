// Package phi3 is the Phi-3 architecture: Llama's decoder with the Q, K and
// V projections fused into one attn_qkv matrix and the gate and up
// projections fused into ffn_up (gate rows first), RoPE on the two halves of
// each head (GPT-NeoX layout), and sliding-window attention where the file
// sets attention.sliding_window (a query at p sees keys p−window < k ≤ p).
// The fused matrices are bound as row-range views, so the forward pass is
// Llama's.
//
// Reference: Abdin et al. 2024, "Phi-3 Technical Report" (arXiv:2404.14219).
// LongRoPE (Ding et al. 2024, arXiv:2402.13753; the 128k models): the
// rope_factors_short tensor divides the angles when the session's context
// fits the original one (rope.scaling.original_context_length), else
// rope_factors_long; rotated q and k are multiplied by
// rope.scaling.attn_factor (default √(1 + ln(ctx/orig)/ln(orig))), as
// llama.cpp's rope does with its mscale.
//
// Imports: model, compute, gguf.
package phi3

import (
	"context"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() { model.Register("phi3", Load) }

// Weights are the bound tensors. Matrices alias the mapped file.
type Weights struct {
	TokenEmbd  compute.Matrix // (vocab, dim)
	OutputNorm []float32      // (dim)
	RopeFreqs  []float32      // (ropeDim/2) linear RoPE scaling divisors, or nil
	RopeShort  []float32      // (ropeDim/2) LongRoPE factors within the original context, or nil
	RopeLong   []float32      // (ropeDim/2) LongRoPE factors beyond it, or nil
	Output     compute.Matrix // (vocab, dim); token_embd when tied
	Layers     []Layer
}

// Layer is one decoder block.
type Layer struct {
	AttnNorm []float32      // (dim)
	Q        compute.Matrix // (qDim, dim) rows 0.. of attn_qkv
	K        compute.Matrix // (kvDim, dim) the next rows
	V        compute.Matrix // (kvDim, dim) the last rows
	O        compute.Matrix // (dim, qDim)
	FFNNorm  []float32      // (dim)
	Gate     compute.Matrix // (hiddenDim, dim) first half of ffn_up
	Up       compute.Matrix // (hiddenDim, dim) second half of ffn_up
	Down     compute.Matrix // (dim, hiddenDim)
}

// Model is a loaded Phi-3 model.
type Model struct {
	cfg        model.Config
	w          Weights
	bytes      int64
	origCtx    int     // LongRoPE: the original context length
	attnFactor float32 // LongRoPE: multiplies rotated q and k; 1 otherwise
}

// Load binds a phi3-architecture file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfig(f, "phi3")
	if err != nil {
		return nil, err
	}
	c := &cfg
	b := model.NewBinder(f)
	w := Weights{
		TokenEmbd:  b.Matrix("token_embd.weight", c.VocabSize, c.Dim),
		OutputNorm: b.Vector("output_norm.weight", c.Dim),
	}
	tied := !b.Has("output.weight")
	if tied {
		w.Output = w.TokenEmbd
	} else {
		w.Output = b.Matrix("output.weight", c.VocabSize, c.Dim)
	}
	w.RopeFreqs = c.RopeFactors(nil)
	m := &Model{cfg: cfg, attnFactor: 1}
	if b.Has("rope_factors_long.weight") || b.Has("rope_factors_short.weight") {
		w.RopeShort = b.Vector("rope_factors_short.weight", c.RopeDim/2)
		w.RopeLong = b.Vector("rope_factors_long.weight", c.RopeDim/2)
		if m.origCtx, err = model.Int(f, "phi3", "rope.scaling.original_context_length", c.CtxLen); err != nil {
			return nil, err
		}
		if m.origCtx <= 0 {
			return nil, fmt.Errorf("load: phi3: rope.scaling.original_context_length %d must be positive", m.origCtx)
		}
		m.attnFactor = longRopeAttnFactor(f, c.CtxLen, m.origCtx)
	}
	w.Layers = make([]Layer, c.NumLayers)
	for i := range w.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		qkv := b.Split(p+"attn_qkv.weight", c.Dim, c.QDim(), c.KVDim(), c.KVDim())
		gateUp := b.Split(p+"ffn_up.weight", c.Dim, c.HiddenDim, c.HiddenDim)
		w.Layers[i] = Layer{
			AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
			Q:        qkv[0],
			K:        qkv[1],
			V:        qkv[2],
			O:        b.Matrix(p+"attn_output.weight", c.Dim, c.QDim()),
			FFNNorm:  b.Vector(p+"ffn_norm.weight", c.Dim),
			Gate:     gateUp[0],
			Up:       gateUp[1],
			Down:     b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim),
		}
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	m.w, m.bytes = w, b.ReadBytes(w.TokenEmbd, tied)
	return m, nil
}

// longRopeAttnFactor is rope.scaling.attn_factor, or the LongRoPE default
// √(1 + ln(ctx/orig)/ln(orig)) for a model trained to ctx from orig.
func longRopeAttnFactor(f *gguf.File, ctx, orig int) float32 {
	if v, err := f.Meta.Float("phi3.rope.scaling.attn_factor"); err == nil && v > 0 {
		return float32(v)
	}
	if ctx <= orig || orig <= 1 {
		return 1
	}
	return float32(math.Sqrt(1 + math.Log(float64(ctx)/float64(orig))/math.Log(float64(orig))))
}

func (m *Model) Config() model.Config { return m.cfg }
func (m *Model) WeightBytes() int64   { return m.bytes }

// Session is one sequence: the shared decoder (KV caches, activation
// buffers, pool) and the RoPE divisors for its context.
type Session struct {
	*model.Decoder
	m     *Model
	freqs []float32 // (ropeDim/2) RoPE divisors for this session's context, or nil
}

func (m *Model) NewSession(opts model.SessionOptions) (model.Session, error) {
	s := &Session{m: m}
	d, err := model.NewDecoder(&m.cfg, opts, m, s.run)
	if err != nil {
		return nil, err
	}
	s.Decoder = d
	c := &m.cfg
	s.freqs = m.w.RopeFreqs
	if m.w.RopeShort != nil {
		s.freqs = m.w.RopeShort
		if d.Opts.CtxLen > m.origCtx {
			s.freqs = m.w.RopeLong
		}
		s.freqs = c.RopeFactors(s.freqs)
	}
	return s, nil
}

// run is the forward pass over rows of tokens (one sequence or several).
func (s *Session) run(ctx context.Context, rows model.Rows, tokens []int, all bool, logits []float32) error {
	c, w := &s.m.cfg, &s.m.w
	n, dim, qDim, kvDim, hid := len(tokens), c.Dim, c.QDim(), c.KVDim(), c.HiddenDim
	x := s.X[:n*dim]
	for i, id := range tokens { // x[i] = embedding row of token i
		w.TokenEmbd.Row(id, x[i*dim:(i+1)*dim])
	}
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	for l := range w.Layers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("infer: layer %d: %w", l, err)
		}
		L := &w.Layers[l]

		// Attention: xb = norm(x); q,k,v = xb·Wqᵀ, xb·Wkᵀ, xb·Wvᵀ; rotate q,k (NeoX halves).
		model.NormRows(s.XB, x, L.AttnNorm, n, dim, c.NormEps)
		s.MatMuls(s.XB[:n*dim], n, compute.Product{Out: s.Q[:n*qDim], W: L.Q},
			compute.Product{Out: s.K[:n*kvDim], W: L.K}, compute.Product{Out: s.V[:n*kvDim], W: L.V})
		for i := range n {
			q, k := s.Q[i*qDim:(i+1)*qDim], s.K[i*kvDim:(i+1)*kvDim]
			s.Rope.Apply(q, c.NumHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, true, s.freqs)
			s.Rope.Apply(k, c.NumKVHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, true, s.freqs)
			if a := s.m.attnFactor; a != 1 {
				scaleRotated(q, c.NumHeads, c.HeadDim, c.RopeDim, a)
				scaleRotated(k, c.NumKVHeads, c.HeadDim, c.RopeDim, a)
			}
			rows.Store(l, i, k, s.V[i*kvDim:(i+1)*kvDim])
		}
		// att (n, qDim) = causal softmax(q·Kᵀ·scale)·V over each row's positions
		// max(0, p−window+1)..p.
		rows.Attend(s.Pool, l, s.Att[:n*qDim], s.Q[:n*qDim], n, c.NumHeads, compute.Attn{Scale: scale, Window: c.SlidingWindow})
		s.MatMul(s.Pool, s.Out[:n*dim], L.O, s.Att[:n*qDim], n)
		compute.Add(x, x, s.Out[:n*dim])

		// Feed-forward: x += Down(silu(Gate·xb) ⊙ Up·xb) with xb = norm(x).
		model.NormRows(s.XB, x, L.FFNNorm, n, dim, c.NormEps)
		s.MatMuls(s.XB[:n*dim], n, compute.Product{Out: s.HB[:n*hid], W: L.Gate}, compute.Product{Out: s.HB2[:n*hid], W: L.Up})
		model.GLU(s.Pool, compute.SwiGLU, s.HB[:n*hid], s.HB2[:n*hid])
		s.MatMul(s.Pool, s.Out[:n*dim], L.Down, s.HB[:n*hid], n)
		compute.Add(x, x, s.Out[:n*dim])
	}

	// Logits of the wanted rows: norm, then the output matrix.
	nOut := rows.NormOut(s.XB, x, w.OutputNorm, n, dim, all, c.NormEps)
	s.MatMul(s.Pool, logits, w.Output, s.XB[:nOut*dim], nOut)
	return nil
}

// scaleRotated multiplies the first ropeDim dimensions of each head by a
// (LongRoPE's attention factor, applied to cos and sin in the reference).
func scaleRotated(x []float32, numHeads, headDim, ropeDim int, a float32) {
	for h := range numHeads {
		compute.Scale(x[h*headDim:h*headDim+ropeDim], a)
	}
}
