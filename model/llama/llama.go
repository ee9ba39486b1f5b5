// Package llama is the Llama architecture (Llama 2/3/3.x, Mistral,
// TinyLlama, SmolLM, llama2.c checkpoints): pre-norm decoder blocks with
// RMSNorm, rotary position embeddings on adjacent pairs (llama.cpp's
// converter permutes Q/K so the GGUF weights use the "normal" rotation),
// grouped-query attention and a SwiGLU feed-forward network.
//
// References: Touvron et al. 2023, "Llama 2" (arXiv:2307.09288); Su et al.
// 2021, "RoFormer" (arXiv:2104.09864) for RoPE; Shazeer 2020, "GLU Variants
// Improve Transformer" (arXiv:2002.05202) for SwiGLU; Ainslie et al. 2023,
// "GQA" (arXiv:2305.13245). Llama 3.1 RoPE frequency factors come from the
// optional rope_freqs.weight tensor (angle divided by factor[i]).
//
// Imports: model, compute, gguf.
package llama

import (
	"context"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() { model.Register("llama", Load) }

// Weights are the bound tensors. Matrices alias the mapped file.
type Weights struct {
	TokenEmbd  compute.Matrix // (vocab, dim)
	OutputNorm []float32      // (dim)
	Output     compute.Matrix // (vocab, dim); token_embd when tied
	RopeFreqs  []float32      // (ropeDim/2) divisors of the angles (rope_freqs × linear scaling), or nil
	Layers     []Layer
}

// Layer is one decoder block.
type Layer struct {
	AttnNorm []float32      // (dim)
	Q        compute.Matrix // (qDim, dim)
	K        compute.Matrix // (kvDim, dim)
	V        compute.Matrix // (kvDim, dim)
	O        compute.Matrix // (dim, qDim)
	FFNNorm  []float32      // (dim)
	Gate     compute.Matrix // (hiddenDim, dim)
	Up       compute.Matrix // (hiddenDim, dim)
	Down     compute.Matrix // (dim, hiddenDim)
}

// Model is a loaded Llama model.
type Model struct {
	cfg   model.Config
	w     Weights
	bytes int64
}

// Load binds a llama-architecture file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfig(f, "llama")
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
	if b.Has("rope_freqs.weight") {
		w.RopeFreqs = b.Vector("rope_freqs.weight", c.RopeDim/2)
	}
	w.RopeFreqs = c.RopeFactors(w.RopeFreqs)
	w.Layers = make([]Layer, c.NumLayers)
	for i := range w.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		w.Layers[i] = Layer{
			AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
			Q:        b.Matrix(p+"attn_q.weight", c.QDim(), c.Dim),
			K:        b.Matrix(p+"attn_k.weight", c.KVDim(), c.Dim),
			V:        b.Matrix(p+"attn_v.weight", c.KVDim(), c.Dim),
			O:        b.Matrix(p+"attn_output.weight", c.Dim, c.QDim()),
			FFNNorm:  b.Vector(p+"ffn_norm.weight", c.Dim),
			Gate:     b.Matrix(p+"ffn_gate.weight", c.HiddenDim, c.Dim),
			Up:       b.Matrix(p+"ffn_up.weight", c.HiddenDim, c.Dim),
			Down:     b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim),
		}
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return &Model{cfg: cfg, w: w, bytes: b.ReadBytes(w.TokenEmbd, tied)}, nil
}

func (m *Model) Config() model.Config { return m.cfg }
func (m *Model) WeightBytes() int64   { return m.bytes }

// Session is one sequence: the KV caches and the activation buffers, all
// allocated once.
type Session struct {
	model.Runtime
	m *Model

	x   []float32 // (batch, dim) residual stream
	xb  []float32 // (batch, dim) normed input of a sublayer
	q   []float32 // (batch, qDim)
	k   []float32 // (batch, kvDim)
	v   []float32 // (batch, kvDim)
	att []float32 // (batch, qDim) attention output
	out []float32 // (batch, dim) sublayer output
	hb  []float32 // (batch, hiddenDim) gate
	hb2 []float32 // (batch, hiddenDim) up
}

func (m *Model) NewSession(opts model.SessionOptions) (model.Session, error) {
	c := &m.cfg
	rt, err := model.NewRuntime(c, opts)
	if err != nil {
		return nil, err
	}
	n := rt.Opts.Batch
	return &Session{
		Runtime: rt, m: m,
		x: make([]float32, n*c.Dim), xb: make([]float32, n*c.Dim),
		q: make([]float32, n*c.QDim()), k: make([]float32, n*c.KVDim()), v: make([]float32, n*c.KVDim()),
		att: make([]float32, n*c.QDim()), out: make([]float32, n*c.Dim),
		hb: make([]float32, n*c.HiddenDim), hb2: make([]float32, n*c.HiddenDim),
	}, nil
}

