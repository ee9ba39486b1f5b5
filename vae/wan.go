package vae

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"strconv"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// Wan 2.1's causal 3-D VAE (Wan Team, "Wan: Open and Advanced Large-Scale
// Video Generative Models", 2025; wan/modules/vae.py: WanVAE_, Decoder3d,
// CausalConv3d, ResidualBlock, AttentionBlock, Resample, RMS_norm; config
// _video_vae: dim 96, z_dim 16, dim_mult [1, 2, 4, 4], 2 ResidualBlocks
// per encoder stage, 3 per decoder stage, temporal downsampling
// [False, True, True]).
//
// Decoder, from the normalised latent z [16][T][h][w]:
//
//	z/(1/std) + mean per channel, conv2 1×1×1 16→16
//	conv1 CausalConv3d 3×3×3 16→384
//	middle: Res 384, Attn 384 (per frame, one head over h·w), Res 384
//	upsamples 0-2 Res 384; 3 upsample3d 384 (time ×2, space ×2 to 192)
//	upsamples 4-6 Res 192→384, 384, 384; 7 upsample3d 384 (to 192)
//	upsamples 8-10 Res 192; 11 upsample2d 192 (space ×2 to 96)
//	upsamples 12-14 Res 96
//	head: RMS_norm, SiLU, CausalConv3d 3×3×3 96→3: RGB at 8h×8w
//
// Time is causal: a CausalConv3d with kt time taps sees its input frames
// t-kt+1 … t, with zero frames before the first. It is computed here as kt
// 2-D convolutions, one per tap, on the current frame and the kt-1
// previous input frames the layer keeps (the feature cache of the
// reference, CACHE_T = 2), so frames run one after another through the
// whole network and the video is never in memory. upsample3d's time_conv
// (CausalConv3d 3×1×1, C→2C) does not run on the first frame of its level
// (the reference's 'Rep'): frame 0 stays one frame, every later frame
// becomes two (channels 0..C-1 first, C..2C-1 second), and the time_conv's
// history starts at frame 1. T latent frames give 1 + 4(T-1) video frames.
//
// RMS_norm is F.normalize over the channels (x/max(‖x‖₂, 1e-12)) times
// √C times gamma; ResidualBlock is x + conv(SiLU(RMS(conv(SiLU(RMS(x)))))),
// x through a 1×1×1 shortcut when the width changes.
const (
	WanLatentChannels = 16
	// WanTimeStride and WanScale are the VAE's strides: 4 video frames and
	// 8×8 pixels per latent value (after the first frame).
	WanTimeStride = 4
	WanScale      = 8
	wanMid        = 384
	wanCacheT     = 2
)

// Per-channel latent statistics of Wan 2.1's VAE (wan/modules/vae.py:
// WanVAE.__init__): the DiT's latents are (mu - mean)·(1/std).
var (
	WanLatentMean = [WanLatentChannels]float32{-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
		0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921}
	WanLatentStd = [WanLatentChannels]float32{2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
		3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160}
)

// WanVAE is a bound Wan 2.1 VAE decoder: weights widened to float32 and
// packed for compute/conv, one 2-D convolution per time tap. It holds no
// per-decode state, so one WanVAE may decode several videos at once.
type WanVAE struct {
	conv2 *conv.Conv // 1×1×1 16→16
	wanNet
}

// wanNet is a frame pipeline: its ops in order, the number of causal
// convolutions with a history and of time resamplings (slots of a decode's
// state), and the packed weights' bytes.
type wanNet struct {
	ops      []wanOp
	convs    int
	counters int
	wbyte    int64
}

// causalConv is a CausalConv3d with kt time taps (1 or 3) and a square
// k×k spatial kernel with padding k/2: taps[kt-1] (with the bias) reads the
// current frame, taps[kt-1-j] the frame j before it.
type causalConv struct {
	taps []*conv.Conv
	slot int // index of its history in a decode's state; -1 when kt = 1
}

