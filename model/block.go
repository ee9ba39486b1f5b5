package model

import (
	"context"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/compute"
)

// Block is one decoder block of the Llama family (Touvron et al. 2023,
// arXiv:2307.09288): pre-norm attention with RoPE over a grouped-query KV
// cache, then a pre-norm feed-forward network, each added to the residual
// stream. The parts in parentheses are what the family's architectures
// add, absent when nil or zero; with the model's (Transformer, Arch), the
// forward pass is:
//
//	x = embedding(tokens) (× EmbedScale)
//	each block:
//	  xb = norm(x)                              AttnNorm
//	  q, k, v = xb·Wᵀ (+ bias)                  Q K V (QBias KBias VBias)
//	  (q, k = headnorm(q), headnorm(k))         (QNorm KNorm)
//	  q, k = rope(q), rope(k) (× RotatedScale)  Rope or Transformer.Rope; NeoX
//	  cache k, v
//	  att = softmax(cap(q·Kᵀ·scale), sinks)·V   Window (Sinks); AttnScale (AttnSoftcap)
//	  x += postnorm(att·Woᵀ + bias) (× res)     O (OBias PostAttnNorm); (ResidualScale)
//	  x += postnorm(FFN(norm(x))) (× res)       FFNNorm FFN (PostFFNNorm); (ResidualScale)
//	logits = cap(norm(x)·Outputᵀ (× scale))     OutputNorm Output; (LogitScale LogitSoftcap)
type Block struct {
	AttnNorm     []float32      // (dim)
	Q            compute.Matrix // (qDim, dim)
	K            compute.Matrix // (kvDim, dim)
	V            compute.Matrix // (kvDim, dim)
	QBias        []float32      // (qDim), or nil (Qwen2, gpt-oss)
	KBias        []float32      // (kvDim), or nil
	VBias        []float32      // (kvDim), or nil
	QNorm        []float32      // (headDim) RMSNorm weight of every query head before RoPE, or nil (Qwen3, Gemma 3)
	KNorm        []float32      // (headDim) the same for every key head
	Rope         *RoPE          // this layer's RoPE, or nil: the model's (Gemma's local layers have their own)
	Window       int            // positions a query sees (sliding-window attention; 0: all)
	Sinks        []float32      // (numHeads) learned attention sinks (compute.Attn.Sinks), or nil (gpt-oss)
	O            compute.Matrix // (dim, qDim)
	OBias        []float32      // (dim), or nil (gpt-oss)
	PostAttnNorm []float32      // (dim) norm of the attention output, or nil (Gemma)
	FFNNorm      []float32      // (dim)
	FFN                         // the gated network, or the experts of a mixture
	PostFFNNorm  []float32      // (dim) norm of the feed-forward output, or nil (Gemma)
}

// RoPE is a rotary position embedding's base and per-pair divisors of its
// angles (nil: none; Config.RopeFactors).
type RoPE struct {
	Base  float32
	Freqs []float32 // (ropeDim/2), or nil
}

// Arch is what an architecture of the family changes once for the whole
// model. The zero value is Llama's.
type Arch struct {
	NeoX        bool    // RoPE rotates the two halves of each head (GPT-NeoX), not adjacent pairs
	AttnScale   float32 // multiplies q·k; 0: Config.AttnScale (1/√headDim, with YaRN's factor)
	AttnSoftcap float32 // attention scores s → cap·tanh(s/cap) (Gemma 2); 0: off
	// RotatedScale multiplies the rotated dimensions of q and k after RoPE
	// (LongRoPE's attention factor, Phi-3); 0: 1.
	RotatedScale  float32
	EmbedScale    float32 // multiplies the token embeddings (Gemma's √dim, Granite's embedding_scale); 0: 1
	ResidualScale float32 // multiplies each sublayer's output before it joins the residual stream (Granite); 0: 1
	LogitScale    float32 // multiplies the logits (Granite's 1/logit_scale); 0: 1
	LogitSoftcap  float32 // logits l → cap·tanh(l/cap) (Gemma); 0: off
	// SessionRope, when set, gives a session's RoPE divisors for its
	// options in place of Transformer.Rope.Freqs (Phi-3's LongRoPE picks
	// its factors by the session's context).
	SessionRope func(SessionOptions) []float32
}

// Transformer is a loaded model of the Llama family: the token embedding,
// the blocks and the output, run by one forward pass that the Arch and
// the blocks' parts adjust. An architecture's package is its loader: it
// reads the Config, binds the tensors (NewTransformer, BindBlock or its
// own names) and says what differs (Arch, per-layer parts).
type Transformer struct {
	Arch       Arch
	TokenEmbd  compute.Matrix // (vocab, dim)
	OutputNorm []float32      // (dim)
	Output     compute.Matrix // (vocab, dim); token_embd when tied
	Tied       bool           // the file has no output.weight: Output is TokenEmbd
	Rope       RoPE           // every layer's RoPE unless a block has its own
	Layers     []Block
	cfg        Config
	bytes      int64
}

