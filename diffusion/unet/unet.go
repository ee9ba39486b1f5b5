package unet

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/kernel"
)

// The SD 1.x configuration (the CompVis v1-inference.yaml UNet): these are
// constants, not read from the file; the binder checks every shape.
const (
	latentChannels = 4   // in_channels = out_channels
	modelChannels  = 320 // model_channels
	timeDim        = 4 * modelChannels
	ctxDim         = 768  // context_dim: CLIP ViT-L/14's width
	numHeads       = 8    // num_heads (head dim = channels/8)
	numGroups      = 32   // GroupNorm32
	gnEps          = 1e-6 // every GroupNorm, as sd.cpp's ggml_group_norm_32
	lnEps          = 1e-5 // every LayerNorm
	freqDim        = modelChannels
)

// channelMult are the widths of the four resolutions, ×modelChannels;
// levels 0..2 have a spatial transformer after each ResBlock.
var channelMult = [4]int{1, 2, 4, 4}

const resBlocks = 2 // num_res_blocks per level

// UNet is a bound SD 1.x UNet. Eps may be called by one goroutine at a
// time (a mutex serializes calls); its working memory is kept between
// calls of the same size.
type UNet struct {
	timeIn   compute.Matrix // (1280, 320) time_embed.0
	timeInB  []float32      // (1280)
	timeOut  compute.Matrix // (1280, 1280) time_embed.2
	timeOutB []float32      // (1280)
	in       *conv.Conv     // input_blocks.0.0: 4→320, 3×3
	down     []stage        // input_blocks.1..11
	mid0     *resBlock      // middle_block.0
	midAttn  *transformer   // middle_block.1
	mid2     *resBlock      // middle_block.2
	up       []stage        // output_blocks.0..11
	outNormW []float32      // (320) out.0
	outNormB []float32      // (320)
	out      *conv.Conv     // out.2: 320→4, 3×3
	res      []*resBlock    // every ResBlock, in forward order (their time projections run first)
	bytes    int64

	mu sync.Mutex
	st *state // working memory of the last call's size
}

// stage is one entry of input_blocks or output_blocks: a ResBlock (or, for
// the downsampling entries, nothing), then optionally a transformer, then
// optionally a resampling convolution.
type stage struct {
	res  *resBlock
	attn *transformer
	down *conv.Conv   // Downsample: 3×3 stride 2 (input_blocks.N.0.op)
	upcv *conv.UpConv // Upsample: nearest ×2, then 3×3 (output_blocks.N.M.conv)
}

// resBlock is ResBlock (Ho et al. 2020's residual block with a timestep
// projection): h = conv(SiLU(GN(x))); h += W·SiLU(emb); h = conv(SiLU(GN(h)));
// out = skip(x) + h.
type resBlock struct {
	cin, cout          int
	inNormW, inNormB   []float32      // (cin) in_layers.0
	inConv             *conv.Conv     // in_layers.2 (cout, cin, 3, 3)
	emb                compute.Matrix // (cout, 1280) emb_layers.1
	embB               []float32      // (cout)
	outNormW, outNormB []float32      // (cout) out_layers.0
	outConv            *conv.Conv     // out_layers.3 (cout, cout, 3, 3)
	skip               *conv.Conv     // skip_connection (cout, cin, 1, 1), nil when cin == cout
	e                  []float32      // (cout) this call's emb_layers(emb)
}

// transformer is SpatialTransformer with one BasicTransformerBlock
// (Rombach et al. 2022, "High-Resolution Image Synthesis with Latent
// Diffusion Models", §3.3): GN, proj_in, self-attention, cross-attention
// over the text context, GEGLU feed-forward (Shazeer 2020), proj_out,
// residual. Attention is Vaswani et al. 2017's, 8 heads of dim/8.
type transformer struct {
	dim            int
	normW, normB   []float32  // (dim) norm
	projIn         *conv.Conv // (dim, dim) proj_in (a 1×1 conv), with its bias
	norm1W, norm1B []float32  // (dim) transformer_blocks.0.norm1
	q1, k1, v1, o1 *conv.Conv // (dim, dim) attn1.to_{q,k,v,out.0}; to_out.0 with its bias
	norm2W, norm2B []float32  // (dim) norm2
	q2, o2         *conv.Conv // (dim, dim) attn2.to_q, to_out.0 (with its bias)
	k2, v2         *conv.Conv // (dim, 768) attn2.to_k, to_v
	norm3W, norm3B []float32  // (dim) norm3
	ff1            *conv.Conv // (8·dim, dim) ff.net.0.proj, with its bias: [value | gate]
	ff2            *conv.Conv // (dim, 4·dim) ff.net.2, with its bias
	projOut        *conv.Conv // (dim, dim) proj_out, with its bias
}

