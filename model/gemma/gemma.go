// Package gemma is the text decoder of Gemma 2 and Gemma 3: pre- and
// post-norms around both sublayers (four RMSNorms per block; llama.cpp's
// converter stores the norm weights with Gemma's "1 +" already added), a
// GELU-gated feed-forward network, embeddings scaled by √dim, RoPE on the
// two halves of each head, and local sliding-window layers interleaved
// with global ones. The two differ in three places:
//
//   - Gemma 3 (gemma3.go) normalizes each query and key head (RMSNorm)
//     before RoPE, has five local layers to one global by default, and
//     gives the local layers RoPE base 10000 without scaling.
//   - Gemma 2 (gemma2.go) alternates local and global layers (even layers
//     local), with one RoPE base, and soft-caps the attention scores,
//     s → 50·tanh(s/50) by default.
//   - Both soft-cap the final logits when the file sets it (Gemma 2: 30).
//
// References: Gemma Team 2024, "Gemma 2: Improving Open Language Models at
// a Practical Size" (arXiv:2408.00118); Gemma Team 2025, "Gemma 3
// Technical Report" (arXiv:2503.19786).
//
// Imports: model, compute, gguf.
package gemma

import (
	"context"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

// Weights are the bound tensors. Matrices alias the mapped file.
type Weights struct {
	TokenEmbd  compute.Matrix // (vocab, dim)
	OutputNorm []float32      // (dim)
	Output     compute.Matrix // (vocab, dim); token_embd when tied
	RopeFreqs  []float32      // (ropeDim/2) linear scaling divisors of the global layers, or nil
	Layers     []Layer
}

// Layer is one decoder block.
type Layer struct {
	Local    bool           // sliding-window attention with the local RoPE base
	AttnNorm []float32      // (dim)
	Q        compute.Matrix // (qDim, dim)
	K        compute.Matrix // (kvDim, dim)
	V        compute.Matrix // (kvDim, dim)
	QNorm    []float32      // (headDim) RMSNorm weight of every query head (Gemma 3; nil in Gemma 2)
	KNorm    []float32      // (headDim) RMSNorm weight of every key head (Gemma 3; nil in Gemma 2)
	O        compute.Matrix // (dim, qDim)
	PostAttn []float32      // (dim) norm of the attention output
	FFNNorm  []float32      // (dim)
	Gate     compute.Matrix // (hiddenDim, dim)
	Up       compute.Matrix // (hiddenDim, dim)
	Down     compute.Matrix // (dim, hiddenDim)
	PostFFN  []float32      // (dim) norm of the feed-forward output
}

// Model is a loaded Gemma 2 or Gemma 3 model.
type Model struct {
	cfg        model.Config
	w          Weights
	bytes      int64
	attnScale  float32   // multiplies q·k
	attnCap    float32   // attention scores = attnCap·tanh(s/attnCap); 0 = off (Gemma 2)
	softcap    float32   // final logits = softcap·tanh(logits/softcap); 0 = off
	localBase  float32   // RoPE base of the local layers
	localFreqs []float32 // RoPE scaling divisors of the local layers, or nil
}

// bind binds the tensors both generations share; qkNorm adds Gemma 3's
// query and key head norms; local tells which layers use the sliding
// window.
func bind(f *gguf.File, c *model.Config, qkNorm bool, local func(layer int) bool) (Weights, int64, error) {
	b := model.NewBinder(f)
	w := Weights{
		TokenEmbd:  b.Matrix("token_embd.weight", c.VocabSize, c.Dim),
		OutputNorm: b.Vector("output_norm.weight", c.Dim),
		RopeFreqs:  c.RopeFactors(nil),
	}
	tied := !b.Has("output.weight")
	if tied {
		w.Output = w.TokenEmbd
	} else {
		w.Output = b.Matrix("output.weight", c.VocabSize, c.Dim)
	}
	w.Layers = make([]Layer, c.NumLayers)
	for i := range w.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		L := Layer{
			Local:    local(i),
			AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
			Q:        b.Matrix(p+"attn_q.weight", c.QDim(), c.Dim),
			K:        b.Matrix(p+"attn_k.weight", c.KVDim(), c.Dim),
			V:        b.Matrix(p+"attn_v.weight", c.KVDim(), c.Dim),
			O:        b.Matrix(p+"attn_output.weight", c.Dim, c.QDim()),
			PostAttn: b.Vector(p+"post_attention_norm.weight", c.Dim),
			FFNNorm:  b.Vector(p+"ffn_norm.weight", c.Dim),
			Gate:     b.Matrix(p+"ffn_gate.weight", c.HiddenDim, c.Dim),
			Up:       b.Matrix(p+"ffn_up.weight", c.HiddenDim, c.Dim),
			Down:     b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim),
			PostFFN:  b.Vector(p+"post_ffw_norm.weight", c.Dim),
		}
		if qkNorm {
			L.QNorm = b.Vector(p+"attn_q_norm.weight", c.HeadDim)
			L.KNorm = b.Vector(p+"attn_k_norm.weight", c.HeadDim)
		}
		w.Layers[i] = L
	}
	if err := b.Err(); err != nil {
		return Weights{}, 0, err
	}
	return w, b.ReadBytes(w.TokenEmbd, tied), nil
}

