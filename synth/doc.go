// Package synth writes llama-architecture GGUF models with random weights,
// for benchmarks and tests that need a real model's shape and size but not
// its knowledge: the output of such a model is gibberish by design.
//
// A model is a Config (the shape: a preset such as "1b" — the Llama-3.2-1B
// body — or "134m"), a weight format ("F16", "Q8_0", "Q4_K_M", ...) and a
// seed. Write streams the file: every tensor is generated, quantized and
// written in chunks of rows, so a 4.4 GB F32 model never has to fit in
// memory. The same Options give the same bytes on every run and platform
// (integer-only random numbers, chunk seeds independent of the number of
// workers).
//
// Weights: matrices (and the embedding) are approximately N(0, 0.02²) —
// the sum of four uniform variates, scaled to that variance, bounded at
// ±3.46σ — and norm weights are 1 + the same noise. Metadata is the
// complete set llama.cpp's loader reads for "llama" (context, embedding,
// block count, FFN, heads, KV heads, RoPE dimension and base, RMS epsilon,
// vocabulary size, file type) plus a tokenizer: either the tokenizer.*
// keys of another GGUF (Options.VocabFrom), or a synthetic SentencePiece
// vocabulary (SyntheticVocab) laid out like Llama 2's: <unk>, <s>, </s>,
// the 256 byte-fallback tokens <0x00>..<0xFF>, then pieces.
//
// Weight formats follow llama-quantize's default mixes (no importance
// matrix), see Formats and the table in formats.go.
//
// Imports: gguf, kernel (quantization), tensor and the standard library.
package synth
