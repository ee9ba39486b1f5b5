// Package gptoss is OpenAI's gpt-oss (gpt-oss-20b, gpt-oss-120b; the
// GGUF architecture "gpt-oss"): a decoder whose every feed-forward network
// is a mixture of experts, with
//   - biases on the query, key, value and output projections;
//   - a learned attention sink per query head (a logit each head's softmax
//     normalizes over, with no value behind it: compute.Attn.Sinks);
//   - a sliding window on alternate layers (the even ones, as llama.cpp's
//     sliding_window_pattern 2), full attention on the others;
//   - RoPE on the two halves of each head (NeoX), usually with YaRN;
//   - experts with biases after the router and each matrix, the router's
//     chosen scores softmaxed, and the clamped SwiGLU of compute.SwiGLUOAI.
//
// The expert matrices of released files are MXFP4.
//
// Reference: OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card"
// (arXiv:2508.10925).
//
// Imports: model, compute, gguf.
package gptoss

import (
	"context"
	"fmt"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() { model.Register("gpt-oss", Load) }

// Weights are the bound tensors. Matrices alias the mapped file.
type Weights struct {
	TokenEmbd  compute.Matrix // (vocab, dim)
	RopeFreqs  []float32      // (ropeDim/2) linear RoPE scaling divisors, or nil
	OutputNorm []float32      // (dim)
	Output     compute.Matrix // (vocab, dim)
	Layers     []Layer
}

// Layer is one decoder block.
type Layer struct {
	AttnNorm []float32      // (dim)
	Q        compute.Matrix // (qDim, dim)
	K        compute.Matrix // (kvDim, dim)
	V        compute.Matrix // (kvDim, dim)
	QBias    []float32      // (qDim)
	KBias    []float32      // (kvDim)
	VBias    []float32      // (kvDim)
	Sinks    []float32      // (heads): attn_sinks
	O        compute.Matrix // (dim, qDim)
	OBias    []float32      // (dim)
	FFNNorm  []float32      // (dim): post_attention_norm, the experts' input norm
	Window   int            // positions this layer sees (0: all)
	model.FFN
}

// Model is a loaded gpt-oss model.
type Model struct {
	cfg   model.Config
	w     Weights
	bytes int64
}

// Load binds a gpt-oss file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfigMoE(f, "gpt-oss")
	if err != nil {
		return nil, err
	}
	c := &cfg
	if c.Experts == 0 {
		return nil, fmt.Errorf("load: gpt-oss: metadata gpt-oss.expert_count is missing (every block is a mixture of experts)")
	}
	if c.SlidingWindow == 0 {
		return nil, fmt.Errorf("load: gpt-oss: metadata gpt-oss.attention.sliding_window is missing (its even layers attend within a window)")
	}
	period, err := swaPeriod(f)
	if err != nil {
		return nil, err
	}
	b := model.NewBinder(f)
	w := Weights{
		RopeFreqs:  c.RopeFactors(nil),
		TokenEmbd:  b.Matrix("token_embd.weight", c.VocabSize, c.Dim),
		OutputNorm: b.Vector("output_norm.weight", c.Dim),
		Output:     b.Matrix("output.weight", c.VocabSize, c.Dim),
	}
	w.Layers = make([]Layer, c.NumLayers)
	for i := range w.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		L := Layer{
			AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
			Q:        b.Matrix(p+"attn_q.weight", c.QDim(), c.Dim),
			K:        b.Matrix(p+"attn_k.weight", c.KVDim(), c.Dim),
			V:        b.Matrix(p+"attn_v.weight", c.KVDim(), c.Dim),
			QBias:    b.Vector(p+"attn_q.bias", c.QDim()),
			KBias:    b.Vector(p+"attn_k.bias", c.KVDim()),
			VBias:    b.Vector(p+"attn_v.bias", c.KVDim()),
			Sinks:    b.Vector(p+"attn_sinks.weight", c.NumHeads),
			O:        b.Matrix(p+"attn_output.weight", c.Dim, c.QDim()),
			OBias:    b.Vector(p+"attn_output.bias", c.Dim),
			FFNNorm:  b.Vector(p+"post_attention_norm.weight", c.Dim),
		}
		if i%period < period-1 { // llama.cpp's pattern: the last layer of each period is full
			L.Window = c.SlidingWindow
		}
		L.FFN = model.BindFFN(b, c, p)
		e := L.FFN.MoE
		e.RouterBias = b.Vector(p+"ffn_gate_inp.bias", c.Experts)
		e.GateBias = b.Vectors(p+"ffn_gate_exps.bias", c.Experts, c.ExpertHiddenDim)
		e.UpBias = b.Vectors(p+"ffn_up_exps.bias", c.Experts, c.ExpertHiddenDim)
		e.DownBias = b.Vectors(p+"ffn_down_exps.bias", c.Experts, c.Dim)
		e.Act = compute.SwiGLUOAI
		w.Layers[i] = L
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return &Model{cfg: cfg, w: w, bytes: b.ReadBytes(w.TokenEmbd, false)}, nil
}