// New binds the UNet's tensors from src, the checkpoint's
// model.diffusion_model.* view (checkpoint.Components.UNet.Source), checking
// every name and shape; the first problem is a load-stage error naming the
// tensor, the shape found and the shape wanted. Convolution kernels and
// the transformers' linear weights are packed once in F16, and their pages
// of a mapped file are then dropped from the resident set
// (checkpoint.Evicter); the time embedding's matrices alias src's data in
// the file's type.
func New(src checkpoint.Source) (*UNet, error) {
	b := &binder{Binder: checkpoint.NewBinder(src), path: src.Path()}
	b.evicter, _ = src.(checkpoint.Evicter)
	u := &UNet{}
	u.timeIn, u.timeInB = b.linear("time_embed.0", timeDim, modelChannels, true)
	u.timeOut, u.timeOutB = b.linear("time_embed.2", timeDim, timeDim, true)
	u.in = b.conv("input_blocks.0.0", modelChannels, latentChannels, 3, 1)

	// input_blocks: per level, resBlocks × (ResBlock [+ transformer]), then
	// a Downsample except after the last level. skips records the channels
	// of every input block's output, which output_blocks concatenate back.
	ch := modelChannels
	skips := []int{ch}
	n := 1
	for level, mult := range channelMult {
		for range resBlocks {
			p := fmt.Sprintf("input_blocks.%d.", n)
			s := stage{res: b.resBlock(p+"0.", ch, mult*modelChannels)}
			ch = mult * modelChannels
			if level < 3 {
				s.attn = b.transformer(p+"1.", ch)
			}
			u.down = append(u.down, s)
			skips = append(skips, ch)
			n++
		}
		if level < 3 {
			u.down = append(u.down, stage{down: b.conv(fmt.Sprintf("input_blocks.%d.0.op", n), ch, ch, 3, 2)})
			skips = append(skips, ch)
			n++
		}
	}
	u.mid0, u.midAttn, u.mid2 = b.resBlock("middle_block.0.", ch, ch), b.transformer("middle_block.1.", ch), b.resBlock("middle_block.2.", ch, ch)

	// output_blocks: per level from the deepest, resBlocks+1 ResBlocks over
	// [h, skip] [+ transformer], the last of each level but the top one
	// followed by an Upsample.
	n = 0
	for level := 3; level >= 0; level-- {
		out := channelMult[level] * modelChannels
		for i := range resBlocks + 1 {
			p := fmt.Sprintf("output_blocks.%d.", n)
			sk := skips[len(skips)-1]
			skips = skips[:len(skips)-1]
			s := stage{res: b.resBlock(p+"0.", ch+sk, out)}
			ch = out
			next := 1
			if level < 3 {
				s.attn = b.transformer(p+"1.", ch)
				next = 2
			}
			if level > 0 && i == resBlocks {
				s.upcv = b.upConv(fmt.Sprintf("%s%d.conv", p, next), ch, ch)
			}
			u.up = append(u.up, s)
			n++
		}
	}
	u.outNormW, u.outNormB = b.vector("out.0.weight", ch), b.vector("out.0.bias", ch)
	u.out = b.conv("out.2", latentChannels, ch, 3, 1)
	if err := b.Err(); err != nil {
		return nil, err
	}
	if un := b.Unused(); len(un) > 0 {
		return nil, &checkpoint.Error{Path: src.Path(), Tensor: un[0],
			Err: fmt.Errorf("not part of an SD 1.x UNet (%d such tensors; is this another family or an inpainting UNet?)", len(un))}
	}
	u.res = b.res
	u.bytes = b.bytes
	return u, nil
}