// wanOp is one step of the decoder's frame pipeline.
type wanOp struct {
	kind  wanOpKind
	name  string
	c     *causalConv // conv1, head
	gamma []float32   // head's RMS_norm
	res   *wanRes
	attn  *attnBlock  // q, k, v, o (norm unused)
	agam  []float32   // attention's RMS_norm
	time  *causalConv // upsample3d
	up    *conv.UpConv
	down  *conv.Conv // downsample2d/3d: ZeroPad2d(0, 1, 0, 1), stride-2 3×3
	tslot int        // upsample3d, downsample3d: frames seen counter index
}

type wanOpKind uint8

const (
	opConv wanOpKind = iota
	opRes
	opAttn
	opUp2d
	opTimeUp // upsample3d's time part: frame 0 as is, later frames to 2
	opHead
	opDown2d
	opTimeDown // downsample3d's time part: frame 0 and every later even frame
)

type wanRes struct {
	gamma1, gamma2 []float32
	conv1, conv2   *causalConv
	short          *conv.Conv
}

type wanBinder struct {
	*checkpoint.Binder
	vae *wanNet
}

func (b *wanBinder) conv2d(name string, w, bias []float32, cout, cin, k int) *conv.Conv {
	if b.Err() != nil {
		return nil
	}
	c, err := conv.NewConvPad(w, bias, cout, cin, k, 1, k/2)
	if err != nil {
		b.Fail(fmt.Errorf("load: %s: %w", name, err))
		return nil
	}
	b.vae.wbyte += c.Bytes()
	return c
}

// causal binds a CausalConv3d [cout, cin, kt, k, k].
func (b *wanBinder) causal(prefix string, cout, cin, kt, k int) *causalConv {
	w := b.Float32(prefix+".weight", cout, cin, kt, k, k)
	bias := b.Float32(prefix+".bias", cout)
	if b.Err() != nil {
		return nil
	}
	cc := &causalConv{slot: -1}
	kk := k * k
	for tap := range kt {
		wt := make([]float32, cout*cin*kk)
		for o := range cout {
			for i := range cin {
				copy(wt[(o*cin+i)*kk:(o*cin+i+1)*kk], w[((o*cin+i)*kt+tap)*kk:])
			}
		}
		var bs []float32
		if tap == kt-1 {
			bs = bias
		}
		cc.taps = append(cc.taps, b.conv2d(prefix, wt, bs, cout, cin, k))
	}
	if kt > 1 {
		cc.slot = b.vae.convs
		b.vae.convs++
	}
	return cc
}

func (b *wanBinder) gamma(name string, c int, shape ...int) []float32 {
	return b.Float32(name, append([]int{c}, shape...)...)
}

func (b *wanBinder) res(prefix string, cin, cout int) *wanRes {
	r := &wanRes{
		gamma1: b.gamma(prefix+".residual.0.gamma", cin, 1, 1, 1),
		conv1:  b.causal(prefix+".residual.2", cout, cin, 3, 3),
		gamma2: b.gamma(prefix+".residual.3.gamma", cout, 1, 1, 1),
		conv2:  b.causal(prefix+".residual.6", cout, cout, 3, 3),
	}
	if cin != cout {
		sc := b.causal(prefix+".shortcut", cout, cin, 1, 1)
		if sc != nil {
			r.short = sc.taps[0]
		}
	}
	return r
}

func (b *wanBinder) attn(prefix string, c int) (*attnBlock, []float32) {
	g := b.gamma(prefix+".norm.gamma", c, 1, 1)
	w := b.Float32(prefix+".to_qkv.weight", 3*c, c, 1, 1)
	bias := b.Float32(prefix+".to_qkv.bias", 3*c)
	pw := b.Float32(prefix+".proj.weight", c, c, 1, 1)
	pb := b.Float32(prefix+".proj.bias", c)
	if b.Err() != nil {
		return nil, nil
	}
	part := func(i int) *conv.Conv {
		return b.conv2d(prefix+".to_qkv", w[i*c*c:(i+1)*c*c], bias[i*c:(i+1)*c], c, c, 1)
	}
	return &attnBlock{q: part(0), k: part(1), v: part(2), o: b.conv2d(prefix+".proj", pw, pb, c, c, 1)}, g
}

