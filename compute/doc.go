// Package compute runs the operations of a transformer over float32
// activations and weights in any supported dtype: matrix multiplication,
// norms, activations, RoPE and attention over a KV cache, on a fixed pool of
// worker goroutines.
//
// Layout: activations are row-major [n][dim] float32 slices; a weight
// Matrix is [Rows][Cols] (Cols innermost, GGUF's ne[0]), and MatMul computes
// out[i][r] = Σ_c x[i][c]·W[r][c], i.e. out = x·Wᵀ, as ggml_mul_mat does.
//
// Results do not depend on the number of threads: work is split over
// output elements, each computed by one worker with the same arithmetic.
//
// Token generation's hot path (MatMul with n = 1, Attention) allocates
// nothing after warm-up: loop bodies are pooled Tasks (Pool.ForTask) and
// scratch buffers come from pools.
//
// MatMul picks its path by the number of activation rows n: one row, the
// dot kernels; 2–7 rows (batched decoding), kernel.RowsDotMulti, which
// unpacks each weight block once for several rows; 8 or more (prompt
// processing), the GEMM kernels, which repack each 16-row weight tile per
// call unless the matrix was prepared (Prepare, PackOnFirstUse) — a copy
// of PreparedBytes on the heap that later calls read directly.
//
// Sizes are the caller's contract: a mismatch is a programming error and
// panics with the sizes involved. Check weights from files with
// Matrix.Check (or NewMatrix) when loading.
//
// Imports: tensor, kernel and the standard library.
package compute
