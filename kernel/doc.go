// Package kernel holds glassbox's hot loops: half-float conversions, the
// block codecs of the ggml weight formats (dequantize to F32, quantize from
// F32) and the dot products that matrix multiplication is made of.
//
// Every kernel has a plain Go version (files *_generic.go and the codec
// files) that is its specification. On amd64, assembly versions (AVX2+FMA,
// F16C, AVX-512 / VNNI) are chosen once at start from the CPU's features;
// building with -tags purego or setting GLASSBOX_NOASM=1 keeps the generic
// versions. Tests run every implementation against the generic one.
//
// Block layouts follow the ggml block structs as described in the GGUF
// specification (ggml-common.h: block_q4_0 ... block_q8_K); dequantization is
// bit-exact with ggml's reference dequantize_row_* functions. The quantizers
// of the 32-element formats and Q8_K follow ggml's reference quantizers
// (llama-quantize's output is reproduced byte for byte); the K-quant
// quantizers are our own: a small search over candidate scales with
// least-squares refits, whose error matches llama-quantize's within 1%.
//
// Matrix × matrix work has its own kernels (gemm.go, ftile.go): weights
// and activations are repacked so one VPDPBUSD (or FMA) instruction serves
// a 16×16 (4×4) tile.
//
// Dot products of quantized weights are taken against activations quantized
// to the format's "vec-dot type" (Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4, Q8_1 for
// Q4_1/Q5_1, Q8_K for the K-quants) with integer arithmetic inside each
// block, as ggml does, so results agree with llama.cpp's to rounding.
//
// Imports: tensor and the standard library (CPU features are read with our
// own CPUID stub).
package kernel
