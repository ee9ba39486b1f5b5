package vae

import (
	"context"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// DecodeFramesTiled decodes z [16][t][h][w] in spatial tiles of tile latent
// pixels sharing overlap (0: DefaultOverlap), for frames too large for
// DecodeFrames' feature cache: each tile runs through all t latent frames
// as DecodeFrames does (its own cache, a tile's size), its frames blended
// into the whole video as the TAEF2 and KL tiles are (see ramp); then the
// frames are emitted in order. The middle attention and the convolutions'
// borders see only their tile, so the result differs a little from the
// untiled one. Memory: one tile's WanDecodeBytes plus the blended video
// (16 bytes per output pixel and frame: it grows with t, the cache does
// not); WanTiledDecodeBytes predicts it. A tile covering the latent is
// DecodeFrames itself.
func (v *WanVAE) DecodeFramesTiled(ctx context.Context, p *compute.Pool, z []float32, t, h, w, tile, overlap int, emit func(frame int, rgb []float32) error) error {
	if t < 1 || h < 1 || w < 1 || t > 1<<12 || h > 1<<12 || w > 1<<12 || len(z) != WanLatentChannels*t*h*w {
		return pipeline.Errorf(pipeline.StageDecode, "", "Wan latent of %d values does not match [%d %d %d %d] (t 1 to %d, sides 1 to %d)", len(z), WanLatentChannels, t, h, w, 1<<12, 1<<12)
	}
	g, err := tiling(h, w, tile, overlap)
	if err != nil {
		return err
	}
	if g.single() {
		return v.DecodeFrames(ctx, p, z, t, h, w, nil, emit)
	}
	nf, H, W := WanFrames(t), WanScale*h, WanScale*w
	bl := make([]*blender, nf)
	for f := range bl {
		bl[f] = newBlender(H, W, g)
	}
	crop := make([]float32, WanLatentChannels*t*g.th*g.tw)
	for _, ty := range g.ys {
		for _, tx := range g.xs {
			for c := range WanLatentChannels {
				for ti := range t {
					for y := range g.th {
						src := z[((c*t+ti)*h+ty+y)*w+tx:]
						copy(crop[((c*t+ti)*g.th+y)*g.tw:((c*t+ti)*g.th+y+1)*g.tw], src[:g.tw])
					}
				}
			}
			err := v.DecodeFrames(ctx, p, crop, t, g.th, g.tw, nil, func(f int, rgb []float32) error {
				m, err := conv.FromCHW(rgb, 3, WanScale*g.th, WanScale*g.tw)
				if err != nil {
					return err
				}
				bl[f].add(m, ty, tx)
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	for f, b := range bl {
		if err := emit(f, b.result()); err != nil {
			return pipeline.Wrap(pipeline.StageDecode, err, "")
		}
		bl[f] = nil
	}
	return nil
}

// WanTiledDecodeBytes predicts the bytes DecodeFramesTiled holds at its
// peak: one tile's decode, the tile's latent and the blended video.
func WanTiledDecodeBytes(t, h, w, tile, overlap int) (int64, error) {
	g, err := tiling(h, w, tile, overlap)
	if err != nil {
		return 0, err
	}
	if g.single() {
		return WanDecodeBytes(t, h, w), nil
	}
	video := 16 * int64(WanFrames(t)) * int64(WanScale*h) * int64(WanScale*w)
	return WanDecodeBytes(t, g.th, g.tw) + 4*int64(WanLatentChannels*t*g.th*g.tw) + video, nil
}
