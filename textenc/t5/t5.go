package t5

import (
	"context"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
)

// Config is the shape of a T5 encoder.
type Config struct {
	VocabSize  int // token embedding rows
	Dim        int // width of the residual stream
	DimAttn    int // width of q, k and v (NumHeads × head dim)
	DimFFN     int // feed-forward width
	NumHeads   int
	NumLayers  int
	NumBuckets int // relative position buckets (32)
	MaxDist    int // distance of the last bucket (128)
	SharedPos  bool
}

// UMT5XXL is umt5_xxl, Wan 2.1's text encoder (wan/modules/t5.py).
var UMT5XXL = Config{VocabSize: 256384, Dim: 4096, DimAttn: 4096, DimFFN: 10240, NumHeads: 64, NumLayers: 24, NumBuckets: 32, MaxDist: 128}

// MaxTokens is Wan's text length: the tokenizer truncates to it, EOS
// included.
const MaxTokens = 512

// normEps is T5LayerNorm's epsilon.
const normEps = 1e-6

// Weights are the bound tensors; matrices alias the source's data.
type Weights struct {
	TokenEmbd compute.Matrix // (vocabSize, dim) token_embedding.weight
	Layers    []Layer        // blocks.N
	FinalNorm []float32      // (dim) norm.weight
}

// Layer is one block: x += attn(norm1(x)); x += ffn(norm2(x)).
type Layer struct {
	Norm1     []float32      // (dim) norm1.weight
	Q, K, V   compute.Matrix // (dimAttn, dim) attn.{q,k,v}.weight
	O         compute.Matrix // (dim, dimAttn) attn.o.weight
	PosBias   []float32      // (numBuckets, numHeads) pos_embedding.embedding.weight
	Norm2     []float32      // (dim) norm2.weight
	Gate, FC1 compute.Matrix // (dimFFN, dim) ffn.gate.0.weight, ffn.fc1.weight
	FC2       compute.Matrix // (dim, dimFFN) ffn.fc2.weight
}

// Encoder is a bound T5 encoder.
type Encoder struct {
	cfg   Config
	w     Weights
	names string // "wan" or "hf"
	bytes int64
}

// names is one naming scheme of the encoder's tensors.
type names struct {
	scheme                       string
	embd, final                  string
	norm1, q, k, v, o, pos       string // per layer, after the layer prefix
	norm2, gate, fc1, fc2, layer string // layer: the prefix format
}

var (
	wanNames = names{scheme: "wan", embd: "token_embedding.weight", final: "norm.weight", layer: "blocks.%d.",
		norm1: "norm1.weight", q: "attn.q.weight", k: "attn.k.weight", v: "attn.v.weight", o: "attn.o.weight",
		pos: "pos_embedding.embedding.weight", norm2: "norm2.weight",
		gate: "ffn.gate.0.weight", fc1: "ffn.fc1.weight", fc2: "ffn.fc2.weight"}
	hfNames = names{scheme: "hf", embd: "shared.weight", final: "encoder.final_layer_norm.weight", layer: "encoder.block.%d.",
		norm1: "layer.0.layer_norm.weight", q: "layer.0.SelfAttention.q.weight", k: "layer.0.SelfAttention.k.weight",
		v: "layer.0.SelfAttention.v.weight", o: "layer.0.SelfAttention.o.weight",
		pos: "layer.0.SelfAttention.relative_attention_bias.weight", norm2: "layer.1.layer_norm.weight",
		gate: "layer.1.DenseReluDense.wi_0.weight", fc1: "layer.1.DenseReluDense.wi_1.weight", fc2: "layer.1.DenseReluDense.wo.weight"}
)

func (n names) at(l int, s string) string { return fmt.Sprintf(n.layer, l) + s }

// New binds an encoder from src in Wan's or the Hugging Face names,
// taking its shape from the tensors and checking every one.
func New(src checkpoint.Source) (*Encoder, error) {
	b := checkpoint.NewBinder(src)
	n := wanNames
	if !b.Has(n.embd) {
		n = hfNames
		if !b.Has(n.embd) && b.Has("encoder.embed_tokens.weight") {
			n.embd = "encoder.embed_tokens.weight"
		}
	}
	if !b.Has(n.embd) {
		return nil, &checkpoint.Error{Path: src.Path(), Tensor: wanNames.embd,
			Err: fmt.Errorf("%w: neither %s nor %s (is this a T5 encoder?)", checkpoint.ErrMissing, wanNames.embd, hfNames.embd)}
	}
	c, err := inferConfig(b, n)
	if err != nil {
		return nil, &checkpoint.Error{Path: src.Path(), Err: err}
	}
	return bind(src, c, n)
}

