// Package conv implements the convolutional operators of image models:
// 2-D convolution (3×3 and 1×1, stride 1 and 2, zero padding (K-1)/2, with
// or without bias, with a fused residual add and ReLU), nearest-neighbour
// upsampling ×2, GroupNorm, ReLU, tanh soft-clamp and residual adds.
//
// Layout. A feature map (Map) is H×W pixels of C channels stored row-major
// as [H+2][W+2][C]: channels innermost, with a one-pixel border of zeros
// around the image. The border is the convolution's zero padding, so a
// 3×3 window never needs a bounds check, and the K·C inputs of one kernel
// row are contiguous in memory. Images and latents cross the package
// boundary in PyTorch's planar CHW order (FromCHW, ToCHW). A batch is a
// loop over maps; the ops here are for one image.
//
// Convolution as GEMM without im2col. For output pixel (y, x) and kernel
// row ky, the K·Cin inputs start at padded row y·s+ky (+1-p), column x·s
// (+1-p): a strided row of an implicit matrix A. Weights are packed once
// (NewConv) into blocks of nr output channels, B[ky][kx·Cin+ci][nr], so a
// micro-kernel computes mr pixels × nr channels with mr·nr accumulators
// (tile_generic.go is its specification; tile_amd64.s the AVX-512 version).
// Each output value is reduced in the same order whatever the thread count
// or tile position, so results are bit-identical across runs and threads.
//
// Weights arrive in any precision (the TAEF2 checkpoints hold F16) and are
// widened to F32 when packed; all arithmetic is F32.
//
// Imports: standard library and tensor.
package conv