// NewWanVAE binds the decoder of a Wan 2.1 VAE from src in the names of
// Wan2.1_VAE.pth and ComfyUI's wan_2.1_vae.safetensors (decoder.*, conv2.*;
// the encoder's tensors are not read). F32, F16 and BF16 weights are
// widened to float32. A missing or mis-shaped tensor is a load-stage
// *checkpoint.Error naming it, the shape found and the shape wanted.
func NewWanVAE(src checkpoint.Source) (*WanVAE, error) {
	if err := wanFamily(src, "decoder.middle.0.residual.0.gamma"); err != nil {
		return nil, err
	}
	v := &WanVAE{}
	b := &wanBinder{Binder: checkpoint.NewBinder(src), vae: &v.wanNet}
	if c2 := b.causal("conv2", WanLatentChannels, WanLatentChannels, 1, 1); c2 != nil {
		v.conv2 = c2.taps[0]
	}
	v.ops = append(v.ops, wanOp{kind: opConv, name: "decoder.conv1", c: b.causal("decoder.conv1", wanMid, WanLatentChannels, 3, 3)})
	v.ops = append(v.ops, wanOp{kind: opRes, name: "decoder.middle.0", res: b.res("decoder.middle.0", wanMid, wanMid)})
	a, g := b.attn("decoder.middle.1", wanMid)
	v.ops = append(v.ops, wanOp{kind: opAttn, name: "decoder.middle.1", attn: a, agam: g})
	v.ops = append(v.ops, wanOp{kind: opRes, name: "decoder.middle.2", res: b.res("decoder.middle.2", wanMid, wanMid)})
	i, cin := 0, wanMid
	for s, c := range []int{384, 384, 192, 96} {
		if s > 0 {
			cin /= 2
		}
		for range 3 {
			p := "decoder.upsamples." + strconv.Itoa(i)
			v.ops = append(v.ops, wanOp{kind: opRes, name: p, res: b.res(p, cin, c)})
			cin = c
			i++
		}
		if s == 3 {
			break
		}
		p := "decoder.upsamples." + strconv.Itoa(i)
		op := wanOp{kind: opUp2d, name: p}
		w := b.Float32(p+".resample.1.weight", c/2, c, 3, 3)
		bias := b.Float32(p+".resample.1.bias", c/2)
		if b.Err() == nil {
			u, err := conv.NewUpConv(w, bias, c/2, c)
			if err != nil {
				b.Fail(fmt.Errorf("load: %s: %w", p, err))
			}
			if u != nil {
				op.up = u
				v.wbyte += u.Bytes()
			}
		}
		if s < 2 {
			v.ops = append(v.ops, wanOp{kind: opTimeUp, name: p + ".time_conv", time: b.causal(p+".time_conv", 2*c, c, 3, 1), tslot: v.counters})
			v.counters++
		}
		v.ops = append(v.ops, op)
		i++
	}
	v.ops = append(v.ops, wanOp{kind: opHead, name: "decoder.head", gamma: b.gamma("decoder.head.0.gamma", 96, 1, 1, 1),
		c: b.causal("decoder.head.2", 3, 96, 3, 3)})
	if err := b.Err(); err != nil {
		return nil, err
	}
	return v, nil
}

// wanFamily refuses a file without the Wan VAE's marker tensor, naming a
// few of the tensors it has instead (another VAE family, or a prefix).
func wanFamily(src checkpoint.Source, marker string) error {
	if _, ok := src.Tensor(marker); ok {
		return nil
	}
	names := src.Names()
	some := names[:min(3, len(names))]
	return pipeline.Errorf(pipeline.StageLoad, "a Wan 2.1 VAE is wan_2.1_vae.safetensors or Wan2.1_VAE.pth",
		"%s is not a Wan 2.1 VAE: no %q among its %d tensors (it has %q…)", src.Path(), marker, len(names), some)
}

