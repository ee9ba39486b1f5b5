package vae

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/tensor"
)

// The KL-f8 autoencoder of Stable Diffusion 1.x and 2.x (Rombach et al.,
// "High-Resolution Image Synthesis with Latent Diffusion Models", 2022;
// ldm/modules/diffusionmodules/model.py: Encoder, Decoder, ResnetBlock,
// AttnBlock, Upsample, Downsample; configs/autoencoder kl-f8: ch 128,
// ch_mult (1, 2, 4, 4), 2 ResBlocks per level, z_channels 4, double_z).
//
// Decoder, from the latent z [4][h][w] (the diffusion latent divided by
// KLScaleFactor):
//
//	post_quant_conv 1×1 4→4, conv_in 3×3 4→512
//	mid: ResBlock 512, AttnBlock 512, ResBlock 512
//	up.3 … up.0 (channels 512, 512, 256, 128): 3 ResBlocks each, then for
//	  up.3, up.2 and up.1 a nearest ×2 upsampling and a 3×3 conv
//	norm_out, SiLU, conv_out 3×3 128→3: RGB in about [-1, 1] at 8h×8w
//
// Encoder, from RGB [3][H][W] in [-1, 1]: conv_in 3→128, down.0 … down.3
// (channels 128, 256, 512, 512; 2 ResBlocks each, then for down.0-2 a
// stride-2 3×3 conv after padding one zero row and column at the bottom and
// right only), mid as in the decoder, norm_out, SiLU, conv_out 512→8,
// quant_conv 1×1 8→8: the posterior's mean (channels 0-3) and log-variance
// (4-7).
//
// ResBlock(in, out): h = conv1(SiLU(GN(x))); h = conv2(SiLU(GN(h)));
// x + h, x through a 1×1 nin_shortcut when in ≠ out. AttnBlock:
// single-head attention over all h·w positions of GN(x) with 1×1 q, k, v
// and proj_out, softmax(q·kᵀ/√512)·v, added to x. Every GroupNorm has 32
// groups, eps 1e-6 and an affine; there is no dropout at inference.
const (
	KLLatentChannels = 4
	// KLScaleFactor maps VAE latents to the diffusion model's latents
	// (SD 1.x's scale_factor; shift 0).
	KLScaleFactor = 0.18215
	klGroups      = 32
	klEps         = 1e-6
	klMid         = 512 // channels of the mid blocks
)

// klChannels are the channels of levels 0..3 (ch 128 · ch_mult).
var klChannels = [4]int{128, 256, 512, 512}

// KL is a bound KL-f8 autoencoder: weights widened to float32 and packed
// for compute/conv.
type KL struct {
	dec klDecoder
	enc klEncoder
}

type gnParams struct{ gamma, beta []float32 }

type resBlock struct {
	norm1, norm2 gnParams
	conv1, conv2 *conv.Conv
	short        *conv.Conv // nin_shortcut, nil when in == out
}

type attnBlock struct {
	norm       gnParams
	q, k, v, o *conv.Conv // 1×1, o is proj_out
}

type klMidBlock struct {
	block1 resBlock
	attn   attnBlock
	block2 resBlock
}

type klDecoder struct {
	postQuant *conv.Conv // 1×1 4→4
	in        *conv.Conv // 3×3 4→512
	mid       klMidBlock
	up        [4]struct {
		blocks [3]resBlock
		up     *conv.UpConv // nil for level 0
	}
	normOut gnParams
	out     *conv.Conv // 3×3 128→3
}

type klEncoder struct {
	in   *conv.Conv // 3×3 3→128
	down [4]struct {
		blocks [2]resBlock
		down   *conv.Conv // stride 2, padding (0, 1, 0, 1); nil for level 3
	}
	mid     klMidBlock
	normOut gnParams
	out     *conv.Conv // 3×3 512→8
	quant   *conv.Conv // 1×1 8→8
}

// klBinder binds a VAE's tensors through checkpoint.Binder, packing convs.
type klBinder struct{ *checkpoint.Binder }

