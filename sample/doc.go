// Package sample turns a vector of logits into the next token id: the
// "selects one" step of generation. It owns the sampling chain (penalties,
// top-k, top-p, min-p, temperature, a seeded draw) and the stop-string
// matcher that keeps stop strings out of streamed output.
//
// # Chain order
//
// The transforms run in llama.cpp's default order (common/common.h,
// common_params_sampling.samplers: penalties, dry, top_n_sigma, top_k,
// typ_p, top_p, min_p, xtc, temperature, then the distribution sampler);
// glassbox implements the subset
//
//	penalties → top-k → top-p → min-p → temperature → draw
//
// Note what that order implies, as in llama.cpp: top-p and min-p see the
// probabilities at temperature 1, and temperature only reshapes the
// distribution among the survivors.
//
//   - Penalties (repetition: Keskar et al. 2019, "CTRL", with llama.cpp's
//     sign fix; frequency/presence: the OpenAI API definition) look at the
//     last PenaltyLastN ids of the history (0: no penalties, -1: all of
//     it). For a token seen c > 0 times:
//     logit = logit·r if logit ≤ 0 else logit/r; then
//     logit -= c·FreqPenalty + PresencePenalty.
//   - Top-k keeps the k highest logits (Fan et al. 2018).
//   - Top-p keeps the smallest prefix of the sorted candidates whose
//     softmax mass reaches p (nucleus sampling, Holtzman et al. 2019).
//   - Min-p keeps candidates whose probability is at least MinP times the
//     top candidate's (Nguyen et al. 2024), i.e. logit ≥ max + ln(MinP).
//   - Temperature divides the surviving logits by T; the draw takes the
//     softmax and inverts its cumulative sum at a uniform variate.
//
// Temperature 0 is greedy decoding: penalties still apply, then the
// highest logit wins and the lowest id wins ties; no randomness is used.
//
// # Determinism
//
// Candidates are ordered by (logit descending, id ascending), so every
// tie is broken the same way. The random source is PCG-DXSM (math/rand/v2's
// NewPCG, a fixed published algorithm) seeded from Params.Seed, and the
// softmax is computed in float64 with this package's own exp (expf64) with
// explicit roundings that stop the compiler from fusing multiply-adds, so
// the same seed, settings and logits give the same tokens on every run
// and platform.
//
// # Cost
//
// A Sampler owns its buffers: after the first call with a given
// vocabulary size Sample allocates nothing. Greedy decoding without
// penalties takes the argmax of the logits as they are. Top-k keeps the k
// best with a heap that rejects almost every candidate with one
// comparison; top-p takes its first 64 the same way and grows the sorted
// prefix (×4) until its mass is reached, sorting larger prefixes by a
// radix sort of the whole rest; so a 150k vocabulary is not sorted by
// comparisons per token. The softmax pass over the survivors (expSum) has
// AVX2 and AVX-512 versions that compute expf64's operations in the same
// order, four or eight candidates at a time, so they give the same bits
// as the Go code. A Sampler is not safe for concurrent use; use one per
// sequence.
//
// # Inspection
//
// Top reports the distribution the last token was drawn from (ids,
// penalized logits, final probabilities), so a run can show how sure each
// choice was without the sampler paying for it on every token.
//
// Imports: standard library only.
package sample