// WeightBytes returns the memory the packed decoder weights occupy.
func (v *WanVAE) WeightBytes() int64 { return v.wbyte }

// WanFrames returns the video frames t latent frames decode to: 1 + 4(t-1).
func WanFrames(t int) int { return 1 + WanTimeStride*(t-1) }

// wanState is one decode's mutable state: each causal convolution's
// previous input frames (most recent last) and each upsample3d's count of
// frames seen, all maps from one arena.
type wanState struct {
	n      *klNet
	a      *conv.Arena
	hist   [][]*conv.Map
	seen   []int
	frames int
	sink   func(x *conv.Map) error // takes the pipeline's output frame
}

func newWanState(n *klNet, net *wanNet) *wanState {
	return &wanState{n: n, a: n.m.arena(), hist: make([][]*conv.Map, net.convs), seen: make([]int, net.counters)}
}

// DecodeFrames decodes the normalised latent z [16][t][h][w] (as the DiT
// produces it) one latent frame after another and calls emit with each
// video frame, RGB [3][8h][8w] in about [-1, 1] and not clamped (the
// official WanVAE.decode clamps to [-1, 1]; WanClamp does it), in order:
// frame 0 from latent frame 0, then four frames per later latent frame.
// emit may keep rgb. The memory held does not depend on t (WanDecodeBytes);
// peak, if not nil, receives the bytes the decode held at its peak. p may
// be nil (serial). ctx is checked before every convolution; progress is
// reported to pipeline.TraceFrom(ctx) in frames.
func (v *WanVAE) DecodeFrames(ctx context.Context, p *compute.Pool, z []float32, t, h, w int, peak *int64, emit func(frame int, rgb []float32) error) error {
	if t < 1 || h < 1 || w < 1 || t > 1<<12 || h > 1<<12 || w > 1<<12 || len(z) != WanLatentChannels*t*h*w {
		return pipeline.Errorf(pipeline.StageDecode, "", "Wan latent of %d values does not match [%d %d %d %d] (t 1 to %d, sides 1 to %d)", len(z), WanLatentChannels, t, h, w, 1<<12, 1<<12)
	}
	if err := wanCheckFinite(z, t, h, w); err != nil {
		return err
	}
	n := &klNet{ctx: ctx, r: runner(p), m: &klMeter{}, stage: pipeline.StageDecode, total: int64(WanFrames(t))}
	st := newWanState(n, &v.wanNet)
	st.sink = func(x *conv.Map) error {
		rgb := x.ToCHW()
		st.a.Release(x)
		f := st.frames
		st.frames++
		st.n.step()
		return emit(f, rgb)
	}
	plane := h * w
	frame := make([]float32, WanLatentChannels*plane)
	for ti := range t {
		for c := range WanLatentChannels {
			inv := 1 / WanLatentStd[c] // float32, as the reference's 1/std tensor
			src := z[(c*t+ti)*plane : (c*t+ti+1)*plane]
			dst := frame[c*plane : (c+1)*plane]
			for i, x := range src {
				dst[i] = x/inv + WanLatentMean[c]
			}
		}
		zm := st.a.Map(h, w, WanLatentChannels)
		if err := zm.SetCHW(frame); err != nil {
			return pipeline.Wrap(pipeline.StageDecode, err, "")
		}
		x := st.a.Map(h, w, WanLatentChannels)
		err := v.conv2.Apply(n.r, x, zm, nil, false)
		st.a.Release(zm)
		if err == nil {
			err = v.run(st, 0, x)
		}
		if err != nil {
			return pipeline.Wrap(pipeline.StageDecode, err, "")
		}
		// The attention's packed keys and values and the emitted frames
		// are garbage now: return them at once, so the resident set stays
		// flat over the frames instead of growing by up to GOGC's share of
		// the weights before the next collection.
		debug.FreeOSMemory()
	}
	n.m.sample()
	if peak != nil {
		*peak = n.m.peak
	}
	return nil
}