func (b klBinder) gn(prefix string, c int) gnParams {
	return gnParams{gamma: b.Float32(prefix+".weight", c), beta: b.Float32(prefix+".bias", c)}
}

// conv binds a convolution. A kernel the file stores in F16 stays F16
// (conv.NewConvPadF16: half the memory, the same results, since the
// kernels widen each weight exactly as a float32 copy would hold it); F32
// and BF16 kernels are packed as float32.
func (b klBinder) conv(prefix string, cout, cin, k, stride, pad int, shape ...int) *conv.Conv {
	if shape == nil {
		shape = []int{cout, cin, k, k}
	}
	if t := b.Raw(prefix+".weight", shape...); t != nil && t.DType == tensor.F16 {
		w := b.Float16(prefix+".weight", shape...)
		bias := b.Float32(prefix+".bias", cout)
		if b.Err() != nil {
			return nil
		}
		c, err := conv.NewConvPadF16(w, bias, cout, cin, k, stride, pad)
		if err != nil {
			b.Fail(fmt.Errorf("load: %s: %w", prefix, err))
		}
		return c
	}
	w := b.Float32(prefix+".weight", shape...)
	bias := b.Float32(prefix+".bias", cout)
	if b.Err() != nil {
		return nil
	}
	c, err := conv.NewConvPad(w, bias, cout, cin, k, stride, pad)
	if err != nil {
		b.Fail(fmt.Errorf("load: %s: %w", prefix, err))
	}
	return c
}

// linear binds an attention projection: LDM stores it as a 1×1 conv
// [c, c, 1, 1]; files converted from other layouts may hold [c, c].
func (b klBinder) linear(prefix string, c int) *conv.Conv {
	shape := []int{c, c, 1, 1}
	if b.Has(prefix + ".weight") {
		if t := b.Raw(prefix + ".weight"); t != nil && len(t.Shape) == 2 {
			shape = []int{c, c}
		}
	}
	return b.conv(prefix, c, c, 1, 1, 0, shape...)
}

// upconv binds an upsampling conv (folded into the ×2 upsampling). Its
// combined 2×2 kernels are sums of 3×3 taps formed in float32; where the
// file stores the kernel in F16 they are kept rounded to binary16
// (conv.NewUpConvF16, as the UNet keeps its own: half the memory, one
// more rounding of each combined weight), else in float32.
func (b klBinder) upconv(prefix string, c int) *conv.UpConv {
	t := b.Raw(prefix+".weight", c, c, 3, 3)
	w := b.Float32(prefix+".weight", c, c, 3, 3)
	bias := b.Float32(prefix+".bias", c)
	if b.Err() != nil {
		return nil
	}
	newUp := conv.NewUpConv
	if t != nil && t.DType == tensor.F16 {
		newUp = conv.NewUpConvF16
	}
	u, err := newUp(w, bias, c, c)
	if err != nil {
		b.Fail(fmt.Errorf("load: %s: %w", prefix, err))
	}
	return u
}

func (b klBinder) res(prefix string, cin, cout int) resBlock {
	r := resBlock{
		norm1: b.gn(prefix+".norm1", cin),
		conv1: b.conv(prefix+".conv1", cout, cin, 3, 1, 1),
		norm2: b.gn(prefix+".norm2", cout),
		conv2: b.conv(prefix+".conv2", cout, cout, 3, 1, 1),
	}
	if cin != cout {
		r.short = b.conv(prefix+".nin_shortcut", cout, cin, 1, 1, 0)
	}
	return r
}

func (b klBinder) mid(prefix string) klMidBlock {
	return klMidBlock{
		block1: b.res(prefix+".block_1", klMid, klMid),
		attn: attnBlock{
			norm: b.gn(prefix+".attn_1.norm", klMid),
			q:    b.linear(prefix+".attn_1.q", klMid),
			k:    b.linear(prefix+".attn_1.k", klMid),
			v:    b.linear(prefix+".attn_1.v", klMid),
			o:    b.linear(prefix+".attn_1.proj_out", klMid),
		},
		block2: b.res(prefix+".block_2", klMid, klMid),
	}
}