// WeightBytes returns the bytes the bound weights occupy: the packed
// convolutions, the matrices as the file has them, the vectors as float32.
func (u *UNet) WeightBytes() int64 { return u.bytes }

// Close releases the working memory kept between calls.
func (u *UNet) Close() {
	u.mu.Lock()
	u.st = nil
	u.mu.Unlock()
}

// Eps runs the UNet once: ε = UNet(x, t, cond).
//
//   - x: the latent [4][h][w] (planar, x fastest), already scaled by c_in;
//     h and w are the latent size (image size / 8), positive multiples of 8.
//   - t: the timestep, fractional in general (diffusion.CompVis.SigmaToT).
//   - cond: the text context [nctx][768] (nctx = 77 per CLIP window).
//   - eps: the output [4][h][w].
//
// It checks ctx between blocks and returns ctx.Err() (wrapped, with where
// it stopped) when cancelled. Bad arguments are generate-stage errors.
func (u *UNet) Eps(ctx context.Context, p *compute.Pool, x []float32, h, w int, t float32, cond []float32, nctx int, eps []float32) error {
	switch {
	case h <= 0 || w <= 0 || h%8 != 0 || w%8 != 0:
		return argErrorf("latent %dx%d: height and width must be positive multiples of 8 (images of multiples of 64 pixels)", h, w)
	case len(x) != latentChannels*h*w:
		return argErrorf("latent has %d values, want %d for [4][%d][%d]", len(x), latentChannels*h*w, h, w)
	case len(eps) != latentChannels*h*w:
		return argErrorf("output has room for %d values, want %d for [4][%d][%d]", len(eps), latentChannels*h*w, h, w)
	case nctx <= 0 || len(cond) != nctx*ctxDim:
		return argErrorf("context has %d values for %d tokens, want %d tokens × %d", len(cond), nctx, max(nctx, 1), ctxDim)
	case math.IsNaN(float64(t)) || math.IsInf(float64(t), 0):
		return argErrorf("timestep %g is not finite", t)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.st == nil || u.st.h != h || u.st.w != w || u.st.nctx != nctx {
		u.st = nil // let the old buffers go before the new ones are made
		u.st = newState(h, w, nctx)
	}
	r := &run{ctx: ctx, p: p, s: u.st, cond: cond, nctx: nctx}
	return u.forward(r, x, h, w, t, eps)
}

// forward is the network, top to bottom (CompVis ldm/modules/diffusionmodules/openaimodel.py
// UNetModel.forward, as sd.cpp's UnetModelBlock runs it).
func (u *UNet) forward(r *run, x []float32, h, w int, t float32, eps []float32) error {
	s := r.s
	// Timestep embedding → time_embed MLP (320 → 1280 → SiLU → 1280), then
	// every ResBlock's projection of SiLU(emb) (1280 → its width).
	timestepEmbedding(s.temb, t)
	compute.MatMul(r.p, s.emb, u.timeIn, s.temb, 1)
	compute.Add(s.emb, s.emb, u.timeInB)
	compute.SiLU(s.emb)
	compute.MatMul(r.p, s.emb2, u.timeOut, s.emb, 1)
	compute.Add(s.emb2, s.emb2, u.timeOutB)
	compute.SiLU(s.emb2) // emb_layers.0 is SiLU, shared by all the projections
	for _, rb := range u.res {
		compute.MatMul(r.p, rb.e, rb.emb, s.emb2, 1)
		compute.Add(rb.e, rb.e, rb.embB)
	}

	in := s.arena.Map(h, w, latentChannels) // (h, w, 4)
	if err := in.SetCHW(x); err != nil {
		return err
	}
	hcur, err := r.conv(u.in, in) // (h, w, 320)
	s.arena.Release(in)
	if err != nil {
		return err
	}
	hs := []*conv.Map{hcur} // the skips, pushed by every input block
	for i := range u.down {
		st := &u.down[i]
		if err := r.check("input_blocks.%d", i+1); err != nil {
			return err
		}
		if st.down != nil {
			hcur, err = r.conv(st.down, hcur) // (h/2, w/2, c)
		} else {
			hcur, err = r.stage(st, hcur)
		}
		if err != nil {
			return err
		}
		hs = append(hs, hcur)
	}

	if err := r.check("middle_block"); err != nil {
		return err
	}
	m, err := r.resBlock(u.mid0, hcur)
	if err == nil {
		m, err = r.transformer(u.midAttn, m, true)
	}
	if err == nil {
		m, err = r.resBlockRelease(u.mid2, m)
	}
	if err != nil {
		return err
	}
	hcur = m

	for i := range u.up {
		st := &u.up[i]
		if err := r.check("output_blocks.%d", i); err != nil {
			return err
		}
		skip := hs[len(hs)-1]
		hs = hs[:len(hs)-1]
		cat := concat(r, s.arena, hcur, skip) // (h, w, c + skipC): torch.cat([h, skip], dim=1)
		s.arena.Release(hcur)
		if skip != hcur {
			s.arena.Release(skip)
		}
		if hcur, err = r.stage(st, cat); err != nil {
			return err
		}
		s.arena.Release(cat)
	}

	// out: GN, SiLU, conv 320 → 4.
	if err := r.check("out"); err != nil {
		return err
	}
	if err := r.normSiLU(hcur, u.outNormW, u.outNormB); err != nil {
		return err
	}
	o, err := r.conv(u.out, hcur)
	s.arena.Release(hcur)
	if err != nil {
		return err
	}
	copy(eps, o.ToCHW())
	s.arena.Release(o)
	return nil
}

// stage runs one input or output block on x (which it does not release):
// ResBlock, transformer, resampling.
func (r *run) stage(st *stage, x *conv.Map) (*conv.Map, error) {
	y, err := r.resBlock(st.res, x)
	if err == nil && st.attn != nil {
		y, err = r.transformer(st.attn, y, true)
	}
	if err == nil && st.upcv != nil {
		if err = r.check("upsample"); err == nil {
			up := r.s.arena.Map(2*y.H, 2*y.W, st.upcv.Cout)
			err = st.upcv.Apply(r.p, up, y, nil, false)
			r.s.arena.Release(y)
			y = up
		}
	}
	return y, err
}

// resBlock runs rb on x (not released) into a new map.
func (r *run) resBlock(rb *resBlock, x *conv.Map) (*conv.Map, error) {
	a := r.s.arena
	hn := a.Map(x.H, x.W, x.C)
	copy(hn.Data, x.Data)
	if err := r.normSiLU(hn, rb.inNormW, rb.inNormB); err != nil {
		return nil, err
	}
	h1 := a.Map(x.H, x.W, rb.cout)
	err := rb.inConv.Apply(r.p, h1, hn, nil, false)
	a.Release(hn)
	if err != nil {
		return nil, err
	}
	addChannels(r.p, h1, rb.e) // h += emb_layers(emb)[:, :, None, None]
	if err := r.normSiLU(h1, rb.outNormW, rb.outNormB); err != nil {
		return nil, err
	}
	skip := x
	if rb.skip != nil {
		skip = a.Map(x.H, x.W, rb.cout)
		if err := rb.skip.Apply(r.p, skip, x, nil, false); err != nil {
			return nil, err
		}
	}
	out := a.Map(x.H, x.W, rb.cout)
	err = rb.outConv.Apply(r.p, out, h1, skip, false) // skip(x) + conv(h): dropout is the identity at inference
	a.Release(h1)
	if skip != x {
		a.Release(skip)
	}
	return out, err
}

// resBlockRelease is resBlock that releases x.
func (r *run) resBlockRelease(rb *resBlock, x *conv.Map) (*conv.Map, error) {
	y, err := r.resBlock(rb, x)
	r.s.arena.Release(x)
	return y, err
}

// transformer runs the spatial transformer on x into a new map; x is
// released when release is set.
func (r *run) transformer(tb *transformer, x *conv.Map, release bool) (*conv.Map, error) {
	s, p := r.s, r.p
	n, dim := x.H*x.W, tb.dim
	xs := s.x[:n*dim]        // (n, dim) the block's residual stream
	hn := s.hn[:n*dim]       // (n, dim) normed input of each sub-layer
	q := s.q[:n*dim]         // (n, dim)
	att := s.att[:n*dim]     // (n, dim)
	ff := s.ff[:n*8*dim]     // (n, 8·dim)
	gated := s.ff2[:n*4*dim] // (n, 4·dim)

	// norm (GroupNorm over the map) and proj_in, to token rows. Every
	// linear layer is a 1×1 convolution over the rows (conv.Conv.Rows), its
	// bias and the residual add fused: lin(out, x, skip) is out = x·Wᵀ + b
	// + skip, after which out and the residual stream swap names.
	g := s.arena.Map(x.H, x.W, dim)
	copy(g.Data, x.Data)
	if err := conv.GroupNorm(p, g, numGroups, tb.normW, tb.normB, gnEps, false); err != nil {
		return nil, err
	}
	for y := range x.H {
		copy(hn[y*x.W*dim:], g.Row(y))
	}
	s.arena.Release(g)
	var err error
	lin := func(c *conv.Conv, out, in, skip []float32, rows int) {
		if err == nil {
			err = c.Rows(p, out, in, skip, rows)
		}
	}
	lin(tb.projIn, xs, hn, nil, n)

	// x += attn1(norm1(x)): self-attention over the n positions.
	layerNorm(p, hn, xs, tb.norm1W, tb.norm1B, dim)
	k, v := s.k[:n*dim], s.v[:n*dim]
	lin(tb.q1, q, hn, nil, n)
	lin(tb.k1, k, hn, nil, n)
	lin(tb.v1, v, hn, nil, n)
	if err != nil {
		return nil, err
	}
	s.attn.run(p, att, q, k, v, n, n, dim, numHeads)
	lin(tb.o1, q, att, xs, n)
	xs, q = q, xs
	if err := r.check("cross-attention"); err != nil {
		return nil, err
	}

	// x += attn2(norm2(x), context): cross-attention over the nctx tokens.
	layerNorm(p, hn, xs, tb.norm2W, tb.norm2B, dim)
	k, v = s.k[:r.nctx*dim], s.v[:r.nctx*dim]
	lin(tb.q2, q, hn, nil, n)
	lin(tb.k2, k, r.cond, nil, r.nctx)
	lin(tb.v2, v, r.cond, nil, r.nctx)
	if err != nil {
		return nil, err
	}
	s.attn.run(p, att, q, k, v, n, r.nctx, dim, numHeads)
	lin(tb.o2, q, att, xs, n)
	xs, q = q, xs

	// x += ff(norm3(x)): GEGLU, value · GELU(gate), then back to dim.
	layerNorm(p, hn, xs, tb.norm3W, tb.norm3B, dim)
	lin(tb.ff1, ff, hn, nil, n)
	if err != nil {
		return nil, err
	}
	geglu(p, gated, ff, 4*dim)
	lin(tb.ff2, q, gated, xs, n)
	xs = q

	// proj_out, back to the map, + the block's input.
	lin(tb.projOut, hn, xs, nil, n)
	if err != nil {
		return nil, err
	}
	out := s.arena.Map(x.H, x.W, dim)
	for y := range x.H {
		row, in := out.Row(y), x.Row(y)
		compute.Add(row, hn[y*x.W*dim:(y+1)*x.W*dim], in)
	}
	if release {
		s.arena.Release(x)
	}
	return out, nil
}

// timestepEmbedding writes the sinusoidal embedding of t (DDPM's, as
// ggml_timestep_embedding computes it, cosines first):
// freq_j = exp(−ln(10000)·j/160), out = [cos(t·freq_j) | sin(t·freq_j)].
func timestepEmbedding(out []float32, t float32) {
	half := len(out) / 2
	lnMax := float32(math.Log(10000))
	for j := range half {
		freq := float32(math.Exp(float64(-lnMax * float32(j) / float32(half))))
		arg := t * freq
		out[j] = float32(math.Cos(float64(arg)))
		out[half+j] = float32(math.Sin(float64(arg)))
	}
}

// run is one Eps call's context.
type run struct {
	ctx  context.Context
	p    *compute.Pool
	s    *state
	cond []float32
	nctx int
}

// check returns the context's error, saying which block was next.
func (r *run) check(format string, args ...any) error {
	if err := r.ctx.Err(); err != nil {
		return &Error{Err: fmt.Errorf("before %s: %w", fmt.Sprintf(format, args...), err)}
	}
	return nil
}

// conv applies c to x (not released) into a new map.
func (r *run) conv(c *conv.Conv, x *conv.Map) (*conv.Map, error) {
	y := r.s.arena.Map(c.OutSize(x.H), c.OutSize(x.W), c.Cout)
	return y, c.Apply(r.p, y, x, nil, false)
}

// normSiLU applies GroupNorm32 then SiLU to m in place (the border stays
// zero: SiLU(0) = 0).
func (r *run) normSiLU(m *conv.Map, w, b []float32) error {
	if err := conv.GroupNorm(r.p, m, numGroups, w, b, gnEps, false); err != nil {
		return err
	}
	parallelChunks(r.p, len(m.Data), func(lo, hi int) { compute.SiLU(m.Data[lo:hi]) })
	return nil
}

// concat returns the map [a | b] along channels.
func concat(r *run, ar *conv.Arena, a, b *conv.Map) *conv.Map {
	out := ar.Map(a.H, a.W, a.C+b.C)
	r.p.For(a.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			o, ra, rb := out.Row(y), a.Row(y), b.Row(y)
			for x := range a.W {
				copy(o[x*out.C:], ra[x*a.C:(x+1)*a.C])
				copy(o[x*out.C+a.C:], rb[x*b.C:(x+1)*b.C])
			}
		}
	})
	return out
}

