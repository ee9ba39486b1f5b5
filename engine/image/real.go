package image

import (
	"context"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/diffusion/unet"
	"github.com/glassbox-ai/glassbox/vae"
)

// The real networks behind the job's interfaces.

func newUNet(c checkpoint.Component) (EpsNet, error) { return unet.New(c.Source) }

// kl adapts vae.KL to VAE, keeping the last decode's measured peak.
type kl struct {
	*vae.KL
	peak int64
}

func newKL(c checkpoint.Component) (VAE, error) {
	k, err := vae.NewKL(c.Source)
	if err != nil {
		return nil, err
	}
	return &kl{KL: k}, nil
}

func (k *kl) Decode(ctx context.Context, p *compute.Pool, z []float32, h, w, tile, overlap int) ([]float32, error) {
	return k.KL.Decode(ctx, p, z, h, w, vae.KLDecodeOptions{Tile: tile, Overlap: overlap, Peak: &k.peak})
}

// LastPeak is the bytes the last decode held at its peak.
func (k *kl) LastPeak() int64 { return k.peak }

// unetActivationBytes is one UNet call's working memory (the UNet's own
// model of its buffers).
func unetActivationBytes(h, w, nctx int) int64 { return unet.ActivationBytes(h, w, nctx) }

// klDecodeBytes is the KL decoder's peak on an h×w latent in tiles of
// tile latent pixels (0: whole), as vae plans it.
func klDecodeBytes(h, w, tile, overlap int) int64 {
	return vae.KLDecodeBytes(h, w, vae.DecodePlan{Tile: tile, Overlap: overlap})
}