// NewKL binds an SD 1.x VAE from src in LDM names without a prefix
// (encoder.*, decoder.*, quant_conv.*, post_quant_conv.*): the view
// checkpoint.SD1Components(...).VAE.Source. Convolution kernels stored in
// F16 stay F16, the upsampling convs' combined kernels rounded to
// binary16 (the VAE's 84M parameters take 168 MiB, 335 MiB widened); F32
// and BF16 weights and the norms are float32. A missing or
// mis-shaped tensor is a load-stage *checkpoint.Error naming it, the shape
// found and the shape wanted; a tensor under those names that the
// architecture does not have (another VAE's layout) is refused by name,
// others (a training checkpoint's loss.*) are ignored.
func NewKL(src checkpoint.Source) (*KL, error) {
	b := klBinder{checkpoint.NewBinder(src)}
	k := &KL{}
	d := &k.dec
	d.postQuant = b.conv("post_quant_conv", KLLatentChannels, KLLatentChannels, 1, 1, 0)
	d.in = b.conv("decoder.conv_in", klMid, KLLatentChannels, 3, 1, 1)
	d.mid = b.mid("decoder.mid")
	cin := klMid
	for i := 3; i >= 0; i-- {
		c := klChannels[i]
		for j := range d.up[i].blocks {
			d.up[i].blocks[j] = b.res(fmt.Sprintf("decoder.up.%d.block.%d", i, j), cin, c)
			cin = c
		}
		if i > 0 {
			d.up[i].up = b.upconv(fmt.Sprintf("decoder.up.%d.upsample.conv", i), c)
		}
	}
	d.normOut = b.gn("decoder.norm_out", klChannels[0])
	d.out = b.conv("decoder.conv_out", 3, klChannels[0], 3, 1, 1)

	e := &k.enc
	e.in = b.conv("encoder.conv_in", klChannels[0], 3, 3, 1, 1)
	cin = klChannels[0]
	for i := range e.down {
		c := klChannels[i]
		for j := range e.down[i].blocks {
			e.down[i].blocks[j] = b.res(fmt.Sprintf("encoder.down.%d.block.%d", i, j), cin, c)
			cin = c
		}
		if i < 3 {
			e.down[i].down = b.conv(fmt.Sprintf("encoder.down.%d.downsample.conv", i), c, c, 3, 2, 0)
		}
	}
	e.mid = b.mid("encoder.mid")
	e.normOut = b.gn("encoder.norm_out", klMid)
	e.out = b.conv("encoder.conv_out", 2*KLLatentChannels, klMid, 3, 1, 1)
	e.quant = b.conv("quant_conv", 2*KLLatentChannels, 2*KLLatentChannels, 1, 1, 0)
	if err := b.Err(); err != nil {
		return nil, err
	}
	var extra []string
	for _, n := range b.Unused() {
		for _, p := range []string{"encoder.", "decoder.", "quant_conv.", "post_quant_conv."} {
			if strings.HasPrefix(n, p) {
				extra = append(extra, n)
			}
		}
	}
	if len(extra) > 0 {
		more := ""
		if len(extra) > 3 {
			extra, more = extra[:3], fmt.Sprintf(" and %d more", len(extra)-3)
		}
		return nil, &checkpoint.Error{Path: src.Path(), Tensor: extra[0],
			Err: fmt.Errorf("not part of SD's KL-f8 autoencoder (unexpected tensors %q%s): another VAE architecture", extra, more)}
	}
	return k, nil
}