// swaPeriod reads gpt-oss.attention.sliding_window_pattern, the period of
// the layers' pattern (2 when absent: even layers windowed, odd ones full).
func swaPeriod(f *gguf.File) (int, error) {
	const key = "gpt-oss.attention.sliding_window_pattern"
	if !f.Meta.Has(key) {
		return 2, nil
	}
	v, err := f.Meta.Int(key)
	if err != nil || v < 1 || v > 1<<16 {
		return 0, fmt.Errorf("load: gpt-oss: metadata %s: want a period of at least 1 (a per-layer array is not supported)", key)
	}
	return int(v), nil
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

		// Attention: xb = norm(x); q,k,v = xb·Wᵀ + bias; rotate q,k (NeoX halves).
		model.NormRows(s.XB, x, L.AttnNorm, n, dim, c.NormEps)
		s.MatMuls(s.XB[:n*dim], n, compute.Product{Out: s.Q[:n*qDim], W: L.Q},
			compute.Product{Out: s.K[:n*kvDim], W: L.K}, compute.Product{Out: s.V[:n*kvDim], W: L.V})
		for i := range n {
			q, k, v := s.Q[i*qDim:(i+1)*qDim], s.K[i*kvDim:(i+1)*kvDim], s.V[i*kvDim:(i+1)*kvDim]
			compute.Add(q, q, L.QBias)
			compute.Add(k, k, L.KBias)
			compute.Add(v, v, L.VBias)
			s.Rope.Apply(q, c.NumHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, true, w.RopeFreqs)
			s.Rope.Apply(k, c.NumKVHeads, c.HeadDim, c.RopeDim, rows.Pos(i), c.RopeBase, true, w.RopeFreqs)
			rows.Store(l, i, k, v)
		}
		// att (n, qDim) = causal softmax(q·Kᵀ·scale, with the head's sink)·V
		// over each row's positions (the window's, on a windowed layer).
		rows.Attend(s.Pool, l, s.Att[:n*qDim], s.Q[:n*qDim], n, c.NumHeads, compute.Attn{Scale: scale, Window: L.Window, Sinks: L.Sinks})
		s.MatMul(s.Pool, s.Out[:n*dim], L.O, s.Att[:n*qDim], n)
		for i := range n {
			o := s.Out[i*dim : (i+1)*dim]
			compute.Add(o, o, L.OBias)
		}
		compute.Add(x, x, s.Out[:n*dim])

		// Experts: x += the mixture the router picks for each row of
		// xb = norm(x) (biased, clamped SwiGLU experts).
		model.NormRows(s.XB, x, L.FFNNorm, n, dim, c.NormEps)
		s.FFN(&L.FFN, s.Out[:n*dim], s.XB[:n*dim], n)
		compute.Add(x, x, s.Out[:n*dim])
	}

	// Logits of the wanted rows: norm, then the output matrix.
	nOut := rows.NormOut(s.XB, x, w.OutputNorm, n, dim, all, c.NormEps)
	s.MatMul(s.Pool, logits, w.Output, s.XB[:nOut*dim], nOut)
	return nil
}