// NewTransformer starts binding a model of configuration c with b: the
// token embedding, the output norm and the output matrix (the embedding
// when the file has no output.weight), RoPE with c's base and divisors
// (Config.RopeFactors of no file factors), and c.NumLayers empty blocks
// for the loader to bind (BindBlock). Finish ends the binding.
func NewTransformer(b *Binder, c Config) *Transformer {
	t := &Transformer{
		cfg:        c,
		TokenEmbd:  b.Matrix("token_embd.weight", c.VocabSize, c.Dim),
		OutputNorm: b.Vector("output_norm.weight", c.Dim),
		Tied:       !b.Has("output.weight"),
		Layers:     make([]Block, c.NumLayers),
	}
	if t.Tied {
		t.Output = t.TokenEmbd
	} else {
		t.Output = b.Matrix("output.weight", c.VocabSize, c.Dim)
	}
	t.Rope = RoPE{Base: c.RopeBase, Freqs: c.RopeFactors(nil)}
	return t
}

// Parts are the optional tensors BindBlock binds, under llama.cpp's names.
type Parts struct {
	QKVBias   bool // attn_q.bias, attn_k.bias, attn_v.bias (Qwen2)
	QKNorm    bool // attn_q_norm.weight, attn_k_norm.weight (Qwen3, Gemma 3)
	PostNorms bool // post_attention_norm.weight, post_ffw_norm.weight (Gemma)
}

// BindBlock binds layer i's block under llama.cpp's names: attn_norm,
// attn_q, attn_k, attn_v, attn_output, ffn_norm and the feed-forward
// network (BindFFN), plus the parts p asks for. Its window is the file's
// sliding window (c.SlidingWindow; 0: none), which a loader with local and
// global layers sets per layer.
func BindBlock(b *Binder, c *Config, i int, p Parts) Block {
	pre := fmt.Sprintf("blk.%d.", i)
	L := Block{
		AttnNorm: b.Vector(pre+"attn_norm.weight", c.Dim),
		Q:        b.Matrix(pre+"attn_q.weight", c.QDim(), c.Dim),
		K:        b.Matrix(pre+"attn_k.weight", c.KVDim(), c.Dim),
		V:        b.Matrix(pre+"attn_v.weight", c.KVDim(), c.Dim),
		Window:   c.SlidingWindow,
	}
	if p.QKVBias {
		L.QBias = b.Vector(pre+"attn_q.bias", c.QDim())
		L.KBias = b.Vector(pre+"attn_k.bias", c.KVDim())
		L.VBias = b.Vector(pre+"attn_v.bias", c.KVDim())
	}
	if p.QKNorm {
		L.QNorm = b.Vector(pre+"attn_q_norm.weight", c.HeadDim)
		L.KNorm = b.Vector(pre+"attn_k_norm.weight", c.HeadDim)
	}
	L.O = b.Matrix(pre+"attn_output.weight", c.Dim, c.QDim())
	if p.PostNorms {
		L.PostAttnNorm = b.Vector(pre+"post_attention_norm.weight", c.Dim)
	}
	L.FFNNorm = b.Vector(pre+"ffn_norm.weight", c.Dim)
	L.FFN = BindFFN(b, c, pre)
	if p.PostNorms {
		L.PostFFNNorm = b.Vector(pre+"post_ffw_norm.weight", c.Dim)
	}
	return L
}

// Finish ends the binding: the binder's first error, else t with its
// weight bytes counted (Binder.ReadBytes).
func (t *Transformer) Finish(b *Binder) (Model, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	t.bytes = b.ReadBytes(t.TokenEmbd, t.Tied)
	return t, nil
}

func (t *Transformer) Config() Config     { return t.cfg }
func (t *Transformer) WeightBytes() int64 { return t.bytes }

// blockSession is a session of a Transformer: the shared Decoder running
// the family's forward pass with this session's RoPE.
type blockSession struct {
	*Decoder
	t    *Transformer
	rope RoPE // the model's RoPE, with Arch.SessionRope's divisors when set
}

// NewSession makes a session of the model (see Model).
func (t *Transformer) NewSession(opts SessionOptions) (Session, error) {
	s := &blockSession{t: t, rope: t.Rope}
	d, err := NewDecoder(&t.cfg, opts, t, s.run)
	if err != nil {
		return nil, err
	}
	s.Decoder = d
	if t.Arch.SessionRope != nil {
		s.rope.Freqs = t.Arch.SessionRope(d.Opts)
	}
	return s, nil
}

