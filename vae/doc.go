// Package vae runs image autoencoders: the encoder turns an RGB image into
// latents, the decoder turns latents back into an image. The architecture
// here is TAEF2, the tiny autoencoder of the FLUX.2 latent space (32
// channels at 1/8 resolution) by Ollin Boer Bohan (github.com/madebyollin/
// taesd, variant "flux_2"); taef2.go defines it in one file, weights bound
// by name from the reference .pth checkpoints.
//
// Data crosses this package in planar CHW float32: images [3][H][W] with
// RGB in [0, 1]; latents [32][H/8][W/8], unscaled.
//
// Decoding is bounded in memory: the decoder's whole-image part (the
// GroupNorm blocks at latent resolution) runs once, and the upsampling part
// runs over overlapping tiles that are blended together (tile.go). PlanDecode
// predicts the bytes a decode will hold before it runs, and ChooseTile picks
// the largest tile that fits a budget.
//
// Stages reported through pipeline.TraceFrom(ctx): the caller owns load and
// deliver; Encode reports encode progress in layers, Decode reports decode
// progress in tiles.
//
// Imports: pth, compute/conv, pipeline.
package vae