// wanCheckFinite is checkFinite for a video latent [16][t][h][w].
func wanCheckFinite(z []float32, t, h, w int) error {
	nan, inf, first := 0, 0, -1
	for i, v := range z {
		switch {
		case v != v:
			nan++
		case math.IsInf(float64(v), 0):
			inf++
		default:
			continue
		}
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return nil
	}
	return pipeline.Errorf(pipeline.StageDecode, "the step that produced the latents overflowed; nothing to decode",
		"latents hold %d NaN and %d infinite values (first at channel %d, latent frame %d, row %d, column %d)",
		nan, inf, first/(t*h*w), first/(h*w)%t, first/w%h, first%w).With("nan", int64(nan)).With("inf", int64(inf))
}

// run passes frame x through ops i.. depth first and hands the results to
// st.sink: when an op makes two frames, the first goes all the way through
// before the second starts; when it keeps the frame (a downsample3d's odd
// frames), the pass ends.
func (v *wanNet) run(st *wanState, i int, x *conv.Map) error {
	for ; i < len(v.ops); i++ {
		outs, err := st.apply(&v.ops[i], x)
		if err != nil {
			return err
		}
		if len(outs) == 0 {
			return nil
		}
		for _, o := range outs[:len(outs)-1] {
			if err := v.run(st, i+1, o); err != nil {
				return err
			}
		}
		x = outs[len(outs)-1]
	}
	st.n.m.sample()
	return st.sink(x)
}

// apply runs one op on the next frame of its input x and returns the
// frames it makes (0, 1 or 2), in order.
func (st *wanState) apply(op *wanOp, x *conv.Map) ([]*conv.Map, error) {
	var err error
	switch op.kind {
	case opConv:
		x, err = st.causal(op.c, x, nil)
	case opRes:
		x, err = st.res(op.res, x)
	case opAttn:
		x, err = st.attention(op, x)
	case opUp2d:
		x, err = st.upconv(op.up, x)
	case opTimeUp:
		k := st.seen[op.tslot]
		st.seen[op.tslot]++
		if k == 0 {
			break
		}
		y, err := st.causal(op.time, x, nil)
		if err != nil {
			return nil, err
		}
		c := y.C / 2
		f0, f1 := st.a.Map(y.H, y.W, c), st.a.Map(y.H, y.W, c)
		for yy := range y.H {
			src, d0, d1 := y.Row(yy), f0.Row(yy), f1.Row(yy)
			for xx := range y.W {
				copy(d0[xx*c:(xx+1)*c], src[xx*2*c:xx*2*c+c])
				copy(d1[xx*c:(xx+1)*c], src[xx*2*c+c:(xx+1)*2*c])
			}
		}
		st.a.Release(y)
		return []*conv.Map{f0, f1}, nil
	case opDown2d:
		x, err = st.conv2d(op.down, x)
	case opTimeDown:
		k := st.seen[op.tslot]
		st.seen[op.tslot]++
		switch {
		case k == 0: // kept, and the time_conv's first input
			c := st.a.Map(x.H, x.W, x.C)
			copy(c.Data, x.Data)
			st.push(op.time, c)
		case k%2 == 1: // only an input of the next output
			st.push(op.time, x)
			return nil, nil
		default: // time_conv over frames k-2, k-1, k (stride 2)
			x, err = st.causal(op.time, x, nil)
		}
	case opHead:
		tm := st.a.Map(x.H, x.W, x.C)
		if err = st.rms(tm, x, op.gamma, true); err != nil {
			return nil, err
		}
		st.a.Release(x)
		x, err = st.causal(op.c, tm, nil)
	}
	if err != nil {
		return nil, err
	}
	return []*conv.Map{x}, nil
}

// push adds x to c's history, dropping the oldest frame beyond kt-1.
func (st *wanState) push(c *causalConv, x *conv.Map) {
	h := st.hist[c.slot]
	if len(h) == len(c.taps)-1 {
		st.a.Release(h[0])
		h = append(h[:0], h[1:]...)
	}
	st.hist[c.slot] = append(h, x)
}