// WeightBytes returns the bytes the packed weights occupy.
func (k *KL) WeightBytes() int64 {
	var n int64
	add := func(c interface{ Bytes() int64 }) { n += c.Bytes() }
	gn := func(g gnParams) { n += 4 * int64(len(g.gamma)+len(g.beta)) }
	res := func(r *resBlock) {
		gn(r.norm1)
		gn(r.norm2)
		add(r.conv1)
		add(r.conv2)
		if r.short != nil {
			add(r.short)
		}
	}
	mid := func(m *klMidBlock) {
		res(&m.block1)
		res(&m.block2)
		gn(m.attn.norm)
		add(m.attn.q)
		add(m.attn.k)
		add(m.attn.v)
		add(m.attn.o)
	}
	d := &k.dec
	add(d.postQuant)
	add(d.in)
	mid(&d.mid)
	for i := range d.up {
		for j := range d.up[i].blocks {
			res(&d.up[i].blocks[j])
		}
		if d.up[i].up != nil {
			add(d.up[i].up)
		}
	}
	gn(d.normOut)
	add(d.out)
	e := &k.enc
	add(e.in)
	for i := range e.down {
		for j := range e.down[i].blocks {
			res(&e.down[i].blocks[j])
		}
		if e.down[i].down != nil {
			add(e.down[i].down)
		}
	}
	mid(&e.mid)
	gn(e.normOut)
	add(e.out)
	add(e.quant)
	return n
}

// KLDecodeOptions configure a KL decode. The zero value decodes the whole
// image at once.
type KLDecodeOptions struct {
	// Tile is the tile edge in latent pixels (output pixels / 8); 0 decodes
	// untiled. A DecodePlan from PlanKLDecode or ChooseKLTile carries it.
	Tile int
	// Overlap is the latent pixels adjacent tiles share; 0 means
	// KLDefaultOverlap.
	Overlap int
	// Peak, if not nil, receives the bytes the decode held at its peak
	// (maps, packed attention keys and values, the output): what
	// KLDecodeBytes predicts.
	Peak *int64
}

// KLDefaultOverlap is the KL decoder's tile overlap in latent pixels (64
// px). Its tiles are not exact whatever the overlap (their GroupNorms see
// only the tile), so the overlap buys a smooth blend, not exactness (the
// tiled part's convolutions alone see 6.25 latent pixels); a larger one
// costs much more work (at 512² in tiles of 256 px: 9 tiles with 8, 25
// with TAEF2's 24).
const KLDefaultOverlap = 8

func klOverlap(o int) int {
	if o == 0 {
		return KLDefaultOverlap
	}
	return o
}

// KLOptions returns the options that run plan p.
func (p DecodePlan) KLOptions() KLDecodeOptions {
	return KLDecodeOptions{Tile: p.Tile, Overlap: p.Overlap}
}

// klNet carries a forward pass's runner, context, memory meter and
// progress.
type klNet struct {
	ctx   context.Context
	r     conv.Runner
	m     *klMeter
	stage pipeline.Stage
	done  int64
	total int64
}

func (n *klNet) step() {
	n.done++
	pipeline.TraceFrom(n.ctx).OnProgress(n.stage, n.done, n.total)
}

// Units of progress: a ResBlock, an attention, a resampling conv, the
// final norm and conv.
const (
	klHeadUnits = 1 + 3 + 3           // conv_in; mid; up.3's blocks
	klTailUnits = 3*(1+3) + 1         // per level 2, 1, 0: upsample + blocks; norm_out + conv_out
	klEncUnits  = 1 + 4*2 + 3 + 3 + 1 // conv_in; blocks; downsamples; mid; out
)

