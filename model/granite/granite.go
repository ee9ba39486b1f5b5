// Package granite is IBM's Granite 3 architectures, dense (granite) and
// mixture of experts (granitemoe): Llama's decoder with four scalar
// multipliers from the metadata — the embeddings times embedding_scale,
// each sublayer's output times residual_scale before it joins the
// residual stream, attention scores times attention.scale (instead of
// 1/√head_dim), and the logits divided by logit_scale — and, in
// granitemoe, a mixture of experts as every feed-forward network
// (model.Experts).
//
// Reference: IBM Granite Team 2024, "Granite 3.0 Language Models"
// (https://github.com/ibm-granite/granite-3.0-language-models); the
// multipliers are those of Hugging Face transformers' GraniteConfig
// (embedding_multiplier, residual_multiplier, attention_multiplier,
// logits_scaling), which llama.cpp's converter writes as the four keys.
//
// Imports: model, compute, gguf.
package granite

import (
	"context"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() {
	model.Register("granite", func(f *gguf.File) (model.Model, error) { return load(f, "granite") })
	model.Register("granitemoe", func(f *gguf.File) (model.Model, error) { return load(f, "granitemoe") })
}

// Scales are the four multipliers.
type Scales struct {
	Embedding float32 // <arch>.embedding_scale (default 1)
	Residual  float32 // <arch>.residual_scale (default 1)
	Attention float32 // <arch>.attention.scale (default 1/√head_dim)
	Logit     float32 // <arch>.logit_scale: logits are divided by it (default 1)
}

// Weights are the bound tensors. Matrices alias the mapped file.
type Weights struct {
	TokenEmbd  compute.Matrix // (vocab, dim)
	OutputNorm []float32      // (dim)
	Output     compute.Matrix // (vocab, dim); token_embd when tied
	RopeFreqs  []float32      // (ropeDim/2) linear RoPE scaling divisors, or nil
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

// Model is a loaded Granite model.
type Model struct {
	cfg   model.Config
	sc    Scales
	w     Weights
	bytes int64
}

// load binds a granite or granitemoe file.
func load(f *gguf.File, arch string) (model.Model, error) {
	read := model.ReadConfig
	if arch == "granitemoe" {
		read = model.ReadConfigMoE
	}
	cfg, err := read(f, arch)
	if err != nil {
		return nil, err
	}
	if arch == "granitemoe" && cfg.Experts == 0 {
		return nil, fmt.Errorf("load: granitemoe: metadata granitemoe.expert_count is missing (a mixture-of-experts file needs it)")
	}
	c := &cfg
	sc := Scales{Embedding: 1, Residual: 1, Attention: float32(1 / math.Sqrt(float64(c.HeadDim))), Logit: 1}
	for _, k := range []struct {
		key string
		dst *float32
	}{{"embedding_scale", &sc.Embedding}, {"residual_scale", &sc.Residual}, {"attention.scale", &sc.Attention}, {"logit_scale", &sc.Logit}} {
		v, err := model.Float(f, arch, k.key, *k.dst)
		if err != nil {
			return nil, err
		}
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("load: metadata %s.%s = %g must be a positive number", arch, k.key, v)
		}
		*k.dst = v
	}
	if c.RopeYaRN != nil { // YaRN's factor on q and k
		m := c.RopeYaRN.Mscale()
		sc.Attention *= float32(m * m)
	}
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
		L := &w.Layers[i]
		*L = Layer{
			AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
			Q:        b.Matrix(p+"attn_q.weight", c.QDim(), c.Dim),
			K:        b.Matrix(p+"attn_k.weight", c.KVDim(), c.Dim),
			V:        b.Matrix(p+"attn_v.weight", c.KVDim(), c.Dim),
			O:        b.Matrix(p+"attn_output.weight", c.Dim, c.QDim()),
			FFNNorm:  b.Vector(p+"ffn_norm.weight", c.Dim),
		}
		L.FFN = model.BindFFN(b, c, p)
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return &Model{cfg: cfg, sc: sc, w: w, bytes: b.ReadBytes(w.TokenEmbd, tied)}, nil
}

func (m *Model) Config() model.Config { return m.cfg }
func (m *Model) WeightBytes() int64   { return m.bytes }

// Scales returns the model's multipliers.
func (m *Model) Scales() Scales { return m.sc }

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
	c, w, sc := &s.m.cfg, &s.m.w, s.m.sc
	n, dim, qDim, kvDim := len(tokens), c.Dim, c.QDim(), c.KVDim()
	x := s.X[:n*dim]
	for i, id := range tokens { // x[i] = embedding row of token i × embedding_scale
		w.TokenEmbd.Row(id, x[i*dim:(i+1)*dim])
	}
	compute.Scale(x, sc.Embedding)
	for l := range w.Layers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("infer: layer %d: %w", l, err)
		}
		L := &w.Layers[l]

		// Attention: xb = norm(x); q,k,v = xb·Wᵀ; rotate q,k (adjacent
		// pairs, as Llama).
		model.NormRows(s.XB, x, L.AttnNorm, n, dim, c.NormEps)
		s.MatMuls(s.XB[:n*dim], n, compute.Product{Out: s.Q[:n*qDim], W: L.Q},
			compute.Product{Out: s.K[:n*kvDim], W: L.K}, compute.Product{Out: s.V[:n*kvDim], W: L.V})
		for i := range n {
			q, k := s.Q[i*qDim:(i+1)*qDim], s.K[i*kvDim:(i+1)*kvDim]
			s.Rope.Apply(q, c.NumHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, false, w.RopeFreqs)
			s.Rope.Apply(k, c.NumKVHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, false, w.RopeFreqs)
			rows.Store(l, i, k, s.V[i*kvDim:(i+1)*kvDim])
		}
		// att (n, qDim) = causal softmax(q·Kᵀ·attention_scale)·V.
		rows.Attend(s.Pool, l, s.Att[:n*qDim], s.Q[:n*qDim], n, c.NumHeads, compute.Attn{Scale: sc.Attention, Window: c.SlidingWindow})
		s.MatMul(s.Pool, s.Out[:n*dim], L.O, s.Att[:n*qDim], n)
		compute.Scale(s.Out[:n*dim], sc.Residual)
		compute.Add(x, x, s.Out[:n*dim])

		// Feed-forward (or the experts) on xb = norm(x), × residual_scale.
		model.NormRows(s.XB, x, L.FFNNorm, n, dim, c.NormEps)
		s.FFN(&L.FFN, s.Out[:n*dim], s.XB[:n*dim], n)
		compute.Scale(s.Out[:n*dim], sc.Residual)
		compute.Add(x, x, s.Out[:n*dim])
	}

	// Logits of the wanted rows: norm, the output matrix, ÷ logit_scale.
	nOut := rows.NormOut(s.XB, x, w.OutputNorm, n, dim, all, c.NormEps)
	out := logits[:nOut*c.VocabSize] // none for Hidden: the normed states are the result
	s.MatMul(s.Pool, out, w.Output, s.XB[:nOut*dim], nOut)
	compute.Scale(out, 1/sc.Logit)
	return nil
}
