package clip

import (
	"context"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Config is the shape of a CLIP text transformer.
type Config struct {
	Dim       int // width
	NumHeads  int // attention heads of Dim/NumHeads
	HiddenDim int // MLP width
	NumLayers int // transformer blocks
	CtxLen    int // positions: one window of tokens
	VocabSize int // token embedding rows
}

// ViTL14 is OpenAI CLIP ViT-L/14's text transformer, SD 1.x's
// cond_stage_model.
var ViTL14 = Config{Dim: 768, NumHeads: 12, HiddenDim: 3072, NumLayers: 12, CtxLen: 77, VocabSize: 49408}

// normEps is every LayerNorm's epsilon.
const normEps = 1e-5

// Prefix is where an SD 1.x checkpoint keeps the text model's tensors
// (checkpoint.Sub(file, Prefix) is the Source New takes).
const Prefix = "cond_stage_model.transformer.text_model."

// Weights are the bound tensors; matrices alias the source's data (a
// mapped file stays open while the encoder is used).
type Weights struct {
	TokenEmbd  compute.Matrix // (vocabSize, dim) embeddings.token_embedding.weight
	PosEmbd    []float32      // (ctxLen, dim) embeddings.position_embedding.weight
	Layers     []Layer        // encoder.layers.N
	FinalNormW []float32      // (dim) final_layer_norm.weight
	FinalNormB []float32      // (dim) final_layer_norm.bias
}

// Layer is one pre-LN transformer block: x += attn(ln1(x)); x += mlp(ln2(x)).
type Layer struct {
	Norm1W, Norm1B []float32      // (dim) layer_norm1
	Q, K, V, O     compute.Matrix // (dim, dim) self_attn.{q,k,v,out}_proj.weight
	QB, KB, VB, OB []float32      // (dim) their biases
	Norm2W, Norm2B []float32      // (dim) layer_norm2
	FC1            compute.Matrix // (hiddenDim, dim) mlp.fc1.weight
	FC1B           []float32      // (hiddenDim)
	FC2            compute.Matrix // (dim, hiddenDim) mlp.fc2.weight
	FC2B           []float32      // (dim)
}

// Encoder is a bound CLIP text encoder.
type Encoder struct {
	cfg   Config
	w     Weights
	bytes int64 // weight bytes: the matrices as the file has them, the rest as float32
}

// New binds the text model's tensors from src (names without Prefix),
// checking every shape. Linear weights and the token embedding stay in the
// file's type (F16, F32 or BF16) and alias src's data; norms, biases and
// the position embedding are copied as float32. A position_ids tensor,
// which some files have, is not read: positions are always 0..76, as in
// stable-diffusion.cpp.
func New(src checkpoint.Source) (*Encoder, error) { return bind(src, ViTL14) }

// bind binds a text transformer of shape c.
func bind(src checkpoint.Source, c Config) (*Encoder, error) {
	if c.Dim <= 0 || c.NumHeads <= 0 || c.Dim%c.NumHeads != 0 || c.HiddenDim <= 0 || c.NumLayers <= 0 || c.CtxLen <= 0 || c.VocabSize <= 0 {
		return nil, fmt.Errorf("clip: bad config %+v", c) // a programming error: configs are constants
	}
	b := checkpoint.NewBinder(src)
	e := &Encoder{cfg: c}
	dim, hiddenDim := c.Dim, c.HiddenDim
	matrix := func(name string, rows, cols int) compute.Matrix {
		t := b.Raw(name, rows, cols)
		if t == nil {
			return compute.Matrix{}
		}
		m, err := compute.NewMatrix(t.DType, rows, cols, t.Data)
		if err != nil {
			b.Fail(&checkpoint.Error{Path: src.Path(), Tensor: name, Err: err})
		}
		e.bytes += int64(len(t.Data))
		return m
	}
	vector := func(name string, n ...int) []float32 {
		v := b.Float32(name, n...)
		e.bytes += int64(4 * len(v))
		return v
	}
	w := &e.w
	w.TokenEmbd = matrix("embeddings.token_embedding.weight", c.VocabSize, dim)
	w.PosEmbd = vector("embeddings.position_embedding.weight", c.CtxLen, dim)
	w.Layers = make([]Layer, c.NumLayers)
	for i := range w.Layers {
		p := fmt.Sprintf("encoder.layers.%d.", i)
		w.Layers[i] = Layer{
			Norm1W: vector(p+"layer_norm1.weight", dim), Norm1B: vector(p+"layer_norm1.bias", dim),
			Q: matrix(p+"self_attn.q_proj.weight", dim, dim), QB: vector(p+"self_attn.q_proj.bias", dim),
			K: matrix(p+"self_attn.k_proj.weight", dim, dim), KB: vector(p+"self_attn.k_proj.bias", dim),
			V: matrix(p+"self_attn.v_proj.weight", dim, dim), VB: vector(p+"self_attn.v_proj.bias", dim),
			O: matrix(p+"self_attn.out_proj.weight", dim, dim), OB: vector(p+"self_attn.out_proj.bias", dim),
			Norm2W: vector(p+"layer_norm2.weight", dim), Norm2B: vector(p+"layer_norm2.bias", dim),
			FC1: matrix(p+"mlp.fc1.weight", hiddenDim, dim), FC1B: vector(p+"mlp.fc1.bias", hiddenDim),
			FC2: matrix(p+"mlp.fc2.weight", dim, hiddenDim), FC2B: vector(p+"mlp.fc2.bias", dim),
		}
	}
	w.FinalNormW = vector("final_layer_norm.weight", dim)
	w.FinalNormB = vector("final_layer_norm.bias", dim)
	if err := b.Err(); err != nil {
		return nil, err
	}
	return e, nil
}

// WeightBytes returns the bytes the weights take in memory.
func (e *Encoder) WeightBytes() int64 { return e.bytes }

// Config returns the encoder's shape.
func (e *Encoder) Config() Config { return e.cfg }

// Options change how Encode runs.
type Options struct {
	// ClipSkip N ≥ 1 stops after block NumLayers-N+1 (N-1 blocks early,
	// as stable-diffusion.cpp's --clip-skip; A1111's "Clip skip"); the
	// final layer norm is applied either way. N ≤ 0 means 1 (all blocks,
	// SD 1.x's default), as in sd.cpp; N > NumLayers is an error (sd.cpp
	// runs no block for NumLayers+1 and all of them from NumLayers+2).
	ClipSkip int
	// ExactGELU computes quick-GELU in float32 instead of through ggml's
	// f16 table (stable-diffusion.cpp's CPU arithmetic, the default).
	ExactGELU bool
}

// ActivationBytes returns the memory one Encode call allocates for n
// windows: its working buffers and the output.
func (c Config) ActivationBytes(n int) int64 {
	per := 6*c.CtxLen*c.Dim + c.CtxLen*c.HiddenDim + 2*c.CtxLen*c.Dim // x, h, q, k, v, att; mlp; KV cache
	return 4 * int64(per+n*c.CtxLen*c.Dim)
}

// Encode runs the encoder over ids (whole windows of CtxLen tokens, as
// tokenizer/clip.Tokenize makes them), each window separately from
// position 0, and returns the hidden states [len(ids)][Dim] (row-major,
// Dim innermost: stable-diffusion.cpp's c_crossattn). A window whose
// weights are not all 1 has the emphasis applied as sd.cpp's
// apply_token_weights does: each token's row times its weight, then the
// whole window rescaled so its mean (over all CtxLen×Dim values) is what
// it was. weights may be nil (all 1).
//
// The working memory (Config.ActivationBytes) is allocated once per call;
// the layers allocate nothing.
func (e *Encoder) Encode(ctx context.Context, p *compute.Pool, ids []int32, weights []float32, opts Options) ([]float32, error) {
	c := e.cfg
	ctxLen, dim, numLayers := c.CtxLen, c.Dim, c.NumLayers
	if len(ids) == 0 || len(ids)%ctxLen != 0 {
		return nil, encodeErr("%d token ids are not whole windows of %d", len(ids), ctxLen)
	}
	if weights != nil && len(weights) != len(ids) {
		return nil, encodeErr("%d weights for %d token ids", len(weights), len(ids))
	}
	for i, id := range ids {
		if id < 0 || int(id) >= c.VocabSize {
			return nil, encodeErr("token %d is id %d, outside the vocabulary (0..%d)", i, id, c.VocabSize-1)
		}
	}
	skip := max(opts.ClipSkip, 1)
	if skip > numLayers {
		return nil, encodeErr("clip skip %d: the text encoder has %d layers (clip skip 1..%d)", opts.ClipSkip, numLayers, numLayers)
	}
	s := newState(c)
	defer s.cache.Free()
	out := make([]float32, len(ids)*dim)
	for k := range len(ids) / ctxLen {
		h := out[k*ctxLen*dim : (k+1)*ctxLen*dim]
		if err := e.window(ctx, p, s, ids[k*ctxLen:(k+1)*ctxLen], numLayers-skip+1, opts.ExactGELU, h); err != nil {
			return nil, &Error{Err: fmt.Errorf("window %d: %w", k, err)}
		}
		if weights != nil {
			applyWeights(h, weights[k*ctxLen:(k+1)*ctxLen], dim)
		}
	}
	return out, nil
}

// state is one Encode call's working memory.
type state struct {
	x, h    []float32 // (ctxLen, dim) residual stream, normed input
	q, k, v []float32 // (ctxLen, dim)
	att     []float32 // (ctxLen, dim) attention output, then a projection's output
	mlp     []float32 // (ctxLen, hiddenDim)
	cache   *compute.KVCache
}

func newState(c Config) *state {
	n := c.CtxLen * c.Dim
	return &state{
		x: make([]float32, n), h: make([]float32, n), q: make([]float32, n), k: make([]float32, n),
		v: make([]float32, n), att: make([]float32, n), mlp: make([]float32, c.CtxLen*c.HiddenDim),
		cache: compute.NewKVCache(tensor.F32, c.CtxLen, c.NumHeads, c.Dim/c.NumHeads),
	}
}

// window is the forward pass over one window of ctxLen tokens through the
// first layers blocks and the final layer norm, into out (ctxLen, dim).
func (e *Encoder) window(ctx context.Context, p *compute.Pool, s *state, ids []int32, layers int, exactGELU bool, out []float32) error {
	w, c := &e.w, e.cfg
	n, dim := c.CtxLen, c.Dim
	x := s.x
	for i, id := range ids { // x[i] = token embedding + position embedding
		row := x[i*dim : (i+1)*dim]
		w.TokenEmbd.Row(int(id), row)
		compute.Add(row, row, w.PosEmbd[i*dim:(i+1)*dim])
	}
	// Scale 1/√headDim in float32, as sd.cpp's 1.0f/sqrt((float)d_head).
	scale := 1 / float32(math.Sqrt(float64(dim/c.NumHeads)))
	for l := range layers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("layer %d: %w", l, err)
		}
		L := &w.Layers[l]

		// Causal self-attention over the window (Vaswani et al. 2017).
		normRows(s.h, x, L.Norm1W, L.Norm1B, dim)
		compute.MatMuls(p, s.h, n, compute.Product{Out: s.q, W: L.Q}, compute.Product{Out: s.k, W: L.K}, compute.Product{Out: s.v, W: L.V})
		addBias(s.q, L.QB)
		addBias(s.k, L.KB)
		addBias(s.v, L.VB)
		for i := range n {
			s.cache.Store(i, s.k[i*dim:(i+1)*dim], s.v[i*dim:(i+1)*dim])
		}
		compute.Attention(p, s.att, s.q, n, 0, s.cache, c.NumHeads, compute.Attn{Scale: scale})
		compute.MatMul(p, s.q, L.O, s.att, n) // q is free again: the projection's output
		addBias(s.q, L.OB)
		compute.Add(x, x, s.q)

		// MLP with quick-GELU (Radford et al. 2021, CLIP: x·σ(1.702x)).
		normRows(s.h, x, L.Norm2W, L.Norm2B, dim)
		compute.MatMul(p, s.mlp, L.FC1, s.h, n)
		addBias(s.mlp, L.FC1B)
		quickGELU(s.mlp, exactGELU)
		compute.MatMul(p, s.att, L.FC2, s.mlp, n)
		addBias(s.att, L.FC2B)
		compute.Add(x, x, s.att)
	}
	normRows(out, x, w.FinalNormW, w.FinalNormB, dim)
	return nil
}