// Decode maps a latent z [4][h][w] (the diffusion latent already divided
// by KLScaleFactor) to RGB [3][8h][8w] in about [-1, 1], unclamped: what
// stable-diffusion.cpp's VAE computes before it maps (x+1)/2 to bytes
// (KLBytes). p may be nil (serial).
//
// The latent-resolution part (conv_in, the mid block with its attention
// over all h·w positions, and up.3's ResBlocks) always runs on the whole
// latent. With opts.Tile the rest runs on overlapping tiles of that output,
// blended as the TAEF2 decoder's (see ramp): each tile's GroupNorms see
// only the tile, as in stable-diffusion.cpp's --vae-tiling, so a tiled
// decode differs slightly from an untiled one (KLDecodeBytes says how much
// memory each takes).
//
// Progress is reported to pipeline.TraceFrom(ctx) in blocks; ctx is checked
// before every convolution.
func (k *KL) Decode(ctx context.Context, p *compute.Pool, z []float32, h, w int, opts KLDecodeOptions) ([]float32, error) {
	fail := func(err error) ([]float32, error) { return nil, pipeline.Wrap(pipeline.StageDecode, err, "") }
	if h < 1 || w < 1 || h > 1<<14 || w > 1<<14 || len(z) != KLLatentChannels*h*w {
		return nil, pipeline.Errorf(pipeline.StageDecode, "", "latent of %d values does not match [%d %d %d] (each side 1 to %d)", len(z), KLLatentChannels, h, w, 1<<14)
	}
	if err := checkFinite(z, h, w); err != nil {
		return nil, err
	}
	g, err := tiling(h, w, opts.Tile, klOverlap(opts.Overlap))
	if err != nil {
		return fail(err)
	}
	n := &klNet{ctx: ctx, r: runner(p), m: &klMeter{}, stage: pipeline.StageDecode}
	n.total = klHeadUnits + int64(len(g.ys)*len(g.xs))*klTailUnits
	out, err := k.dec.decode(n, z, h, w, g)
	if err != nil {
		return fail(err)
	}
	if opts.Peak != nil {
		*opts.Peak = n.m.peak
	}
	return out, nil
}

// runner returns p as a conv.Runner, nil (serial) for a nil pool.
func runner(p *compute.Pool) conv.Runner {
	if p == nil {
		return nil
	}
	return p
}

func (d *klDecoder) decode(n *klNet, z []float32, h, w int, g grid) ([]float32, error) {
	a0 := n.m.arena()
	zm := a0.Map(h, w, KLLatentChannels)
	if err := zm.SetCHW(z); err != nil {
		return nil, err
	}
	x, err := n.conv(a0, d.postQuant, zm)
	if err != nil {
		return nil, err
	}
	if x, err = n.conv(a0, d.in, x); err != nil {
		return nil, err
	}
	n.step()
	if x, err = n.mid(a0, &d.mid, x); err != nil {
		return nil, err
	}
	for j := range d.up[3].blocks {
		if x, err = n.res(a0, &d.up[3].blocks[j], x); err != nil {
			return nil, err
		}
		n.step()
	}
	if g.single() {
		y, err := d.tail(n, a0, x)
		if err != nil {
			return nil, err
		}
		return n.m.finish(y), nil
	}
	// Tiled: keep the head's output, drop the rest of its buffers.
	n.m.drop(a0)
	bl := newBlender(Scale*h, Scale*w, g)
	n.m.fixed += 4 * int64(len(bl.acc)+len(bl.wsum))
	for _, ty := range g.ys {
		for _, tx := range g.xs {
			ct := n.m.arena()
			crop := ct.Map(g.th, g.tw, x.C)
			for yy := 0; yy < g.th; yy++ {
				copy(crop.Row(yy), x.Row(ty + yy)[tx*x.C:(tx+g.tw)*x.C])
			}
			y, err := d.tail(n, ct, crop)
			if err != nil {
				return nil, err
			}
			bl.add(y, ty, tx)
			n.m.sample()
			n.m.release(y)
		}
	}
	n.m.sample()
	return bl.result(), nil
}

// tail runs up.3's upsampling to the end on x (512 channels at latent
// resolution, from arena a) and returns the RGB map. Every resolution has
// its own arena, dropped when the next one starts.
func (d *klDecoder) tail(n *klNet, a *conv.Arena, x *conv.Map) (*conv.Map, error) {
	var err error
	for i := 3; i >= 0; i-- {
		if i < 3 {
			for j := range d.up[i].blocks {
				if x, err = n.res(a, &d.up[i].blocks[j], x); err != nil {
					return nil, err
				}
				n.step()
			}
		}
		if i == 0 {
			break
		}
		next := n.m.arena()
		if err = n.ctx.Err(); err != nil {
			return nil, err
		}
		y := next.Map(2*x.H, 2*x.W, x.C)
		err = d.up[i].up.Apply(n.r, y, x, nil, false)
		a.Release(x)
		n.m.endPhase(a)
		if err != nil {
			return nil, err
		}
		n.step()
		a, x = next, y
	}
	if err = groupNorm(n.r, x, x, d.normOut, true); err != nil {
		return nil, err
	}
	y, err := n.conv(a, d.out, x)
	n.step()
	return y, err
}

