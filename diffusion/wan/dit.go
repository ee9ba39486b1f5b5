package wan

import (
	"context"
	"fmt"
	"math"
	"unsafe"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Config is the shape of a Wan DiT, read from its tensors.
type Config struct {
	InDim     int // latent channels in (16)
	OutDim    int // latent channels out (16)
	Dim       int // width of the token stream
	FFNDim    int // feed-forward width
	FreqDim   int // width of the time sinusoid (256)
	TextDim   int // width of the text encoder's rows (umT5-XXL: 4096)
	NumHeads  int
	NumLayers int
}

// HeadDim is the width of one attention head.
func (c Config) HeadDim() int { return c.Dim / c.NumHeads }

// Wan 2.1's fixed hyperparameters (wan/modules/model.py WanModel.__init__
// defaults, wan/configs/shared_config.py).
const (
	// TextLen is the number of context rows: a prompt's rows are padded
	// with zeros to it.
	TextLen   = 512
	eps       = 1e-6 // every LayerNorm and RMSNorm (the blocks pass 1e-6)
	headWidth = 128  // head dim of every released Wan 2.1 model (1.3B: 12 heads, 14B: 40)
	ropeTheta = 10000
	maxPos    = 1024 // positions of each RoPE table (rope_params(1024, ·))
)

// linear is y = W·x + b.
type linear struct {
	w compute.Matrix // (out, in)
	b []float32      // (out)
}

// apply sets out (n, out) to the layer over x (n, in).
func (l *linear) apply(p *compute.Pool, out, x []float32, n int) {
	rows := l.w.Rows
	compute.MatMul(p, out[:n*rows], l.w, x[:n*l.w.Cols], n)
	for i := range n {
		o := out[i*rows : (i+1)*rows]
		compute.Add(o, o, l.b)
	}
}

// block is WanAttentionBlock with t2v cross-attention (blocks.N).
type block struct {
	mod                    []float32 // (6, dim) modulation: shift₁ scale₁ gate₁ shift₂ scale₂ gate₂
	q, k, v, o             linear    // (dim, dim) self_attn.{q,k,v,o}
	normQ, normK           []float32 // (dim) self_attn.norm_{q,k}: RMS over all heads
	norm3W, norm3B         []float32 // (dim) norm3: LayerNorm with affine
	cq, ck, cv, co         linear    // (dim, dim) cross_attn.{q,k,v,o}
	crossNormQ, crossNormK []float32 // (dim) cross_attn.norm_{q,k}
	ffn0                   linear    // (ffnDim, dim) ffn.0, then GELU(tanh)
	ffn2                   linear    // (dim, ffnDim) ffn.2
}

// DiT is a bound Wan text-to-video DiT. Its methods may be called from
// several goroutines: they keep no state between calls.
type DiT struct {
	cfg      Config
	patch    linear // (dim, inDim·1·2·2) patch_embedding: the Conv3d as a linear over patches
	text0    linear // (dim, textDim) text_embedding.0, then GELU(tanh)
	text2    linear // (dim, dim) text_embedding.2
	time0    linear // (dim, freqDim) time_embedding.0, then SiLU
	time2    linear // (dim, dim) time_embedding.2
	timeProj linear // (6·dim, dim) time_projection.1, after SiLU
	blocks   []block
	headMod  []float32 // (2, dim) head.modulation: shift, scale
	head     linear    // (outDim·2·2, dim) head.head
	prefix   string
	bytes    int64
}

// prefixes are the name prefixes the DiT's tensors are found under: the
// original checkpoints' bare names, ComfyUI's diffusion_models files.
var prefixes = []string{"", "model.diffusion_model.", "diffusion_model."}

// New binds a Wan 2.1 text-to-video DiT from src, its shape taken from the
// tensors. numHeads 0 means Wan 2.1's head width of 128 (dim/128 heads).
func New(src checkpoint.Source, numHeads int) (*DiT, error) {
	src, prefix, err := locate(src)
	if err != nil {
		return nil, err
	}
	c, err := inferConfig(src, numHeads)
	if err != nil {
		return nil, err
	}
	m, err := bind(src, c)
	if err != nil {
		return nil, err
	}
	m.prefix = prefix
	return m, nil
}

// inferConfig reads the shape from the embeddings, block 0, the head and
// the count of blocks.
func inferConfig(src checkpoint.Source, numHeads int) (Config, error) {
	shape := func(name string, ndim int) ([]int, error) {
		t, ok := src.Tensor(name)
		if !ok {
			return nil, &checkpoint.Error{Path: src.Path(), Tensor: name, Err: checkpoint.ErrMissing}
		}
		if len(t.Shape) != ndim {
			return nil, &checkpoint.Error{Path: src.Path(), Tensor: name, Err: fmt.Errorf("%w: has shape %v, want %d dimensions", checkpoint.ErrShape, t.Shape, ndim)}
		}
		for _, d := range t.Shape {
			if d <= 0 {
				return nil, &checkpoint.Error{Path: src.Path(), Tensor: name, Err: fmt.Errorf("%w: has shape %v", checkpoint.ErrShape, t.Shape)}
			}
		}
		return t.Shape, nil
	}
	var s [5][]int
	for i, n := range []struct {
		name string
		ndim int
	}{{"patch_embedding.weight", 5}, {"text_embedding.0.weight", 2}, {"time_embedding.0.weight", 2}, {"blocks.0.ffn.0.weight", 2}, {"head.head.weight", 2}} {
		var err error
		if s[i], err = shape(n.name, n.ndim); err != nil {
			return Config{}, err
		}
	}
	pe := s[0]
	if pe[2] != 1 || pe[3] != 2 || pe[4] != 2 {
		return Config{}, &checkpoint.Error{Path: src.Path(), Tensor: "patch_embedding.weight",
			Err: fmt.Errorf("%w: has shape %v, a patch of %d×%d×%d; Wan 2.1 patches are 1×2×2", checkpoint.ErrShape, pe, pe[2], pe[3], pe[4])}
	}
	c := Config{Dim: pe[0], InDim: pe[1], TextDim: s[1][1], FreqDim: s[2][1], FFNDim: s[3][0], OutDim: s[4][0] / 4}
	if s[4][0]%4 != 0 {
		return Config{}, &checkpoint.Error{Path: src.Path(), Tensor: "head.head.weight",
			Err: fmt.Errorf("%w: has %d rows, not channels × 2 × 2", checkpoint.ErrShape, s[4][0])}
	}
	for {
		if _, ok := src.Tensor(fmt.Sprintf("blocks.%d.modulation", c.NumLayers)); !ok {
			break
		}
		c.NumLayers++
	}
	c.NumHeads = numHeads
	if numHeads == 0 {
		c.NumHeads = c.Dim / headWidth
	}
	if c.NumHeads <= 0 || c.Dim%c.NumHeads != 0 || c.HeadDim()%2 != 0 || c.HeadDim() < 6 {
		return Config{}, &checkpoint.Error{Path: src.Path(), Tensor: "patch_embedding.weight",
			Err: fmt.Errorf("width %d over %d heads: want an even head width of at least 6 (Wan 2.1's is %d; give the head count)", c.Dim, numHeads, headWidth)}
	}
	if c.FreqDim%2 != 0 {
		return Config{}, &checkpoint.Error{Path: src.Path(), Tensor: "time_embedding.0.weight",
			Err: fmt.Errorf("%w: a sinusoid of odd width %d", checkpoint.ErrShape, c.FreqDim)}
	}
	return c, nil
}

// bind binds the tensors of a DiT of shape c, checking every shape.
func bind(src checkpoint.Source, c Config) (*DiT, error) {
	b := checkpoint.NewBinder(src)
	m := &DiT{cfg: c}
	matrix := func(name string, rows, cols int, shape ...int) compute.Matrix {
		if shape == nil {
			shape = []int{rows, cols}
		}
		t := b.Raw(name, shape...)
		if t == nil {
			return compute.Matrix{}
		}
		w, err := compute.NewMatrix(t.DType, rows, cols, t.Data)
		if err != nil {
			b.Fail(&checkpoint.Error{Path: src.Path(), Tensor: name, Err: err})
		}
		m.bytes += int64(len(t.Data))
		return w
	}
	vector := func(name string, shape ...int) []float32 {
		v := b.Float32(name, shape...)
		m.bytes += int64(4 * len(v))
		return v
	}
	lin := func(name string, out, in int) linear {
		return linear{w: matrix(name+".weight", out, in), b: vector(name+".bias", out)}
	}
	d := c.Dim
	m.patch = linear{w: matrix("patch_embedding.weight", d, 4*c.InDim, d, c.InDim, 1, 2, 2), b: vector("patch_embedding.bias", d)}
	m.text0, m.text2 = lin("text_embedding.0", d, c.TextDim), lin("text_embedding.2", d, d)
	m.time0, m.time2 = lin("time_embedding.0", d, c.FreqDim), lin("time_embedding.2", d, d)
	m.timeProj = lin("time_projection.1", 6*d, d)
	m.blocks = make([]block, c.NumLayers)
	for l := range m.blocks {
		p := fmt.Sprintf("blocks.%d.", l)
		B := &m.blocks[l]
		B.mod = vector(p+"modulation", 1, 6, d)
		B.q, B.k, B.v, B.o = lin(p+"self_attn.q", d, d), lin(p+"self_attn.k", d, d), lin(p+"self_attn.v", d, d), lin(p+"self_attn.o", d, d)
		B.normQ, B.normK = vector(p+"self_attn.norm_q.weight", d), vector(p+"self_attn.norm_k.weight", d)
		B.norm3W, B.norm3B = vector(p+"norm3.weight", d), vector(p+"norm3.bias", d)
		B.cq, B.ck, B.cv, B.co = lin(p+"cross_attn.q", d, d), lin(p+"cross_attn.k", d, d), lin(p+"cross_attn.v", d, d), lin(p+"cross_attn.o", d, d)
		B.crossNormQ, B.crossNormK = vector(p+"cross_attn.norm_q.weight", d), vector(p+"cross_attn.norm_k.weight", d)
		B.ffn0, B.ffn2 = lin(p+"ffn.0", c.FFNDim, d), lin(p+"ffn.2", d, c.FFNDim)
	}
	m.headMod = vector("head.modulation", 1, 2, d)
	m.head = lin("head.head", 4*c.OutDim, d)
	if err := b.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// Config returns the model's shape.
func (m *DiT) Config() Config { return m.cfg }

// Prefix returns the name prefix the weights were found under ("" or
// "model.diffusion_model.").
func (m *DiT) Prefix() string { return m.prefix }

// WeightBytes returns the bytes the weights take in memory.
func (m *DiT) WeightBytes() int64 { return m.bytes }

// Text is a prompt as every Forward call reads it: the text embedding of
// its rows and of the padding, and each block's cross-attention keys and
// values (WanT2VCrossAttention's k and v).
type Text struct {
	m       *DiT
	n, rows int         // prompt rows; key rows (n, and one for the padding if n < TextLen)
	emb     []float32   // (rows, dim) text_embedding
	k, v    [][]float32 // per block (rows, dim): norm_k(W_k·emb), W_v·emb
	bias    []float32   // (rows) per-key score bias: 0, and ln(TextLen − n) for the padding row
}

// Rows returns the number of prompt rows.
func (t *Text) Rows() int { return t.n }

// PrepareText embeds a prompt's n context rows (the text encoder's output,
// (n, TextDim), 1 ≤ n ≤ TextLen) as WanModel.forward pads and embeds them,
// and computes every block's cross-attention keys and values.
func (m *DiT) PrepareText(ctx context.Context, p *compute.Pool, context []float32, n int) (*Text, error) {
	c := m.cfg
	if n < 1 || n > TextLen {
		return nil, errorf("text: %d context rows (want 1..%d)", n, TextLen)
	}
	if len(context) != n*c.TextDim {
		return nil, errorf("text: %d values for %d context rows of width %d (want %d; is the text encoder's width %d?)", len(context), n, c.TextDim, n*c.TextDim, c.TextDim)
	}
	t := &Text{m: m, n: n, rows: n}
	if n < TextLen {
		t.rows++ // the zero padding row
	}
	in := make([]float32, t.rows*c.TextDim)
	copy(in, context)
	h := make([]float32, t.rows*c.Dim)
	m.text0.apply(p, h, in, t.rows)
	gelu(p, h)
	t.emb = make([]float32, t.rows*c.Dim)
	m.text2.apply(p, t.emb, h, t.rows)
	t.bias = make([]float32, t.rows)
	if t.rows > n {
		t.bias[n] = float32(math.Log(float64(TextLen - n)))
	}
	t.k, t.v = make([][]float32, c.NumLayers), make([][]float32, c.NumLayers)
	for l := range m.blocks {
		if err := ctx.Err(); err != nil {
			return nil, &Error{Err: fmt.Errorf("text: block %d: %w", l, err)}
		}
		B := &m.blocks[l]
		t.k[l], t.v[l] = make([]float32, t.rows*c.Dim), make([]float32, t.rows*c.Dim)
		B.ck.apply(p, t.k[l], t.emb, t.rows)
		rmsRows(t.k[l], B.crossNormK, c.Dim)
		B.cv.apply(p, t.v[l], t.emb, t.rows)
	}
	return t, nil
}

// Forward sets out, a velocity latent [OutDim][frames][height][width], to
// the model's prediction for the latent x [InDim][frames][height][width]
// at timestep t (Wan's scheduler gives integers, 0..999) under text.
// height and width must be even. It stops between blocks once ctx is done.
func (m *DiT) Forward(ctx context.Context, p *compute.Pool, out, x []float32, frames, height, width int, t float64, text *Text) error {
	return m.forward(ctx, p, out, x, frames, height, width, t, text, nil)
}

// forward is Forward, passing each intermediate to tap (when not nil)
// under the name the goldens use.
func (m *DiT) forward(ctx context.Context, p *compute.Pool, out, x []float32, frames, height, width int, t float64, text *Text, tap func(string, []float32)) error {
	c := m.cfg
	if frames <= 0 || height <= 0 || width <= 0 || height%2 != 0 || width%2 != 0 {
		return errorf("latent of %d×%d×%d: want frames ≥ 1 and even height and width ≥ 2", frames, height, width)
	}
	gh, gw := height/2, width/2
	if frames > maxPos || gh > maxPos || gw > maxPos {
		return errorf("latent of %d×%d×%d: more than %d positions on an axis (RoPE's tables)", frames, height, width, maxPos)
	}
	if vol := frames * height * width; len(x) != c.InDim*vol || len(out) != c.OutDim*vol {
		return errorf("latent of %d×%d×%d: x has %d values (want %d), out %d (want %d)", frames, height, width, len(x), c.InDim*vol, len(out), c.OutDim*vol)
	}
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return errorf("timestep %v", t)
	}
	if text == nil || text.m != m {
		return errorf("text prepared by another model (PrepareText)")
	}
	if tap == nil {
		tap = func(string, []float32) {}
	}
	d, n := c.Dim, frames*gh*gw

	// Time: e = MLP(sinusoid(t)) (dim), e0 = W·SiLU(e) (6, dim).
	sin := timestepEmbedding(c.FreqDim, t)
	e, h1, e0 := make([]float32, d), make([]float32, d), make([]float32, 6*d)
	m.time0.apply(p, h1, sin, 1)
	compute.SiLU(h1)
	m.time2.apply(p, e, h1, 1)
	copy(h1, e)
	compute.SiLU(h1)
	m.timeProj.apply(p, e0, h1, 1)
	tap("time_embedding.in", sin)
	tap("time_embedding", e)
	tap("time_projection", e0)

	// Patch embedding: the Conv3d with kernel = stride = 1×2×2 is a linear
	// layer over each token's 2×2 patch of every channel.
	patches := patchify(x, c.InDim, frames, height, width)
	xs := make([]float32, n*d)
	m.patch.apply(p, xs, patches, n)
	tap("patch_embedding", xs)

	w := newWork(c, n)
	rope := newRoPE(c.HeadDim(), frames, gh, gw)
	for l := range m.blocks {
		if err := ctx.Err(); err != nil {
			return &Error{Err: fmt.Errorf("block %d of %d: %w", l, c.NumLayers, err)}
		}
		m.blocks[l].forward(p, w, xs, e0, rope, text, l, c)
		tap(fmt.Sprintf("block%d", l), xs)
	}

	// Head: modulated by e (not e0), then unpatchify.
	shift, scale := make([]float32, d), make([]float32, d)
	compute.Add(shift, m.headMod[:d], e)
	compute.Add(scale, m.headMod[d:], e)
	modulate(w.h, xs, shift, scale, w.onePlus)
	y := make([]float32, n*4*c.OutDim)
	m.head.apply(p, y, w.h, n)
	tap("head", y)
	unpatchify(out, y, c.OutDim, frames, height, width)
	return nil
}

// patchify returns the (tokens, ch·4) patches of the latent x [ch][frames]
// [height][width]: token (f, i, j), in (frame, row, column) order, holds
// channel c's pixel (2i+q, 2j+r) at column c·4 + q·2 + r, the Conv3d
// kernel's (c, 0, q, r).
func patchify(x []float32, ch, frames, height, width int) []float32 {
	gh, gw, pw := height/2, width/2, 4*ch
	patches := make([]float32, frames*gh*gw*pw)
	for c := range ch {
		for f := range frames {
			for y := range height {
				row := x[((c*frames+f)*height+y)*width:][:width]
				tok := (f*gh + y/2) * gw
				for xx, v := range row {
					patches[(tok+xx/2)*pw+c*4+(y%2)*2+xx%2] = v
				}
			}
		}
	}
	return patches
}

// unpatchify is WanModel.unpatchify: head output (tokens, 2·2·ch) →
// latent out [ch][frames][height][width], channel c of pixel (2i+q, 2j+r)
// being column (q·2 + r)·ch + c of token (f, i, j) (einsum
// fhwpqrc→cfphqwr).
func unpatchify(out, y []float32, ch, frames, height, width int) {
	gh, gw, po := height/2, width/2, 4*ch
	for c := range ch {
		for f := range frames {
			for yy := range height {
				row := out[((c*frames+f)*height+yy)*width:][:width]
				tok := (f*gh + yy/2) * gw
				for xx := range row {
					row[xx] = y[(tok+xx/2)*po+((yy%2)*2+xx%2)*ch+c]
				}
			}
		}
	}
}

// work is one Forward's activations.
type work struct {
	h, q, k, v, att, y []float32    // (n, dim)
	ffn                []float32    // (n, ffnDim)
	mod                [6][]float32 // (dim) a block's modulation + e0
	onePlus            []float32    // (dim) 1 + scale
	attn               attnScratch
}

func newWork(c Config, n int) *work {
	nd := n * c.Dim
	w := &work{h: make([]float32, nd), q: make([]float32, nd), k: make([]float32, nd), v: make([]float32, nd),
		att: make([]float32, nd), y: make([]float32, nd), ffn: make([]float32, n*c.FFNDim), onePlus: make([]float32, c.Dim)}
	for i := range w.mod {
		w.mod[i] = make([]float32, c.Dim)
	}
	return w
}

// ActivationBytes returns the memory one Forward over a latent of
// frames×height×width allocates (the output latent is the caller's): the
// patches, the token stream, six (tokens, dim) work arrays and the FFN's,
// the head's output, one head's packed keys and values and a query
// block's scores for the self-attention (the larger of the two), the RoPE
// tables and 64 KiB of small allocations. Attention never holds a
// tokens × tokens matrix: its scores are queryBlock rows at a time.
func (c Config) ActivationBytes(frames, height, width int) int64 {
	n := int64(frames) * int64(height/2) * int64(width/2)
	d, hd := int64(c.Dim), int64(c.HeadDim())
	mp := (n + 15) / 16 * 16
	floats := n*(4*int64(c.InDim)+7*d+int64(c.FFNDim)+4*int64(c.OutDim)) + 2*mp*hd + 2*queryBlock*hd + queryBlock*mp
	pairs := hd / 2
	rope := 2 * 8 * pairs * (int64(frames) + int64(height/2) + int64(width/2)) // float64 cos and sin, at most every pair per axis
	return 4*floats + rope + 64<<10
}

// TextBytes returns the memory PrepareText keeps for a prompt of rows
// context rows (and allocates, with its input and hidden rows): the text
// embedding and every block's cross-attention keys and values over those
// rows and the one padding row, and 16 KiB of small allocations.
func (c Config) TextBytes(rows int) int64 {
	r := int64(min(rows+1, TextLen))
	return 4*r*(int64(c.TextDim)+2*int64(c.Dim)+2*int64(c.NumLayers)*int64(c.Dim)+1) + 16<<10
}

// forward runs block l on the token stream xs (n, dim):
//
//	x += self_attn(LN(x)·(1 + scale₁) + shift₁) · gate₁
//	x += cross_attn(norm3(x), text)
//	x += ffn(LN(x)·(1 + scale₂) + shift₂) · gate₂
//
// with (shift₁ … gate₂) = modulation + e0.
func (B *block) forward(p *compute.Pool, w *work, xs, e0 []float32, rope *ropeTables, text *Text, l int, c Config) {
	d := c.Dim
	n := len(xs) / d
	mod := &w.mod
	for i := range mod {
		compute.Add(mod[i], B.mod[i*d:(i+1)*d], e0[i*d:(i+1)*d])
	}

	modulate(w.h, xs, mod[0], mod[1], w.onePlus)
	B.q.apply(p, w.q, w.h, n)
	B.k.apply(p, w.k, w.h, n)
	B.v.apply(p, w.v, w.h, n)
	rmsRows(w.q, B.normQ, d)
	rmsRows(w.k, B.normK, d)
	rope.apply(p, w.q, c.NumHeads)
	rope.apply(p, w.k, c.NumHeads)
	w.attn.attend(p, w.att, w.q, w.k, w.v, n, n, d, c.NumHeads, nil)
	B.o.apply(p, w.y, w.att, n)
	gatedAdd(xs, w.y, mod[2], d)

	for i := 0; i < len(xs); i += d {
		compute.LayerNorm(w.h[i:i+d], xs[i:i+d], B.norm3W, B.norm3B, eps)
	}
	B.cq.apply(p, w.q, w.h, n)
	rmsRows(w.q, B.crossNormQ, d)
	w.attn.attend(p, w.att, w.q, text.k[l], text.v[l], n, text.rows, d, c.NumHeads, text.bias)
	B.co.apply(p, w.y, w.att, n)
	compute.Add(xs, xs, w.y)

	modulate(w.h, xs, mod[3], mod[4], w.onePlus)
	B.ffn0.apply(p, w.ffn, w.h, n)
	gelu(p, w.ffn)
	B.ffn2.apply(p, w.y, w.ffn, n)
	gatedAdd(xs, w.y, mod[5], d)
}

// modulate sets each row of h to LN(x)·(1 + scale) + shift: WanLayerNorm
// without affine, then the modulation, each operation rounded to float32
// (onePlus is scratch of the row's width).
func modulate(h, x, shift, scale, onePlus []float32) {
	d := len(onePlus)
	for i, s := range scale {
		onePlus[i] = 1 + s
	}
	for r := 0; r < len(x); r += d {
		row := h[r : r+d]
		compute.LayerNorm(row, x[r:r+d], nil, nil, eps)
		for i, v := range row {
			row[i] = float32(v*onePlus[i]) + shift[i]
		}
	}
}

// gatedAdd adds y·gate to x row by row.
func gatedAdd(x, y, gate []float32, d int) {
	for r := 0; r < len(x); r += d {
		xr, yr := x[r:r+d], y[r:r+d]
		for i, g := range gate {
			xr[i] += float32(yr[i] * g)
		}
	}
}

// geluChunk is how many values one gelu task takes (its exponentials sit
// in a stack buffer).
const geluChunk = 1024

// gelu replaces x by GELU's tanh approximation 0.5·x·(1 + tanh(u)), u =
// √(2/π)·(x + 0.044715·x³) (Hendrycks & Gimpel 2016; PyTorch's
// approximate='tanh'), as x·σ(2u) = x / (1 + e^(−2u)) by the identity
// 0.5·(1 + tanh(u)) = σ(2u), in float32 with kernel's vectorized
// exponential, in parallel chunks. compute.GELU (float64 tanh) is its
// specification: they differ by at most 4e-7 relative, and this is 3.5×
// faster on one thread, and parallel (the 1.3B model at 1280 tokens spent
// a fifth of its CPU time in compute.GELU, on one thread).
func gelu(p *compute.Pool, x []float32) {
	const c = -2 * 0.7978845608028654 // −2·√(2/π)
	p.For((len(x)+geluChunk-1)/geluChunk, func(lo, hi int) {
		var e [geluChunk]float32
		for ch := lo; ch < hi; ch++ {
			v := x[ch*geluChunk : min(len(x), (ch+1)*geluChunk)]
			t := e[:len(v)]
			for i, xi := range v {
				t[i] = float32(c * float32(xi+float32(0.044715*float32(xi*float32(xi*xi)))))
			}
			kernel.ExpShift(t, 0)
			for i, xi := range v {
				v[i] = xi / (1 + t[i])
			}
		}
	})
}

// rmsRows applies WanRMSNorm over each row of d values (all heads
// together) with weight g, in place.
func rmsRows(x, g []float32, d int) {
	for r := 0; r < len(x); r += d {
		compute.RMSNorm(x[r:r+d], x[r:r+d], g, eps)
	}
}

// timestepEmbedding is sinusoidal_embedding_1d(dim, t): [cos | sin] of
// t·10000^(−j/(dim/2)), in float64, then rounded to float32.
func timestepEmbedding(dim int, t float64) []float32 {
	half := dim / 2
	out := make([]float32, dim)
	for j := range half {
		a := t * math.Pow(ropeTheta, -float64(j)/float64(half))
		out[j] = float32(math.Cos(a))
		out[half+j] = float32(math.Sin(a))
	}
	return out
}

// ropeTables is Wan's 3-D rotary embedding (rope_params, rope_apply): a
// head's dims are read as complex pairs (2i, 2i+1); of its c = headDim/2
// pairs the first c − 2⌊c/3⌋ rotate by the token's frame, the next ⌊c/3⌋
// by its row, the last ⌊c/3⌋ by its column, pair j of an axis of width
// w = 2·pairs by angle pos·10000^(−2j/w). The angles and the rotation are
// float64, as the official code computes them.
type ropeTables struct {
	pairs    [3]int       // frame, row, column pairs
	cos, sin [3][]float64 // per axis (positions, pairs)
	headDim  int
	gh, gw   int // the token grid's rows and columns
}

func newRoPE(headDim, frames, gh, gw int) *ropeTables {
	c := headDim / 2
	r := &ropeTables{pairs: [3]int{c - 2*(c/3), c / 3, c / 3}, headDim: headDim, gh: gh, gw: gw}
	for a, positions := range [3]int{frames, gh, gw} {
		np, width := r.pairs[a], 2*r.pairs[a]
		r.cos[a], r.sin[a] = make([]float64, positions*np), make([]float64, positions*np)
		for pos := range positions {
			for j := range np {
				angle := float64(pos) * (1 / math.Pow(ropeTheta, float64(2*j)/float64(width)))
				r.cos[a][pos*np+j], r.sin[a][pos*np+j] = math.Cos(angle), math.Sin(angle)
			}
		}
	}
	return r
}

// apply rotates every head of every token of x (tokens, numHeads·headDim)
// in place.
func (r *ropeTables) apply(p *compute.Pool, x []float32, numHeads int) {
	hd := r.headDim
	d := numHeads * hd
	p.For(len(x)/d, func(lo, hi int) {
		for tok := lo; tok < hi; tok++ {
			pos := [3]int{tok / (r.gh * r.gw), tok / r.gw % r.gh, tok % r.gw}
			for h := range numHeads {
				v := x[tok*d+h*hd:][:hd]
				j := 0
				for a := range 3 {
					cs, sn := r.cos[a][pos[a]*r.pairs[a]:], r.sin[a][pos[a]*r.pairs[a]:]
					for k := range r.pairs[a] {
						re, im := float64(v[2*j]), float64(v[2*j+1])
						v[2*j], v[2*j+1] = float32(re*cs[k]-im*sn[k]), float32(re*sn[k]+im*cs[k])
						j++
					}
				}
			}
		}
	})
}

// queryBlock is how many queries one attention pass takes: its scores,
// queryBlock × keys floats, are the only n×m memory there is.
const queryBlock = 256

// attnScratch holds one head's packed keys and values and a query block's
// scores, reused across calls.
type attnScratch struct{ k, vt, q, s, o []float32 }

// attend sets out (n, dim) to multi-head attention softmax(q·kᵀ/√d + bias)·v
// of queries q (n, dim) over keys k and values v (m, dim), with an
// optional score bias per key. Per head, both products are MatMuls: the
// scores with the head's keys as a (m, d) matrix, the output with its
// values transposed as a (d, m) one; keys are padded with zero rows to a
// multiple of 16 (the float tiles' column block), whose weights are zeroed
// after the softmax.
func (a *attnScratch) attend(p *compute.Pool, out, q, k, v []float32, n, m, dim, numHeads int, bias []float32) {
	d := dim / numHeads
	mp := (m + 15) / 16 * 16
	kh, vt := grow(&a.k, mp*d), grow(&a.vt, d*mp)
	clear(kh)
	clear(vt)
	qb, s, ob := grow(&a.q, queryBlock*d), grow(&a.s, queryBlock*mp), grow(&a.o, queryBlock*d)
	scale := float32(1 / math.Sqrt(float64(d)))
	K, V := f32Matrix(kh, mp, d), f32Matrix(vt, d, mp)
	for h := range numHeads {
		for j := range m {
			copy(kh[j*d:(j+1)*d], k[j*dim+h*d:])
			for c, x := range v[j*dim+h*d:][:d] {
				vt[c*mp+j] = x
			}
		}
		for i0 := 0; i0 < n; i0 += queryBlock {
			nq := min(queryBlock, n-i0)
			for i := range nq {
				copy(qb[i*d:(i+1)*d], q[(i0+i)*dim+h*d:])
			}
			compute.MatMul(p, s[:nq*mp], K, qb[:nq*d], nq)
			p.For(nq, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					row := s[i*mp : i*mp+m]
					compute.Scale(row, scale)
					if bias != nil {
						compute.Add(row, row, bias)
					}
					compute.Softmax(row)
					clear(s[i*mp+m : (i+1)*mp])
				}
			})
			compute.MatMul(p, ob[:nq*d], V, s[:nq*mp], nq)
			for i := range nq {
				copy(out[(i0+i)*dim+h*d:][:d], ob[i*d:(i+1)*d])
			}
		}
	}
}

// f32Matrix views float32s as an F32 weight matrix.
func f32Matrix(v []float32, rows, cols int) compute.Matrix {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*rows*cols)
	w, err := compute.NewMatrix(tensor.F32, rows, cols, b)
	if err != nil {
		panic("wan: attention: " + err.Error()) // the shapes are this file's own
	}
	return w
}

// grow returns (*s)[:n], reallocating *s if it is shorter.
func grow(s *[]float32, n int) []float32 {
	if cap(*s) < n {
		*s = make([]float32, n)
	}
	return (*s)[:n]
}

// Error is a generate-stage error of the DiT: a latent, timestep or text
// it cannot run, or a cancelled call.
type Error struct{ Err error }

func (e *Error) Error() string { return "generate: Wan DiT: " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Stage reports the pipeline stage the error belongs to.
func (e *Error) Stage() string { return "generate" }

func errorf(format string, args ...any) error { return &Error{Err: fmt.Errorf(format, args...)} }
