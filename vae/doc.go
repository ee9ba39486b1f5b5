// Package vae runs image autoencoders: the encoder turns an RGB image into
// latents, the decoder turns latents back into an image. Three architectures
// live here, each in one file:
//
//   - TAEF2 (taef2.go), the tiny autoencoder of the FLUX.2 latent space (32
//     channels at 1/8 resolution) by Ollin Boer Bohan (github.com/madebyollin/
//     taesd, variant "flux_2"), weights bound by name from the reference .pth
//     checkpoints. Images [3][H][W] with RGB in [0, 1]; latents
//     [32][H/8][W/8], unscaled.
//
//   - KL-f8 (kl.go), Stable Diffusion 1.x's AutoencoderKL (Rombach et al.
//     2022), weights bound through package checkpoint from a checkpoint's VAE
//     view. Images [3][H][W] with RGB in [-1, 1]; latents [4][H/8][W/8] in
//     the VAE's own scale (the diffusion latent divided by KLScaleFactor).
//     KLBytes, KLImage and KLSample do stable-diffusion.cpp's conversions
//     around it (bytes out, bytes in, the img2img posterior draw).
//
//   - Wan 2.1's causal 3-D VAE (wan.go), the autoencoder of the Wan video
//     models' latent space (16 channels, 4 frames and 8×8 pixels per
//     latent value), weights bound through package checkpoint in the names
//     of Wan2.1_VAE.pth / wan_2.1_vae.safetensors. DecodeFrames streams
//     video frames RGB [3][8h][8w] in [-1, 1] (unclamped) to a callback,
//     one latent frame after another, holding only each causal
//     convolution's two previous input frames, so its memory
//     (WanDecodeBytes) does not grow with the frame count;
//     DecodeFramesTiled (wan_tile.go) runs spatial tiles one after another
//     over all frames when one frame's cache does not fit. WanEncoder
//     (wan_encode.go) maps 1+4n frames to 1+n normalised latent frames.
//
// Data crosses this package in planar CHW float32.
//
// Decoding is bounded in memory: each decoder's whole-image part (TAEF2:
// the GroupNorm blocks at latent resolution; KL: everything at latent
// resolution, the mid-block attention included) runs once, and the
// upsampling part runs over overlapping tiles that are blended together
// (run.go). PlanDecode and PlanKLDecode (KLDecodeBytes) predict the bytes a
// decode will hold before it runs, and ChooseTile and ChooseKLTile pick
// the largest tile that fits a budget. The KL decoder's GroupNorms see only
// their tile, so its tiled output differs a little from the untiled one
// (about 34 dB PSNR on the golden latent); the TAEF2 decoder's tiles are
// exact.
//
// Stages reported through pipeline.TraceFrom(ctx): the caller owns load and
// deliver; Encode reports encode progress in layers, Decode reports decode
// progress in tiles (TAEF2) or blocks (KL).
//
// Imports: pth, checkpoint, compute, compute/conv, pipeline.
package vae
