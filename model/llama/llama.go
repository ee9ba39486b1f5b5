// Package llama is the Llama architecture (Llama 2/3/3.x, Mistral,
// TinyLlama, SmolLM, llama2.c checkpoints, and Mixtral): pre-norm decoder
// blocks with RMSNorm, rotary position embeddings on adjacent pairs
// (llama.cpp's converter permutes Q/K so the GGUF weights use the "normal"
// rotation), grouped-query attention and a SwiGLU feed-forward network —
// or, in a file with llama.expert_count (Mixtral), a sparse mixture of
// SwiGLU experts (model.Experts; Jiang et al. 2024, arXiv:2401.04088).
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
	AttnNorm  []float32      // (dim)
	Q         compute.Matrix // (qDim, dim)
	K         compute.Matrix // (kvDim, dim)
	V         compute.Matrix // (kvDim, dim)
	O         compute.Matrix // (dim, qDim)
	FFNNorm   []float32      // (dim)
	model.FFN                // the SwiGLU network, or the experts of a mixture
}

// Model is a loaded Llama model.
type Model struct {
	cfg   model.Config
	w     Weights
	bytes int64
}

// Load binds a llama-architecture file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfigMoE(f, "llama")
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
		}
		w.Layers[i].FFN = model.BindFFN(b, c, p)
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return &Model{cfg: cfg, w: w, bytes: b.ReadBytes(w.TokenEmbd, tied)}, nil
}

func (m *Model) Config() model.Config { return m.cfg }
func (m *Model) WeightBytes() int64   { return m.bytes }

// Session is one sequence: the shared decoder (KV caches, activation
// buffers, pool) running this architecture's forward pass.
type Session struct {
	*model.Decoder
	m *Model
}

func (m *Model) NewSession(opts model.SessionOptions) (model.Session, error) {
	s := &Session{m: m}
	d, err := model.NewDecoder(&m.cfg, opts, m, s.run)
	if err != nil {
		return nil, err
	}
	s.Decoder = d
	return s, nil
}

// run is the forward pass over rows of tokens (one sequence or several).
func (s *Session) run(ctx context.Context, rows model.Rows, tokens []int, all bool, logits []float32) error {
	c, w := &s.m.cfg, &s.m.w
	n, dim, qDim, kvDim := len(tokens), c.Dim, c.QDim(), c.KVDim()
	x := s.X[:n*dim]
	for i, id := range tokens { // x[i] = embedding row of token i
		w.TokenEmbd.Row(id, x[i*dim:(i+1)*dim])
	}
	scale := c.AttnScale() // 1/√head_dim (× YaRN's factor²)
	for l := range w.Layers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("infer: layer %d: %w", l, err)
		}
		L := &w.Layers[l]

		// Attention: xb = norm(x); q,k,v = xb·Wqᵀ, xb·Wkᵀ, xb·Wvᵀ; rotate q,k.
		model.NormRows(s.XB, x, L.AttnNorm, n, dim, c.NormEps)
		s.MatMuls(s.XB[:n*dim], n, compute.Product{Out: s.Q[:n*qDim], W: L.Q},
			compute.Product{Out: s.K[:n*kvDim], W: L.K}, compute.Product{Out: s.V[:n*kvDim], W: L.V})
		for i := range n {
			q, k := s.Q[i*qDim:(i+1)*qDim], s.K[i*kvDim:(i+1)*kvDim]
			s.Rope.Apply(q, c.NumHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, false, w.RopeFreqs)
			s.Rope.Apply(k, c.NumKVHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, false, w.RopeFreqs)
			rows.Store(l, i, k, s.V[i*kvDim:(i+1)*kvDim])
		}
		// att (n, qDim) = causal softmax(q·Kᵀ·scale)·V over each row's positions 0..p.
		rows.Attend(s.Pool, l, s.Att[:n*qDim], s.Q[:n*qDim], n, c.NumHeads, compute.Attn{Scale: scale, Window: c.SlidingWindow})
		s.MatMul(s.Pool, s.Out[:n*dim], L.O, s.Att[:n*qDim], n)
		compute.Add(x, x, s.Out[:n*dim])

		// Feed-forward: x += Down(silu(Gate·xb) ⊙ Up·xb) with xb = norm(x),
		// or the mixture of the experts the router picks for each row.
		model.NormRows(s.XB, x, L.FFNNorm, n, dim, c.NormEps)
		s.FFN(&L.FFN, s.Out[:n*dim], s.XB[:n*dim], n)
		compute.Add(x, x, s.Out[:n*dim])
	}

	// Logits of the wanted rows: norm, then the output matrix.
	nOut := rows.NormOut(s.XB, x, w.OutputNorm, n, dim, all, c.NormEps)
	s.MatMul(s.Pool, logits, w.Output, s.XB[:nOut*dim], nOut)
	return nil
}