// conv2d applies a 2-D convolution to frame x and releases it.
func (st *wanState) conv2d(c *conv.Conv, x *conv.Map) (*conv.Map, error) {
	if err := st.n.ctx.Err(); err != nil {
		return nil, err
	}
	y := st.a.Map(c.OutSize(x.H), c.OutSize(x.W), c.Cout)
	err := c.Apply(st.n.r, y, x, nil, false)
	st.a.Release(x)
	return y, err
}

// causal applies c to frame x (plus skip, may be nil) and returns a new
// map. x goes into c's history (which owns it from then on) or, for a
// single-tap convolution, is released; skip is released.
func (st *wanState) causal(c *causalConv, x, skip *conv.Map) (*conv.Map, error) {
	if err := st.n.ctx.Err(); err != nil {
		return nil, err
	}
	kt := len(c.taps)
	out := st.a.Map(x.H, x.W, c.taps[kt-1].Cout)
	if err := c.taps[kt-1].Apply(st.n.r, out, x, skip, false); err != nil {
		return nil, err
	}
	if skip != nil {
		st.a.Release(skip)
	}
	if c.slot < 0 {
		st.a.Release(x)
		return out, nil
	}
	h := st.hist[c.slot]
	for j := 1; j < kt && j <= len(h); j++ {
		if err := st.n.ctx.Err(); err != nil {
			return nil, err
		}
		next := st.a.Map(out.H, out.W, out.C)
		if err := c.taps[kt-1-j].Apply(st.n.r, next, h[len(h)-j], out, false); err != nil {
			return nil, err
		}
		st.a.Release(out)
		out = next
	}
	st.push(c, x)
	return out, nil
}

func (st *wanState) res(b *wanRes, x *conv.Map) (*conv.Map, error) {
	t := st.a.Map(x.H, x.W, x.C)
	if err := st.rms(t, x, b.gamma1, true); err != nil {
		return nil, err
	}
	skip := x
	if b.short != nil {
		skip = st.a.Map(x.H, x.W, b.short.Cout)
		if err := b.short.Apply(st.n.r, skip, x, nil, false); err != nil {
			return nil, err
		}
		st.a.Release(x)
	}
	y, err := st.causal(b.conv1, t, nil)
	if err != nil {
		return nil, err
	}
	if err := st.rms(y, y, b.gamma2, true); err != nil {
		return nil, err
	}
	return st.causal(b.conv2, y, skip)
}

func (st *wanState) attention(op *wanOp, x *conv.Map) (*conv.Map, error) {
	t := st.a.Map(x.H, x.W, x.C)
	if err := st.rms(t, x, op.agam, false); err != nil {
		return nil, err
	}
	return st.n.attend(st.a, op.attn, x, t)
}

func (st *wanState) upconv(u *conv.UpConv, x *conv.Map) (*conv.Map, error) {
	if err := st.n.ctx.Err(); err != nil {
		return nil, err
	}
	y := st.a.Map(2*x.H, 2*x.W, u.Cout)
	err := u.Apply(st.n.r, y, x, nil, false)
	st.a.Release(x)
	return y, err
}

// rms writes dst = RMS_norm(src) (then SiLU when silu is set); dst may be
// src. Each pixel's squared norm is summed in float64.
func (st *wanState) rms(dst, src *conv.Map, gamma []float32, silu bool) error {
	c := src.C
	if dst.H != src.H || dst.W != src.W || dst.C != c || len(gamma) != c {
		return fmt.Errorf("rms_norm: %dx%dx%d into %dx%dx%d with %d weights", src.H, src.W, c, dst.H, dst.W, dst.C, len(gamma))
	}
	scale := math.Sqrt(float64(c))
	forRows(st.n.r, src.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			s, d := src.Row(y), dst.Row(y)
			for x := range src.W {
				px := s[x*c : (x+1)*c]
				var ss float64
				for _, v := range px {
					ss += float64(v) * float64(v)
				}
				f := float32(scale / max(math.Sqrt(ss), 1e-12))
				out := d[x*c : (x+1)*c]
				for i, v := range px {
					out[i] = v * f * gamma[i]
				}
				if silu {
					compute.SiLU(out)
				}
			}
		}
	})
	return nil
}

