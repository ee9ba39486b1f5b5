// Package synth writes GGUF models with random weights, for benchmarks
// and tests that need a real model's shape and size but not its
// knowledge: the output of such a model is gibberish by design.
//
// A model is a Config (the shape: a preset such as "1b" — the Llama-3.2-1B
// body — or "134m"; and an architecture), a weight format ("F16", "Q8_0",
// "Q4_K_M", ...) and a seed. Write streams the file: every tensor is
// generated, quantized and written in chunks of rows, so a 4.4 GB F32
// model never has to fit in memory. The same Options give the same bytes
// on every run and platform (integer-only random numbers, chunk seeds
// independent of the number of workers).
//
// Architectures (Archs): llama (and Mixtral's mixture of experts) is the
// default; qwen2, qwen2moe, qwen3, qwen3moe, gemma2, gemma3, granite,
// granitemoe and phi3 add the tensors and metadata keys that both
// llama.cpp's loader and glassbox's read for them (biases, head norms,
// post-norms, fused matrices, shared experts; soft-caps, multipliers,
// sliding windows), with the scalars of the family's real models, and
// tie the output matrix to the token embedding where the family's small
// models do. Config.YaRNFactor adds YaRN RoPE scaling to any of them.
//
// Weights: matrices (and the embedding, biases and routers) are
// approximately N(0, 0.02²) — the sum of four uniform variates, scaled to
// that variance, bounded at ±3.46σ; Options.WeightStd widens them — and
// norm weights are 1 + N(0, 0.02²) (Gemma's too: its converter stores
// them with the 1 added). Metadata is the complete set llama.cpp's loader
// reads for the architecture (context, embedding, block count, FFN,
// heads, KV heads, RoPE dimension and base, RMS epsilon, vocabulary size,
// file type, and the family's keys) plus a tokenizer: either the
// tokenizer.* keys of another GGUF (Options.VocabFrom), or a synthetic
// SentencePiece vocabulary (SyntheticVocab) laid out like Llama 2's:
// <unk>, <s>, </s>, the 256 byte-fallback tokens <0x00>..<0xFF>, then
// pieces.
//
// Weight formats follow llama-quantize's default mixes (no importance
// matrix), see Formats and the table in formats.go.
//
// SD1Tensors, WriteSD1 and WriteSD1File write sd15-rand, the random-weight
// Stable Diffusion 1.5 checkpoint of the shared SD golden set (spec v1,
// shared/golden/sd15/README.md §2), as .safetensors byte for byte: the
// layout (CLIP ViT-L/14 text model, LDM UNet, AutoencoderKL in the
// original LDM names, sorted) is described by code in sd1_layout.go, each
// value is a splitmix64 function of (tensor index, element index) scaled by
// the tensor's kind and fan-in and rounded to F16, so chunks are made in
// parallel and the file streams. SD1Options.F32 writes the same values
// widened to F32 (§2.6). Command: glassbox synth --arch sd1 [--type f16|f32].
//
// WriteWan and WriteWanFile write Wan 2.1's random-weight files of spec
// glassbox-wan-init-v1 (shared/golden/wan/README.md §1) byte for byte:
// umt5-tiny, the tiny umT5 encoder, and umt5-xxl, Wan 2.1's full-size one
// (UMT5Tensors gives any umT5 layout; 11.4 GB at F16, streamed; the golden
// set has no such file, the command's default seed for it is 5001), the
// DiTs dit-tiny and dit-1.3b (DiTTensors gives any t2v DiT layout) and the
// real-size vae. Command: glassbox synth --arch wan --kind
// dit-tiny|dit-1.3b|umt5-tiny|umt5-xxl|vae [--seed N] [--type f32|f16].
//
// Imports: gguf, safetensors, kernel (quantization, half floats), tensor and
// the standard library.
package synth