// normRows layer-normalizes each row of dim floats of x into out.
func normRows(out, x, w, b []float32, dim int) {
	for i := 0; i < len(x); i += dim {
		compute.LayerNorm(out[i:i+dim], x[i:i+dim], w, b, normEps)
	}
}

// addBias adds b to every row of x.
func addBias(x, b []float32) {
	for i := 0; i < len(x); i += len(b) {
		compute.Add(x[i:i+len(b)], x[i:i+len(b)], b)
	}
}

// applyWeights is stable-diffusion.cpp's apply_token_weights
// (src/conditioning/conditioner.hpp) on one window h (ctxLen, dim): if any
// weight is not 1, row i is multiplied by weights[i] and then all of h by
// mean_before/mean_after (float32; means accumulated in float64 in order),
// unless either mean is not finite or the new mean is 0.
func applyWeights(h, weights []float32, dim int) {
	allOne := true
	for _, w := range weights {
		allOne = allOne && w == 1
	}
	if allOne {
		return
	}
	before := mean(h)
	for i, w := range weights {
		compute.Scale(h[i*dim:(i+1)*dim], w)
	}
	after := mean(h)
	if isFinite(before) && isFinite(after) && after != 0 {
		compute.Scale(h, before/after)
	}
}

func mean(x []float32) float32 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return float32(s / float64(len(x)))
}

func isFinite(f float32) bool { return !math.IsInf(float64(f), 0) && !math.IsNaN(float64(f)) }

// Error is an encode-stage error of the text encoder.
type Error struct{ Err error }

func (e *Error) Error() string { return "encode: text encoder: " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Stage reports the pipeline stage the error belongs to.
func (e *Error) Stage() string { return "encode" }

func encodeErr(format string, args ...any) error { return &Error{Err: fmt.Errorf(format, args...)} }