// ArenaBytes is the size of the activation buffers.
func (s *Session) ArenaBytes() int64 {
	return model.FloatBytes(s.x, s.xb, s.q, s.k, s.v, s.att, s.out, s.hb, s.hb2)
}

// Forward runs the decoder over tokens at positions pos.. (see model.Session).
func (s *Session) Forward(ctx context.Context, tokens []int, pos int, logits []float32) error {
	all, err := model.CheckForward(&s.m.cfg, &s.Opts, tokens, pos, logits)
	if err != nil {
		return err
	}
	return s.run(ctx, model.OneSeq(&s.Runtime, pos), tokens, all, logits)
}

// SameModel reports whether o is a session of the same loaded model.
func (s *Session) SameModel(o model.Session) bool {
	t, ok := o.(*Session)
	return ok && t.m == s.m
}

// StepMany runs rows of several sessions with s's buffers and pool (see
// model.Step, which checked the rows).
func (s *Session) StepMany(ctx context.Context, rows model.Rows, tokens []int, logits []float32) error {
	return s.run(ctx, rows, tokens, true, logits)
}

// run is the forward pass over rows of tokens (one sequence or several).
func (s *Session) run(ctx context.Context, rows model.Rows, tokens []int, all bool, logits []float32) error {
	c, w := &s.m.cfg, &s.m.w
	n, dim, qDim, kvDim, hid := len(tokens), c.Dim, c.QDim(), c.KVDim(), c.HiddenDim
	x := s.x[:n*dim]
	for i, id := range tokens { // x[i] = embedding row of token i
		w.TokenEmbd.Row(id, x[i*dim:(i+1)*dim])
	}
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	for l := range w.Layers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("infer: layer %d: %w", l, err)
		}
		L := &w.Layers[l]

		// Attention: xb = norm(x); q,k,v = xb·Wqᵀ, xb·Wkᵀ, xb·Wvᵀ; rotate q,k.
		model.NormRows(s.xb, x, L.AttnNorm, n, dim, c.NormEps)
		s.MatMuls(s.xb[:n*dim], n, compute.Product{Out: s.q[:n*qDim], W: L.Q},
			compute.Product{Out: s.k[:n*kvDim], W: L.K}, compute.Product{Out: s.v[:n*kvDim], W: L.V})
		for i := range n {
			q, k := s.q[i*qDim:(i+1)*qDim], s.k[i*kvDim:(i+1)*kvDim]
			s.Rope.Apply(q, c.NumHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, false, w.RopeFreqs)
			s.Rope.Apply(k, c.NumKVHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, false, w.RopeFreqs)
			rows.Store(l, i, k, s.v[i*kvDim:(i+1)*kvDim])
		}
		// att (n, qDim) = causal softmax(q·Kᵀ·scale)·V over each row's positions 0..p.
		rows.Attend(s.Pool, l, s.att[:n*qDim], s.q[:n*qDim], n, c.NumHeads, compute.Attn{Scale: scale, Window: c.SlidingWindow})
		s.MatMul(s.Pool, s.out[:n*dim], L.O, s.att[:n*qDim], n)
		compute.Add(x, x, s.out[:n*dim])

		// Feed-forward: x += Down(silu(Gate·xb) ⊙ Up·xb) with xb = norm(x).
		model.NormRows(s.xb, x, L.FFNNorm, n, dim, c.NormEps)
		s.MatMuls(s.xb[:n*dim], n, compute.Product{Out: s.hb[:n*hid], W: L.Gate}, compute.Product{Out: s.hb2[:n*hid], W: L.Up})
		model.GLU(s.Pool, compute.SiLU, s.hb[:n*hid], s.hb2[:n*hid])
		s.MatMul(s.Pool, s.out[:n*dim], L.Down, s.hb[:n*hid], n)
		compute.Add(x, x, s.out[:n*dim])
	}

	// Logits of the wanted rows: norm, then the output matrix.
	nOut := rows.NormOut(s.xb, x, w.OutputNorm, n, dim, all, c.NormEps)
	s.MatMul(s.Pool, logits, w.Output, s.xb[:nOut*dim], nOut)
	return nil
}