// conv applies c to x (from a) into a new map of a and releases x.
func (n *klNet) conv(a *conv.Arena, c *conv.Conv, x *conv.Map) (*conv.Map, error) {
	if err := n.ctx.Err(); err != nil {
		return nil, err
	}
	y := a.Map(c.OutSize(x.H), c.OutSize(x.W), c.Cout)
	err := c.Apply(n.r, y, x, nil, false)
	a.Release(x)
	return y, err
}

// res runs a ResBlock on x and releases x. Buffers: t = SiLU(GN(x)) beside
// x, conv1's output y, then conv2's output in t's place. A block that
// changes the width first takes the 1×1 shortcut of x, then normalises x
// in place (x is not needed after that): one map of the input width less.
func (n *klNet) res(a *conv.Arena, b *resBlock, x *conv.Map) (*conv.Map, error) {
	if err := n.ctx.Err(); err != nil {
		return nil, err
	}
	cout := b.conv1.Cout
	skip, t := x, x
	if b.short != nil {
		skip = a.Map(x.H, x.W, cout)
		if err := b.short.Apply(n.r, skip, x, nil, false); err != nil {
			return nil, err
		}
	} else {
		t = a.Map(x.H, x.W, x.C)
	}
	if err := groupNorm(n.r, t, x, b.norm1, true); err != nil {
		return nil, err
	}
	y := a.Map(x.H, x.W, cout)
	err := b.conv1.Apply(n.r, y, t, nil, false)
	a.Release(t)
	if err != nil {
		return nil, err
	}
	if err := groupNorm(n.r, y, y, b.norm2, true); err != nil {
		return nil, err
	}
	if err := n.ctx.Err(); err != nil {
		return nil, err
	}
	out := a.Map(x.H, x.W, cout)
	err = b.conv2.Apply(n.r, out, y, skip, false)
	a.Release(y)
	a.Release(skip)
	return out, err
}

func (n *klNet) mid(a *conv.Arena, m *klMidBlock, x *conv.Map) (*conv.Map, error) {
	x, err := n.res(a, &m.block1, x)
	if err != nil {
		return nil, err
	}
	n.step()
	if x, err = n.attention(a, &m.attn, x); err != nil {
		return nil, err
	}
	n.step()
	x, err = n.res(a, &m.block2, x)
	n.step()
	return x, err
}

// klMeter measures the bytes a forward pass holds: the arenas alive (each
// at its high-water mark, which is what it holds) plus fixed allocations
// outside them (attention's packed keys and values, the blender). Peak is
// sampled before every drop, where the sum is at its highest.
type klMeter struct {
	live  []*conv.Arena
	fixed int64
	peak  int64
}

func (m *klMeter) arena() *conv.Arena {
	a := new(conv.Arena)
	m.live = append(m.live, a)
	return a
}

func (m *klMeter) sample() {
	s := m.fixed
	for _, a := range m.live {
		s += a.Peak()
	}
	m.peak = max(m.peak, s)
}

// drop samples, then lets a keep only the maps in use.
func (m *klMeter) drop(a *conv.Arena) {
	m.sample()
	a.Reset()
}

// endPhase samples and forgets a (nothing of it in use): its buffers go
// back to the system at once (debug.FreeOSMemory: a collection, then the
// freed pages returned). Without it they would stay garbage until the heap
// grows by its size again (GOGC), and even collected, the freed maps of one
// resolution rarely make room for the next one's larger maps, so the pages
// would stay resident beside them.
func (m *klMeter) endPhase(a *conv.Arena) {
	m.sample()
	a.Reset()
	for i, b := range m.live {
		if b == a {
			m.live = append(m.live[:i], m.live[i+1:]...)
			break
		}
	}
	debug.FreeOSMemory()
}

