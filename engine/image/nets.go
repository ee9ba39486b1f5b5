package image

import (
	"context"
	"fmt"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	textclip "github.com/glassbox-ai/glassbox/textenc/clip"
)

// TextEncoder is CLIP's text transformer as the job calls it
// (textenc/clip.Encoder): windows of 77 ids → [77·windows][768].
type TextEncoder interface {
	Encode(ctx context.Context, p *compute.Pool, ids []int32, weights []float32, opts textclip.Options) ([]float32, error)
	WeightBytes() int64
}

// EpsNet is the denoising network (diffusion/unet.UNet): the ε it
// predicts for the c_in-scaled latent x [4][h][w] at timestep t under the
// context cond [nctx][768], written into eps. It should return soon after
// ctx is done.
type EpsNet interface {
	Eps(ctx context.Context, p *compute.Pool, x []float32, h, w int, t float32, cond []float32, nctx int, eps []float32) error
	WeightBytes() int64
}

// VAE is the autoencoder (vae.KL): Decode maps z = latent/ScaleFactor
// [4][h][w] to [3][8h][8w] in [-1, 1], in tiles of tile latent pixels
// with overlap (tile 0: whole); Encode maps an image [3][H][W] in [-1, 1]
// to the posterior's mean and log-variance [4][H/8][W/8].
type VAE interface {
	Decode(ctx context.Context, p *compute.Pool, z []float32, h, w, tile, overlap int) ([]float32, error)
	Encode(ctx context.Context, p *compute.Pool, rgb []float32, h, w int) (mean, logvar []float32, err error)
	WeightBytes() int64
}

// ScaleFactor is SD 1.x's latent scale: the VAE's latent times it is the
// diffusion latent (sd.cpp's scale_factor, 0.18215, for SD 1.x and 2.x).
const ScaleFactor = 0.18215

// Channels are SD 1.x's latent channels.
const Channels = 4

// Nets builds the three networks from a checkpoint's components. A nil
// field builds the real network (textenc/clip, diffusion/unet, vae).
type Nets struct {
	Text func(c checkpoint.Component) (TextEncoder, error)
	UNet func(c checkpoint.Component) (EpsNet, error)
	VAE  func(c checkpoint.Component) (VAE, error)
}

func (n Nets) text(c checkpoint.Component) (TextEncoder, error) {
	if n.Text != nil {
		return n.Text(c)
	}
	return textclip.New(c.Source)
}

func (n Nets) unet(c checkpoint.Component) (EpsNet, error) {
	if n.UNet != nil {
		return n.UNet(c)
	}
	return newUNet(c)
}

func (n Nets) vae(c checkpoint.Component) (VAE, error) {
	if n.VAE != nil {
		return n.VAE(c)
	}
	return newKL(c)
}

// Model is an opened checkpoint: its components and what identifies it.
type Model struct {
	Path       string
	Components *checkpoint.Components
	// FileBytes is the checkpoint's size (and the VAE file's, when given).
	FileBytes int64
	close     []func() error
}

// Close unmaps the files.
func (m *Model) Close() error {
	var first error
	for _, c := range m.close {
		if err := c(); err != nil && first == nil {
			first = err
		}
	}
	m.close = nil
	return first
}

// OpenModel opens an SD 1.x checkpoint (and a separate VAE file when vae
// is not empty) and finds its components; it reads headers only (the
// tensors are mapped, not read).
func OpenModel(path, vae string) (*Model, error) {
	f, err := checkpoint.Open(path)
	if err != nil {
		return nil, err
	}
	m := &Model{Path: path, close: []func() error{f.Close}}
	var vsrc checkpoint.Source
	if vae != "" {
		vf, err := checkpoint.Open(vae)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("--vae: %w", err)
		}
		m.close = append(m.close, vf.Close)
		vsrc = vf
	}
	c, err := checkpoint.SD1Components(f, vsrc)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.Components = c
	return m, nil
}
