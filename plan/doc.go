// Package plan answers "can I run this model here, and how fast?" before
// anything is loaded. It owns the device inventory (this machine's memory,
// CPU and roofline figures, or a named hardware profile), the memory and
// speed prediction for a model file's header, placement across GPU memory
// and RAM, the verdict, admission of a job against a memory budget, and the
// calibration history that keeps the prediction honest.
//
// Memory model (what the engine allocates, see engine/ and compute/):
//
//   - weights are memory-mapped; every block and the output matrix become
//     resident as the first token touches them, so they count in full;
//   - the token-embedding table is mapped too, but only the rows of tokens
//     actually used become resident (unless the output is tied to it);
//   - the KV cache holds, per layer, K and V rows [ctxLen][numKVHeads*headDim]
//     of the KV dtype (F16 by default), times the parallel sequences;
//   - the compute arena holds the activations of one batch: a few vectors of
//     max(dim, hiddenDim, vocabSize) floats per batch row plus the attention
//     scores [numHeads][ctxLen]; parallel sequences share one batcher, which
//     adds two rows per sequence (not a batch each);
//   - runtime overhead covers the Go runtime, the program text, the parsed
//     header and the tokenizer.
//
// Speed model. Generation on this machine is measured, not assumed: the
// kernel probe (compute/kprobe) times glassbox's own one-row MatMul per
// weight format with the weights in cache, the attention and vector ops
// and the fixed cost of a call, at 1 and N threads, and the roofline probe
// (compute/roofline) gives the DRAM read bandwidth. A token then takes,
// summed over the weight matrices, bytes ÷ bandwidth + bytes ÷ kernel rate
// + the call cost (DRAM and kernel time barely overlap at one activation
// row; see overlap), plus per layer the KV cache read and attention at the
// position and the vector ops. decode_limit names the larger of the DRAM
// and kernel parts. Without measured kernels (device profiles, GPUs, a
// machine not probed yet) the figure is a roofline (Williams, Waterman,
// Patterson, "Roofline: an insightful visual performance model", CACM
// 2009): max(bytes ÷ bandwidth, FLOPs ÷ peak) plus fixed costs. Prefill
// reads the weights once per batch and is usually compute-bound; it keeps
// the roofline. Calibration corrects a model's speed only from runs of
// similar models (same format and threads, weights within 2×).
//
// Imports: gguf, tensor, pipeline and the standard library.
package plan