// inferConfig reads the shape from the embedding, layer 0 and the count
// of layers.
func inferConfig(b *checkpoint.Binder, n names) (Config, error) {
	shape := func(name string) []int {
		if t := b.Raw(name); t != nil {
			return t.Shape
		}
		return nil
	}
	e, q, g, pos := shape(n.embd), shape(n.at(0, n.q)), shape(n.at(0, n.gate)), shape(n.at(0, n.pos))
	if err := b.Err(); err != nil {
		return Config{}, err
	}
	for _, s := range []struct {
		name string
		sh   []int
	}{{n.embd, e}, {n.at(0, n.q), q}, {n.at(0, n.gate), g}, {n.at(0, n.pos), pos}} {
		if len(s.sh) != 2 || s.sh[0] <= 0 || s.sh[1] <= 0 {
			return Config{}, fmt.Errorf("%s has shape %v, want 2 positive dimensions", s.name, s.sh)
		}
	}
	c := Config{VocabSize: e[0], Dim: e[1], DimAttn: q[0], DimFFN: g[0], NumBuckets: pos[0], NumHeads: pos[1], MaxDist: 128}
	for b.Has(n.at(c.NumLayers, n.norm1)) {
		c.NumLayers++
	}
	c.SharedPos = c.NumLayers > 1 && !b.Has(n.at(1, n.pos))
	if c.DimAttn%c.NumHeads != 0 || c.NumBuckets < 4 || c.NumBuckets%2 != 0 {
		return Config{}, fmt.Errorf("%d attention width over %d heads, %d position buckets: not a T5 encoder shape", c.DimAttn, c.NumHeads, c.NumBuckets)
	}
	return c, nil
}

// bind binds the tensors of an encoder of shape c.
func bind(src checkpoint.Source, c Config, n names) (*Encoder, error) {
	b := checkpoint.NewBinder(src)
	e := &Encoder{cfg: c, names: n.scheme}
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
	vector := func(name string, shape ...int) []float32 {
		v := b.Float32(name, shape...)
		e.bytes += int64(4 * len(v))
		return v
	}
	w := &e.w
	w.TokenEmbd = matrix(n.embd, c.VocabSize, c.Dim)
	w.Layers = make([]Layer, c.NumLayers)
	for l := range w.Layers {
		L := &w.Layers[l]
		L.Norm1 = vector(n.at(l, n.norm1), c.Dim)
		L.Q = matrix(n.at(l, n.q), c.DimAttn, c.Dim)
		L.K = matrix(n.at(l, n.k), c.DimAttn, c.Dim)
		L.V = matrix(n.at(l, n.v), c.DimAttn, c.Dim)
		L.O = matrix(n.at(l, n.o), c.Dim, c.DimAttn)
		if l == 0 || !c.SharedPos {
			L.PosBias = vector(n.at(l, n.pos), c.NumBuckets, c.NumHeads)
		} else {
			L.PosBias = w.Layers[0].PosBias
		}
		L.Norm2 = vector(n.at(l, n.norm2), c.Dim)
		L.Gate = matrix(n.at(l, n.gate), c.DimFFN, c.Dim)
		L.FC1 = matrix(n.at(l, n.fc1), c.DimFFN, c.Dim)
		L.FC2 = matrix(n.at(l, n.fc2), c.Dim, c.DimFFN)
	}
	w.FinalNorm = vector(n.final, c.Dim)
	if err := b.Err(); err != nil {
		return nil, err
	}
	return e, nil
}

// Config returns the encoder's shape.
func (e *Encoder) Config() Config { return e.cfg }

// Names returns the naming scheme the weights were bound by: "wan" or "hf".
func (e *Encoder) Names() string { return e.names }

// WeightBytes returns the bytes the weights take in memory.
func (e *Encoder) WeightBytes() int64 { return e.bytes }

// ActivationBytes returns the memory one Encode call of n tokens
// allocates: the residual stream (which becomes the output), the normed
// input, q, k, v, the attention output, the two FFN halves, the bucket
// table, a row of scores per attention task chunk (at most 64), and 16 KiB
// of small allocations.
func (c Config) ActivationBytes(n int) int64 {
	return 4*(int64(n)*int64(2*c.Dim+4*c.DimAttn+2*c.DimFFN+2)+64*int64(n)) + 16<<10
}

// Encode runs the encoder over ids (1..MaxTokens real tokens, EOS
// included: PromptIDs) and returns their hidden states [len(ids)][Dim].
// The working memory (Config.ActivationBytes) is allocated once per call.
func (e *Encoder) Encode(ctx context.Context, p *compute.Pool, ids []int32) ([]float32, error) {
	if len(ids) == 0 || len(ids) > MaxTokens {
		return nil, encodeErr("%d token ids (want 1..%d)", len(ids), MaxTokens)
	}
	return e.forward(ctx, p, ids, len(ids))
}