// addChannels adds v[c] to every pixel's channel c.
func addChannels(p *compute.Pool, m *conv.Map, v []float32) {
	p.For(m.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			row := m.Row(y)
			for x := 0; x < len(row); x += m.C {
				compute.Add(row[x:x+m.C], row[x:x+m.C], v)
			}
		}
	})
}

// addRows adds b to every row of x.
func addRows(p *compute.Pool, x, b []float32) {
	d := len(b)
	p.For(len(x)/d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			compute.Add(x[i*d:(i+1)*d], x[i*d:(i+1)*d], b)
		}
	})
}

// layerNorm normalizes every row of dim values of x into out.
func layerNorm(p *compute.Pool, out, x, w, b []float32, dim int) {
	p.For(len(x)/dim, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			compute.LayerNorm(out[i*dim:(i+1)*dim], x[i*dim:(i+1)*dim], w, b, lnEps)
		}
	})
}

// geglu writes out[i] = ff[i][:d] · GELU(ff[i][d:]) per row (GEGLU: the
// projection's first half is the value, the second the gate, as CompVis's
// x, gate = proj(x).chunk(2, dim=-1)). GELU is the tanh form ggml uses,
// 0.5·g·(1 + tanh(u)) with u = √(2/π)·(g + 0.044715·g³), computed as
// g / (1 + e^(−2u)) (the same function: 0.5·(1 + tanh u) = σ(2u)) with
// kernel's vectorised float32 exponential; e^(−2u) overflowing to +Inf
// for g ≪ 0 gives the limit −0.
func geglu(p *compute.Pool, out, ff []float32, d int) {
	const c = 0.7978845608028654 // √(2/π)
	p.For(len(out)/d, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o := out[i*d : (i+1)*d]
			value, gate := ff[i*2*d:i*2*d+d], ff[i*2*d+d:(i+1)*2*d]
			for j, g := range gate {
				o[j] = -2 * c * (g + 0.044715*g*g*g)
			}
			kernel.ExpShift(o, 0)
			for j, g := range gate {
				o[j] = value[j] * (g / (1 + o[j]))
			}
		}
	})
}

// parallelChunks runs fn over [0, n) in chunks of at least 16 Ki values.
func parallelChunks(p *compute.Pool, n int, fn func(lo, hi int)) {
	const chunk = 16 << 10
	p.For((n+chunk-1)/chunk, func(lo, hi int) { fn(lo*chunk, min(hi*chunk, n)) })
}

// Error is a generate-stage error of the UNet: a bad argument, or a call
// cancelled between blocks.
type Error struct{ Err error }

func (e *Error) Error() string { return "generate: unet: " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Stage reports the pipeline stage the error belongs to.
func (e *Error) Stage() string { return "generate" }

func argErrorf(format string, args ...any) error { return &Error{Err: fmt.Errorf(format, args...)} }