// run is the forward pass over rows of tokens (one sequence or several).
func (s *blockSession) run(ctx context.Context, rows Rows, tokens []int, all bool, logits []float32) error {
	c, t, a := &s.t.cfg, s.t, &s.t.Arch
	n, dim, qDim, kvDim := len(tokens), c.Dim, c.QDim(), c.KVDim()
	x := s.X[:n*dim]
	for i, id := range tokens { // x[i] = embedding row of token i (× EmbedScale)
		t.TokenEmbd.Row(id, x[i*dim:(i+1)*dim])
	}
	scaleBy(x, a.EmbedScale)
	scale := a.AttnScale
	if scale == 0 {
		scale = c.AttnScale() // 1/√head_dim (× YaRN's factor²)
	}
	q, att, out, xb := s.Q[:n*qDim], s.Att[:n*qDim], s.Out[:n*dim], s.XB[:n*dim]
	for l := range t.Layers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("infer: layer %d: %w", l, err)
		}
		L := &t.Layers[l]
		rope := &s.rope
		if L.Rope != nil {
			rope = L.Rope
		}

		// Attention: xb = norm(x); q,k,v = xb·Wᵀ (+ bias); norm each q and
		// k head; rotate q,k; store k,v in the row's cache.
		NormRows(s.XB, x, L.AttnNorm, n, dim, c.NormEps)
		s.MatMuls(xb, n, compute.Product{Out: q, W: L.Q},
			compute.Product{Out: s.K[:n*kvDim], W: L.K}, compute.Product{Out: s.V[:n*kvDim], W: L.V})
		for i := range n {
			q, k, v := s.Q[i*qDim:(i+1)*qDim], s.K[i*kvDim:(i+1)*kvDim], s.V[i*kvDim:(i+1)*kvDim]
			addBias(q, L.QBias, 1)
			addBias(k, L.KBias, 1)
			addBias(v, L.VBias, 1)
			if L.QNorm != nil {
				NormRows(q, q, L.QNorm, c.NumHeads, c.HeadDim, c.NormEps)
				NormRows(k, k, L.KNorm, c.NumKVHeads, c.HeadDim, c.NormEps)
			}
			s.Rope.Apply(q, c.NumHeads, c.HeadDim, c.RopeDim, rows.Pos(i), rope.Base, a.NeoX, rope.Freqs)
			s.Rope.Apply(k, c.NumKVHeads, c.HeadDim, c.RopeDim, rows.Pos(i), rope.Base, a.NeoX, rope.Freqs)
			if r := a.RotatedScale; r != 0 && r != 1 {
				scaleRotated(q, c.NumHeads, c.HeadDim, c.RopeDim, r)
				scaleRotated(k, c.NumKVHeads, c.HeadDim, c.RopeDim, r)
			}
			rows.Store(l, i, k, v)
		}
		// att (n, qDim) = causal softmax(q·Kᵀ·scale)·V over each row's
		// positions (the last Window of them, when set).
		rows.Attend(s.Pool, l, att, q, n, c.NumHeads, compute.Attn{Scale: scale, Window: L.Window, Softcap: a.AttnSoftcap, Sinks: L.Sinks})
		s.MatMul(s.Pool, out, L.O, att, n)
		addBias(out, L.OBias, n)
		s.residual(x, out, L.PostAttnNorm, n)

		// Feed-forward: x += Down(act(Gate·xb) ⊙ Up·xb) with xb = norm(x),
		// or the mixture of the experts the router picks for each row.
		NormRows(s.XB, x, L.FFNNorm, n, dim, c.NormEps)
		s.FFN(&L.FFN, out, xb, n)
		s.residual(x, out, L.PostFFNNorm, n)
	}

	// Logits of the wanted rows: norm, the output matrix, scale, soft-cap.
	nOut := rows.NormOut(s.XB, x, t.OutputNorm, n, dim, all, c.NormEps)
	logits = logits[:nOut*c.VocabSize] // none for Hidden: the normed states are the result
	s.MatMul(s.Pool, logits, t.Output, s.XB[:nOut*dim], nOut)
	scaleBy(logits, a.LogitScale)
	if limit := a.LogitSoftcap; limit > 0 {
		for i, v := range logits {
			logits[i] = limit * float32(math.Tanh(float64(v/limit)))
		}
	}
	return nil
}

// residual adds a sublayer's output out (n, dim) to the residual stream x:
// normed by post first when set, scaled by Arch.ResidualScale.
func (s *blockSession) residual(x, out, post []float32, n int) {
	c := &s.t.cfg
	if post != nil {
		NormRows(out, out, post, n, c.Dim, c.NormEps)
	}
	scaleBy(out, s.t.Arch.ResidualScale)
	compute.Add(x, x, out)
}

// scaleBy multiplies x by f, unless f is 0 or 1 (an Arch multiplier that
// is unset or has no effect).
func scaleBy(x []float32, f float32) {
	if f != 0 && f != 1 {
		compute.Scale(x, f)
	}
}

// scaleRotated multiplies the first ropeDim dimensions of each head by a
// (LongRoPE's attention factor, applied to cos and sin in the reference).
func scaleRotated(x []float32, numHeads, headDim, ropeDim int, a float32) {
	for h := range numHeads {
		compute.Scale(x[h*headDim:h*headDim+ropeDim], a)
	}
}