// softcap returns <arch>.<key> if the file sets it positive, else 0.
func softcap(f *gguf.File, arch, key string) float32 {
	if v, err := f.Meta.Float(arch + "." + key); err == nil && v > 0 {
		return float32(v)
	}
	return 0
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
	n, dim, qDim, kvDim, hid := len(tokens), c.Dim, c.QDim(), c.KVDim(), c.HiddenDim
	x := s.X[:n*dim]
	for i, id := range tokens { // x[i] = √dim · embedding row of token i
		w.TokenEmbd.Row(id, x[i*dim:(i+1)*dim])
	}
	compute.Scale(x, float32(math.Sqrt(float64(dim))))
	for l := range w.Layers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("infer: layer %d: %w", l, err)
		}
		L := &w.Layers[l]
		base, freqs, window := c.RopeBase, w.RopeFreqs, 0
		if L.Local {
			base, freqs, window = s.m.localBase, s.m.localFreqs, c.SlidingWindow
		}

		// Attention: xb = norm(x); q,k,v = xb·Wᵀ; (Gemma 3) norm each q and
		// k head; rotate q,k (NeoX halves); x += postnorm(attention·Woᵀ).
		model.NormRows(s.XB, x, L.AttnNorm, n, dim, c.NormEps)
		s.MatMuls(s.XB[:n*dim], n, compute.Product{Out: s.Q[:n*qDim], W: L.Q},
			compute.Product{Out: s.K[:n*kvDim], W: L.K}, compute.Product{Out: s.V[:n*kvDim], W: L.V})
		for i := range n {
			q, k, v := s.Q[i*qDim:(i+1)*qDim], s.K[i*kvDim:(i+1)*kvDim], s.V[i*kvDim:(i+1)*kvDim]
			if L.QNorm != nil {
				model.NormRows(q, q, L.QNorm, c.NumHeads, c.HeadDim, c.NormEps)
				model.NormRows(k, k, L.KNorm, c.NumKVHeads, c.HeadDim, c.NormEps)
			}
			s.Rope.Apply(q, c.NumHeads, c.HeadDim, c.RopeDim, rows.Pos(i), base, true, freqs)
			s.Rope.Apply(k, c.NumKVHeads, c.HeadDim, c.RopeDim, rows.Pos(i), base, true, freqs)
			rows.Store(l, i, k, v)
		}
		// att (n, qDim) = causal softmax(cap(q·Kᵀ·scale))·V; local layers
		// see only the last window positions.
		rows.Attend(s.Pool, l, s.Att[:n*qDim], s.Q[:n*qDim], n, c.NumHeads, compute.Attn{Scale: s.m.attnScale, Window: window, Softcap: s.m.attnCap})
		s.MatMul(s.Pool, s.Out[:n*dim], L.O, s.Att[:n*qDim], n)
		model.NormRows(s.Out, s.Out, L.PostAttn, n, dim, c.NormEps)
		compute.Add(x, x, s.Out[:n*dim])

		// Feed-forward: x += postnorm(Down(gelu(Gate·xb) ⊙ Up·xb)), xb = norm(x).
		model.NormRows(s.XB, x, L.FFNNorm, n, dim, c.NormEps)
		s.MatMuls(s.XB[:n*dim], n, compute.Product{Out: s.HB[:n*hid], W: L.Gate}, compute.Product{Out: s.HB2[:n*hid], W: L.Up})
		model.GLU(s.Pool, compute.GeGLU, s.HB[:n*hid], s.HB2[:n*hid])
		s.MatMul(s.Pool, s.Out[:n*dim], L.Down, s.HB[:n*hid], n)
		model.NormRows(s.Out, s.Out, L.PostFFN, n, dim, c.NormEps)
		compute.Add(x, x, s.Out[:n*dim])
	}

	// Logits of the wanted rows: norm, the output matrix, soft-capping.
	nOut := rows.NormOut(s.XB, x, w.OutputNorm, n, dim, all, c.NormEps)
	s.MatMul(s.Pool, logits, w.Output, s.XB[:nOut*dim], nOut)
	if limit := s.m.softcap; limit > 0 {
		for i, v := range logits {
			logits[i] = limit * float32(math.Tanh(float64(v/limit)))
		}
	}
	return nil
}