// WanClamp clamps a decoded frame to [-1, 1] in place, as the official
// WanVAE.decode does.
func WanClamp(rgb []float32) {
	for i, v := range rgb {
		rgb[i] = min(max(v, -1), 1)
	}
}

// WanDecodeBytes predicts the bytes DecodeFrames holds at its peak for a
// latent of t frames of h×w (weights not included: WeightBytes). It does
// not grow with t: each causal convolution keeps its last two input
// frames (the feature cache) and frames run depth first, so besides the
// cache a decode holds, at each resolution, one frame's working maps (a
// causal convolution's new input, its output and the partial sum of the
// taps, a ResidualBlock's shortcut), the second frame of each time
// upsampling waiting for the first, the middle attention's packed keys,
// values and block of scores, and the RGB frame being emitted. The arena
// reuses maps by size, so the working maps of every resolution are
// counted together.
func WanDecodeBytes(t, h, w int) int64 {
	mb := func(s, c int) int64 { return conv.MapBytes(h<<s, w<<s, c) }
	// Feature cache: 2 frames of each causal convolution's input.
	cache := 2 * (mb(0, WanLatentChannels) + 11*mb(0, wanMid) +
		mb(1, 192) + 6*mb(1, wanMid) + 6*mb(2, 192) + 7*mb(3, 96))
	np := h * w
	attn := 2*mb(0, wanMid) + packedBytes(np, wanMid, 1) + packedBytes(wanMid, np, 1) +
		4*int64(np)*wanMid + conv.MapBytes(scoreRows(h, w), w, np)
	work := 2*mb(0, WanLatentChannels) + 5*mb(0, wanMid) + mb(0, 2*wanMid) +
		2*mb(1, 192) + 5*mb(1, wanMid) + mb(1, 2*wanMid) +
		5*mb(2, 192) + 5*mb(3, 96) + mb(3, 3)
	rgb := 4 * 3 * int64(WanScale*h) * int64(WanScale*w)
	return cache + attn + work + rgb
}

// Flops returns the multiply-adds ×2 of decoding t latent frames of h×w:
// the frames' walk through the pipeline without the arithmetic, so the
// taps skipped on the first frames (no history yet) are not counted. The
// attention counts its scores and weighted sum (2·N²·C each); norms and
// activations are not counted.
func (v *WanVAE) Flops(t, h, w int) int64 {
	hist := make([]int, v.convs)
	seen := make([]int, v.counters)
	causal := func(c *causalConv, h, w int) int64 {
		kt := len(c.taps)
		taps := 1
		if c.slot >= 0 {
			taps += min(hist[c.slot], kt-1)
			hist[c.slot] = min(hist[c.slot]+1, kt-1)
		}
		return int64(taps) * c.taps[0].Flops(h, w)
	}
	var walk func(i, h, w int) int64
	walk = func(i, h, w int) int64 {
		var f int64
		for ; i < len(v.ops); i++ {
			op := &v.ops[i]
			switch op.kind {
			case opConv, opHead:
				f += causal(op.c, h, w)
			case opRes:
				f += causal(op.res.conv1, h, w) + causal(op.res.conv2, h, w)
				if op.res.short != nil {
					f += op.res.short.Flops(h, w)
				}
			case opAttn:
				c, n := int64(wanMid), int64(h*w)
				f += 4*op.attn.q.Flops(h, w) + 4*n*n*c
			case opUp2d:
				f += op.up.Flops(h, w)
				h, w = 2*h, 2*w
			case opTimeUp:
				k := seen[op.tslot]
				seen[op.tslot]++
				if k > 0 {
					f += causal(op.time, h, w) + walk(i+1, h, w)
				}
			}
		}
		return f
	}
	var total int64
	for range t {
		total += v.conv2.Flops(h, w) + walk(0, h, w)
	}
	return total
}
