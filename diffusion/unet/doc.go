// Package unet is the Stable Diffusion 1.x denoising UNet (Rombach et al.
// 2022, "High-Resolution Image Synthesis with Latent Diffusion Models",
// arXiv:2112.10752; the network of CompVis's
// ldm/modules/diffusionmodules/openaimodel.py with the v1-inference.yaml
// configuration), an ε-prediction network: given the latent x·c_in, the
// timestep t and the CLIP text context, Eps returns the predicted noise.
//
// unet.go is the model, top to bottom: the sinusoidal timestep embedding
// and its MLP, twelve input blocks (ResBlocks of 320, 640, 1280 and 1280
// channels, a spatial transformer after each ResBlock of the first three
// levels, stride-2 downsampling), the middle block (ResBlock, transformer,
// ResBlock), twelve output blocks over the input blocks' outputs
// concatenated back in reverse (with nearest-neighbour ×2 upsampling) and
// the output head. Weights are bound by the checkpoint's own names (the
// view checkpoint.Sub(file, "model.diffusion_model.")), so a tensor named
// in an error leads to the line that binds it (load.go).
//
// Layout. Feature maps are conv.Map (channels innermost, a zero border);
// a transformer's tokens are rows [n][dim] of the n = h·w positions, row-
// major; matrices are [out][in] (PyTorch's Linear weight) and a product is
// x·Wᵀ. The latent and ε cross the API planar, [4][h][w].
//
// Arithmetic. float32 throughout, GroupNorm32 with ε 1e-6 and LayerNorm
// with ε 1e-5 as stable-diffusion.cpp runs them, GELU in the tanh form,
// softmax in float32 with attention scores scaled by 1/√headDim.
//
// Kernels. Convolutions and the transformers' linear layers run on
// compute/conv's micro-kernels with their weights packed once in F16
// (binary16, widened as they are loaded: F32 and BF16 files are rounded to
// nearest, as stable-diffusion.cpp stores convolution kernels; a linear
// layer is a 1×1 convolution over the token rows, conv.Conv.Rows); the
// file's pages of a packed tensor are dropped from the resident set. The
// time embedding's one-row products (compute.MatMul) alias the file in its
// own type. Attention is computed one block of 64 queries per head at a
// time, both of its products as 1×1 convolutions (attn.go), so no n×n
// matrix is ever held.
//
// Imports: checkpoint, compute, compute/conv, kernel, tensor.
package unet