// release returns a map to whichever live arena handed it out: the tail's
// output goes back to its last phase's arena, which then ends.
func (m *klMeter) release(y *conv.Map) {
	if len(m.live) == 0 {
		return
	}
	a := m.live[len(m.live)-1]
	a.Release(y)
	m.endPhase(a)
}

// finish converts the tail's output to CHW, counting the result.
func (m *klMeter) finish(y *conv.Map) []float32 {
	m.fixed += 4 * int64(y.C*y.H*y.W)
	m.sample()
	out := y.ToCHW()
	m.release(y)
	return out
}

// Encode maps an image rgb [3][H][W] in [-1, 1] (KLImage of 8-bit samples)
// to the posterior's mean and log-variance, each [4][H/8][W/8] (before
// KLSample's draw and scaling). H and W must be multiples of 8. p may be
// nil. The encoder is not tiled: its GroupNorms need whole-image
// statistics. Progress is reported to pipeline.TraceFrom(ctx) as stage
// encode.
func (k *KL) Encode(ctx context.Context, p *compute.Pool, rgb []float32, H, W int) (mean, logvar []float32, err error) {
	return k.encodePeak(ctx, p, rgb, H, W, nil)
}

// encodePeak is Encode, storing the measured peak bytes (PlanKLEncode's
// Total) in peak when it is not nil.
func (k *KL) encodePeak(ctx context.Context, p *compute.Pool, rgb []float32, H, W int, peak *int64) (mean, logvar []float32, err error) {
	if H < Scale || W < Scale || H%Scale != 0 || W%Scale != 0 || H > Scale<<14 || W > Scale<<14 || len(rgb) != 3*H*W {
		return nil, nil, pipeline.Errorf(pipeline.StageEncode, "resize the image to multiples of 8", "image of %d values as [3 %d %d]: want 3·H·W values with H and W multiples of 8 from 8 to %d", len(rgb), H, W, Scale<<14)
	}
	n := &klNet{ctx: ctx, r: runner(p), m: &klMeter{}, stage: pipeline.StageEncode, total: klEncUnits}
	mom, err := k.enc.encode(n, rgb, H, W)
	if err != nil {
		return nil, nil, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	if peak != nil {
		*peak = n.m.peak
	}
	half := len(mom) / 2
	return mom[:half:half], mom[half:], nil
}

func (e *klEncoder) encode(n *klNet, rgb []float32, h, w int) ([]float32, error) {
	a := n.m.arena()
	x := a.Map(h, w, 3)
	if err := x.SetCHW(rgb); err != nil {
		return nil, err
	}
	x, err := n.conv(a, e.in, x)
	if err != nil {
		return nil, err
	}
	n.step()
	for i := range e.down {
		for j := range e.down[i].blocks {
			if x, err = n.res(a, &e.down[i].blocks[j], x); err != nil {
				return nil, err
			}
			n.step()
		}
		if e.down[i].down == nil {
			break
		}
		if err = n.ctx.Err(); err != nil {
			return nil, err
		}
		next := n.m.arena()
		d := e.down[i].down
		y := next.Map(d.OutSize(x.H), d.OutSize(x.W), d.Cout)
		err = d.Apply(n.r, y, x, nil, false)
		a.Release(x)
		n.m.endPhase(a)
		if err != nil {
			return nil, err
		}
		n.step()
		a, x = next, y
	}
	if x, err = n.mid(a, &e.mid, x); err != nil {
		return nil, err
	}
	if err = groupNorm(n.r, x, x, e.normOut, true); err != nil {
		return nil, err
	}
	if x, err = n.conv(a, e.out, x); err != nil {
		return nil, err
	}
	if x, err = n.conv(a, e.quant, x); err != nil {
		return nil, err
	}
	n.step()
	return n.m.finish(x), nil
}
