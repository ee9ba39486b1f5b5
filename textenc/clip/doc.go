// Package clip is the text encoder of Stable Diffusion 1.x: OpenAI CLIP
// ViT-L/14's text transformer (Radford et al. 2021, "Learning Transferable
// Visual Models From Natural Language Supervision", arXiv:2103.00020) as
// stable-diffusion.cpp runs it (src/model/te/clip.hpp: CLIPTextModel;
// src/conditioning/conditioner.hpp: FrozenCLIPEmbedderWithCustomWords).
//
// A window of 77 token ids (tokenizer/clip) becomes 77 hidden states of
// 768: token embedding + position embedding (positions 0..76), 12 pre-LN
// blocks (LayerNorm eps 1e-5; causal self-attention, 12 heads of 64;
// an MLP of 3072 with quick-GELU), then final_layer_norm — also when
// --clip-skip stops early, as sd.cpp's SD 1.x encoder does (with_final_ln).
// A prompt of several windows is encoded window by window and the outputs
// concatenated, each window scaled by its emphasis weights with the mean
// kept (apply_token_weights).
//
// Layout: hidden states are row-major [token][Dim]; weight matrices are
// the checkpoint's [out][in] (compute.MatMul computes x·Wᵀ).
//
// Arithmetic: activations are float32 throughout; weights stay in the
// file's type, their products accumulated in float32. Quick-GELU goes
// through ggml's f16 table by default, as sd.cpp's CPU backend computes
// it. Against sd.cpp's CLIP output for the golden prompts
// (../shared/golden/sd15): NMSE 1.2–1.5e-8 on the F32 file (6e-8 with the
// exact function), 2.0–2.1e-6 on the F16 file — the distance between
// sd.cpp's own F16 and F32 runs. Rounding the activations to f16 before
// each product, as ggml's F16 path does, moves that by 2e-7 only, so the
// rest comes from how the golden machine's ggml sums F16 dot products.
//
// Imports: checkpoint, compute, kernel, tensor.
package clip