// forward runs all len(ids) positions with the keys from valid on masked
// (Wan's padding), returning every row.
func (e *Encoder) forward(ctx context.Context, p *compute.Pool, ids []int32, valid int) ([]float32, error) {
	c := e.cfg
	for i, id := range ids {
		if id < 0 || int(id) >= c.VocabSize {
			return nil, encodeErr("token %d is id %d, outside the vocabulary (0..%d)", i, id, c.VocabSize-1)
		}
	}
	n, dim, da, ff := len(ids), c.Dim, c.DimAttn, c.DimFFN
	x := make([]float32, n*dim)
	h := make([]float32, n*dim)
	q, k, v, att := make([]float32, n*da), make([]float32, n*da), make([]float32, n*da), make([]float32, n*da)
	gate, fc1 := make([]float32, n*ff), make([]float32, n*ff)
	buckets := make([]int32, 2*n-1) // bucket of k − q = d − (n−1)
	for d := range buckets {
		buckets[d] = int32(relativeBucket(d-(n-1), c.NumBuckets, c.MaxDist))
	}
	for i, id := range ids {
		e.w.TokenEmbd.Row(int(id), x[i*dim:(i+1)*dim])
	}
	for l := range c.NumLayers {
		if err := ctx.Err(); err != nil {
			return nil, &Error{Err: fmt.Errorf("layer %d: %w", l, err)}
		}
		L := &e.w.Layers[l]
		rmsRows(h, x, L.Norm1, dim)
		compute.MatMuls(p, h, n, compute.Product{Out: q, W: L.Q}, compute.Product{Out: k, W: L.K}, compute.Product{Out: v, W: L.V})
		attention(p, att, q, k, v, n, valid, c.NumHeads, da/c.NumHeads, L.PosBias, buckets)
		compute.MatMul(p, h, L.O, att, n)
		compute.Add(x, x, h)

		rmsRows(h, x, L.Norm2, dim)
		compute.MatMuls(p, h, n, compute.Product{Out: gate, W: L.Gate}, compute.Product{Out: fc1, W: L.FC1})
		compute.GELU(gate) // Wan's GELU: the tanh approximation
		compute.Mul(fc1, fc1, gate)
		compute.MatMul(p, h, L.FC2, fc1, n)
		compute.Add(x, x, h)
	}
	rmsRows(x, x, e.w.FinalNorm, dim)
	return x, nil
}

// PromptIDs is what Wan's tokenizer call makes of a prompt's tokens (the
// tokenizer's ids without EOS): truncated to MaxTokens with EOS last, as
// the Hugging Face tokenizer's truncation=True, max_length=512 keeps the
// first 511 tokens and appends EOS.
func PromptIDs(tokens []int, eos int) []int32 {
	n := min(len(tokens), MaxTokens-1)
	ids := make([]int32, n+1)
	for i, t := range tokens[:n] {
		ids[i] = int32(t)
	}
	ids[n] = int32(eos)
	return ids
}

// rmsRows applies T5LayerNorm to each row of dim floats of x into out.
func rmsRows(out, x, w []float32, dim int) {
	for i := 0; i < len(x); i += dim {
		compute.RMSNorm(out[i:i+dim], x[i:i+dim], w, normEps)
	}
}

// attention is T5's self-attention over n positions of which the first
// valid are keys: for head hd and query i, softmax over keys j < valid of
// q_i·k_j + bias[bucket(j−i)][hd] (no scaling: T5 folds it into the
// weights), then the weighted sum of v_j. A masked key (j ≥ valid) adds
// float32's lowest value in Wan, which makes its weight exactly 0; it is
// left out here.
func attention(p *compute.Pool, out, q, k, v []float32, n, valid, numHeads, headDim int, bias []float32, buckets []int32) {
	da := numHeads * headDim
	p.For(n*numHeads, func(lo, hi int) {
		s := make([]float32, valid)
		for t := lo; t < hi; t++ {
			i, hd := t/numHeads, t%numHeads
			qi := q[i*da+hd*headDim : i*da+(hd+1)*headDim]
			for j := range valid {
				kj := k[j*da+hd*headDim : j*da+(hd+1)*headDim]
				var dot float32
				for d, qv := range qi {
					dot += qv * kj[d]
				}
				s[j] = dot + bias[int(buckets[j-i+n-1])*numHeads+hd]
			}
			compute.Softmax(s)
			o := out[i*da+hd*headDim : i*da+(hd+1)*headDim]
			clear(o)
			for j, w := range s {
				vj := v[j*da+hd*headDim : j*da+(hd+1)*headDim]
				for d := range o {
					o[d] += w * vj[d]
				}
			}
		}
	})
}

// relativeBucket is T5RelativeEmbedding._relative_position_bucket for a
// bidirectional embedding: half the buckets per direction (the upper half
// for rel = k − q > 0); distances below a quarter of the buckets exact,
// larger ones logarithmic up to maxDist, in float32 and truncated as
// PyTorch computes them.
func relativeBucket(rel, numBuckets, maxDist int) int {
	half := numBuckets / 2
	b := 0
	if rel > 0 {
		b = half
	}
	if rel < 0 {
		rel = -rel
	}
	exact := half / 2
	if rel < exact {
		return b + rel
	}
	lg := float32(math.Log(float64(float32(rel) / float32(exact))))
	large := exact + int(lg/float32(math.Log(float64(maxDist)/float64(exact)))*float32(half-exact))
	return b + min(large, half-1)
}

// Error is an encode-stage error of the text encoder.
type Error struct{ Err error }

func (e *Error) Error() string { return "encode: text encoder (T5): " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Stage reports the pipeline stage the error belongs to.
func (e *Error) Stage() string { return "encode" }

func encodeErr(format string, args ...any) error { return &Error{Err: fmt.Errorf(format, args...)} }
