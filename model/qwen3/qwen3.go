// Package qwen3 is the Qwen3 architectures, dense (qwen3) and mixture of
// experts (qwen3moe, whose every feed-forward network is model.Experts):
// Llama's decoder with an
// RMSNorm over each query and key head before RoPE ("QK-norm"), RoPE on the
// two halves of each head (GPT-NeoX layout), no projection biases, and a
// head size given by attention.key_length (not always dim/heads).
//
// Reference: Qwen Team 2025, "Qwen3 Technical Report" (arXiv:2505.09388).
//
// Imports: model, compute, gguf.
package qwen3

import (
	"context"
	"fmt"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() {
	model.Register("qwen3", Load)
	model.Register("qwen3moe", LoadMoE)
}

// Weights are the bound tensors. Matrices alias the mapped file.
type Weights struct {
	TokenEmbd  compute.Matrix // (vocab, dim)
	OutputNorm []float32      // (dim)
	RopeFreqs  []float32      // (ropeDim/2) linear RoPE scaling divisors, or nil
	Output     compute.Matrix // (vocab, dim); token_embd when tied
	Layers     []Layer
}

// Layer is one decoder block.
type Layer struct {
	AttnNorm  []float32      // (dim)
	Q         compute.Matrix // (qDim, dim)
	K         compute.Matrix // (kvDim, dim)
	V         compute.Matrix // (kvDim, dim)
	QNorm     []float32      // (headDim) RMSNorm weight of every query head
	KNorm     []float32      // (headDim) RMSNorm weight of every key head
	O         compute.Matrix // (dim, qDim)
	FFNNorm   []float32      // (dim)
	model.FFN                // the SwiGLU network, or the experts of a mixture
}

// Model is a loaded Qwen3 model.
type Model struct {
	cfg   model.Config
	w     Weights
	bytes int64
}

// Load binds a qwen3-architecture file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfig(f, "qwen3")
	if err != nil {
		return nil, err
	}
	return load(f, cfg)
}

// LoadMoE binds a qwen3moe-architecture file (Qwen3-30B-A3B and its
// kind): Qwen3's blocks with a mixture of experts as every feed-forward
// network (model.Experts; the router's top-k probabilities renormalized,
// the models' norm_topk_prob).
func LoadMoE(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfigMoE(f, "qwen3moe")
	if err != nil {
		return nil, err
	}
	if cfg.Experts == 0 {
		return nil, fmt.Errorf("load: qwen3moe: metadata qwen3moe.expert_count is missing (a mixture-of-experts file needs it)")
	}
	return load(f, cfg)
}

func load(f *gguf.File, cfg model.Config) (model.Model, error) {
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
	w.Layers = make([]Layer, c.NumLayers)
	for i := range w.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		w.Layers[i] = Layer{
			AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
			Q:        b.Matrix(p+"attn_q.weight", c.QDim(), c.Dim),
			K:        b.Matrix(p+"attn_k.weight", c.KVDim(), c.Dim),
			V:        b.Matrix(p+"attn_v.weight", c.KVDim(), c.Dim),
			QNorm:    b.Vector(p+"attn_q_norm.weight", c.HeadDim),
			KNorm:    b.Vector(p+"attn_k_norm.weight", c.HeadDim),
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

		// Attention: xb = norm(x); q,k,v = xb·Wᵀ; norm each q and k head;
		// rotate q,k (NeoX halves).
		model.NormRows(s.XB, x, L.AttnNorm, n, dim, c.NormEps)
		s.MatMuls(s.XB[:n*dim], n, compute.Product{Out: s.Q[:n*qDim], W: L.Q},
			compute.Product{Out: s.K[:n*kvDim], W: L.K}, compute.Product{Out: s.V[:n*kvDim], W: L.V})
		for i := range n {
			q, k, v := s.Q[i*qDim:(i+1)*qDim], s.K[i*kvDim:(i+1)*kvDim], s.V[i*kvDim:(i+1)*kvDim]
			model.NormRows(q, q, L.QNorm, c.NumHeads, c.HeadDim, c.NormEps)
			model.NormRows(k, k, L.KNorm, c.NumKVHeads, c.HeadDim, c.NormEps)
			s.Rope.Apply(q, c.NumHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, true, w.RopeFreqs)
			s.Rope.Apply(k, c.NumKVHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, true, w.RopeFreqs)
			rows.Store(l, i, k, v)
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
