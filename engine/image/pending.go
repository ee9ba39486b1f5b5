package image

import (
	"errors"

	"github.com/glassbox-ai/glassbox/checkpoint"
)

// errNotBuilt marks a network this build does not have yet.
var errNotBuilt = errors.New("not in this build")

func newUNet(c checkpoint.Component) (EpsNet, error) {
	return nil, &checkpoint.Error{Path: c.Path, Err: errors.New("the SD 1.x UNet (diffusion/unet) is " + errNotBuilt.Error())}
}

func newKL(c checkpoint.Component) (VAE, error) {
	return nil, &checkpoint.Error{Path: c.Path, Err: errors.New("the KL-f8 VAE (vae.KL) is " + errNotBuilt.Error())}
}

// unetActivationBytes and klDecodeBytes are the networks' working memory
// at a latent size (see plan.go).
func unetActivationBytes(h, w, nctx int) int64 { return estimateUNetActivations(h, w, nctx) }

func klDecodeBytes(h, w, tile, overlap int) int64 { return estimateKLDecode(h, w, tile, overlap) }
