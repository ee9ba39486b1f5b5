// Package wan is Wan 2.1's text-to-video diffusion transformer (Wan Team
// 2025, "Wan: Open and Advanced Large-Scale Video Generative Models";
// github.com/Wan-Video/Wan2.1 wan/modules/model.py, WanModel with
// model_type 't2v'), in one file (dit.go) that reads like the module: the
// patch embedding, the sinusoidal time embedding and its six modulation
// vectors, the blocks (modulated self-attention with RMS-normed q and k and
// 3-D RoPE over frames, rows and columns; cross-attention over the text;
// the modulated GELU-tanh feed-forward), the modulated head and unpatchify.
//
// Weights are bound by the original Wan names, bare or under ComfyUI's
// "model.diffusion_model." prefix, in F32, F16 or BF16 (matrices alias the
// file's data; norms, biases and modulations are float32 copies). The
// shape comes from the tensors, so the 1.3B and 14B layouts load by the
// same code; the head count is Wan 2.1's head width of 128 unless given.
//
// Layout: a latent is [C][T][H][W] float32 (PyTorch's, batch dropped);
// tokens are the 1×2×2 patches in (frame, row, column) order, activations
// [tokens][dim] row-major. Arithmetic is float32 as the official code runs
// under autocast(float32), with the RoPE rotation and the time sinusoid in
// float64 as it computes them.
//
// A prompt's text embedding and every block's cross-attention keys and
// values do not depend on the latent or the timestep: PrepareText computes
// them once per prompt and Forward reuses them every step. The 512 context
// rows Wan pads the prompt to are zeros, so all padding rows embed to one
// row; they are kept as that one key with ln(count) added to its score,
// which is the same softmax as the copies.
//
// LatentOf gives a video's latent shape and token count as Wan's generate
// computes them, refusing frame counts other than 4n + 1 and sizes that are
// not multiples of 16 with the nearest valid values.
//
// Errors: binding errors are *checkpoint.Error (stage load) naming the
// tensor and its shapes; Forward's are *Error (stage generate).
//
// Imports: checkpoint, compute, kernel, tensor and the standard library.
package wan
