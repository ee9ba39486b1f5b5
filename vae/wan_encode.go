package vae

import (
	"context"
	"fmt"
	"strconv"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// Wan 2.1 VAE encoder (wan/modules/vae.py: Encoder3d, WanVAE_.encode),
// from RGB frames in [-1, 1]:
//
//	conv1 CausalConv3d 3×3×3 3→96
//	downsamples 0-1 Res 96; 2 downsample2d 96
//	downsamples 3-4 Res 96→192, 192; 5 downsample3d 192
//	downsamples 6-7 Res 192→384, 384; 8 downsample3d 384
//	downsamples 9-10 Res 384
//	middle: Res 384, Attn 384, Res 384
//	head: RMS_norm, SiLU, CausalConv3d 3×3×3 384→32
//	conv1 1×1×1 32→32; mu = channels 0-15, normalised (mu - mean)·(1/std)
//
// downsample2d/3d pad one zero column and row on the right and bottom and
// apply a stride-2 3×3 conv per frame; downsample3d then keeps frame 0 of
// its level and, for every later even frame k, emits its time_conv
// (CausalConv3d 3×1×1, stride 2, no padding) over frames k-2, k-1, k. So
// 1 + 4n frames give 1 + n latent frames, frame by frame with the same
// two-frame caches as the decoder.

// WanEncoder is a bound Wan 2.1 VAE encoder.
type WanEncoder struct {
	conv1 *conv.Conv // 1×1×1 32→32
	wanNet
}

func (b *wanBinder) down(p string, c int) *conv.Conv {
	w := b.Float32(p+".resample.1.weight", c, c, 3, 3)
	bias := b.Float32(p+".resample.1.bias", c)
	if b.Err() != nil {
		return nil
	}
	cv, err := conv.NewConvPad(w, bias, c, c, 3, 2, 0)
	if err != nil {
		b.Fail(fmt.Errorf("load: %s: %w", p, err))
		return nil
	}
	b.vae.wbyte += cv.Bytes()
	return cv
}

// NewWanEncoder binds the encoder of a Wan 2.1 VAE from src (encoder.*,
// conv1.*; the decoder's tensors are not read), as NewWanVAE does the
// decoder.
func NewWanEncoder(src checkpoint.Source) (*WanEncoder, error) {
	if err := wanFamily(src, "encoder.middle.0.residual.0.gamma"); err != nil {
		return nil, err
	}
	e := &WanEncoder{}
	b := &wanBinder{Binder: checkpoint.NewBinder(src), vae: &e.wanNet}
	if c1 := b.causal("conv1", 2*WanLatentChannels, 2*WanLatentChannels, 1, 1); c1 != nil {
		e.conv1 = c1.taps[0]
	}
	e.ops = append(e.ops, wanOp{kind: opConv, name: "encoder.conv1", c: b.causal("encoder.conv1", 96, 3, 3, 3)})
	i, cin := 0, 96
	for s, c := range []int{96, 192, 384, 384} {
		for range 2 {
			p := "encoder.downsamples." + strconv.Itoa(i)
			e.ops = append(e.ops, wanOp{kind: opRes, name: p, res: b.res(p, cin, c)})
			cin = c
			i++
		}
		if s == 3 {
			break
		}
		p := "encoder.downsamples." + strconv.Itoa(i)
		e.ops = append(e.ops, wanOp{kind: opDown2d, name: p, down: b.down(p, c)})
		if s > 0 {
			e.ops = append(e.ops, wanOp{kind: opTimeDown, name: p + ".time_conv", time: b.causal(p+".time_conv", c, c, 3, 1), tslot: e.counters})
			e.counters++
		}
		i++
	}
	e.ops = append(e.ops, wanOp{kind: opRes, name: "encoder.middle.0", res: b.res("encoder.middle.0", wanMid, wanMid)})
	a, g := b.attn("encoder.middle.1", wanMid)
	e.ops = append(e.ops, wanOp{kind: opAttn, name: "encoder.middle.1", attn: a, agam: g})
	e.ops = append(e.ops, wanOp{kind: opRes, name: "encoder.middle.2", res: b.res("encoder.middle.2", wanMid, wanMid)})
	e.ops = append(e.ops, wanOp{kind: opHead, name: "encoder.head", gamma: b.gamma("encoder.head.0.gamma", wanMid, 1, 1, 1),
		c: b.causal("encoder.head.2", 2*WanLatentChannels, wanMid, 3, 3)})
	if err := b.Err(); err != nil {
		return nil, err
	}
	return e, nil
}

// WeightBytes returns the memory the packed encoder weights occupy.
func (e *WanEncoder) WeightBytes() int64 { return e.wbyte }

// Encode maps a video [3][f][H][W] of RGB in [-1, 1] (f = 1 + 4n frames,
// H and W multiples of 8) to the normalised latent mean [16][1+n][H/8][W/8]
// as the DiT sees it (the official WanVAE.encode: mu only). Frames run one
// after another; p may be nil. ctx is checked before every convolution;
// progress is reported to pipeline.TraceFrom(ctx) in frames as stage
// encode.
func (e *WanEncoder) Encode(ctx context.Context, p *compute.Pool, video []float32, f, H, W int) ([]float32, error) {
	if f < 1 || (f-1)%WanTimeStride != 0 || H < WanScale || W < WanScale || H%WanScale != 0 || W%WanScale != 0 ||
		f > 1<<14 || H > 1<<15 || W > 1<<15 || len(video) != 3*f*H*W {
		return nil, pipeline.Errorf(pipeline.StageEncode, "", "Wan video of %d values does not match [3 %d %d %d] (frames 1+4n, sides multiples of 8)", len(video), f, H, W)
	}
	t, h, w := 1+(f-1)/WanTimeStride, H/WanScale, W/WanScale
	out := make([]float32, WanLatentChannels*t*h*w)
	n := &klNet{ctx: ctx, r: runner(p), m: &klMeter{}, stage: pipeline.StageEncode, total: int64(f)}
	st := newWanState(n, &e.wanNet)
	lat := 0
	st.sink = func(x *conv.Map) error {
		y, err := st.conv2d(e.conv1, x)
		if err != nil {
			return err
		}
		mu := y.ToCHW()[:WanLatentChannels*h*w]
		st.a.Release(y)
		if lat >= t {
			return fmt.Errorf("encoder made more than %d latent frames", t)
		}
		for c := range WanLatentChannels {
			inv := 1 / WanLatentStd[c]
			dst := out[(c*t+lat)*h*w : (c*t+lat+1)*h*w]
			for i, v := range mu[c*h*w : (c+1)*h*w] {
				dst[i] = (v - WanLatentMean[c]) * inv
			}
		}
		lat++
		return nil
	}
	plane := H * W
	frame := make([]float32, 3*plane)
	for fi := range f {
		for c := range 3 {
			copy(frame[c*plane:(c+1)*plane], video[(c*f+fi)*plane:(c*f+fi+1)*plane])
		}
		x := st.a.Map(H, W, 3)
		err := x.SetCHW(frame)
		if err == nil {
			err = e.run(st, 0, x)
		}
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StageEncode, err, "")
		}
		n.step()
	}
	if lat != t {
		return nil, pipeline.Errorf(pipeline.StageEncode, "", "encoder made %d latent frames, want %d", lat, t)
	}
	return out, nil
}
