package plan

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Kernels is how fast glassbox's own kernels run on a device at one thread
// count, measured by the kernel probe (compute/kprobe) with the read
// bandwidth at that thread count (compute/roofline): the inputs of the
// measured decode model. Rates are per second; times are seconds.
type Kernels struct {
	Threads   int     `json:"threads"`
	Bandwidth float64 `json:"read_bytes_per_s"` // DRAM read bandwidth with Threads threads
	// MatMul is, by weight type ("Q4_0"), the bytes a one-row MatMul
	// consumes per second when the weights are in cache: the kernel's
	// ceiling, which DRAM can only lower.
	MatMul map[string]float64 `json:"matmul_bytes_per_s"`
	// MatMulRowS is, by weight type, what each output row costs besides
	// its bytes (0 when not measured).
	MatMulRowS map[string]float64 `json:"matmul_row_s,omitempty"`
	// Prefill is, by weight type, the MatMul rate with a prompt batch of
	// rows (operations per second, weights in cache): the prefill model's
	// kernel figure (no entry: prefill keeps the roofline model).
	Prefill map[string]float64 `json:"prefill_ops_per_s,omitempty"`
	CallS   float64            `json:"matmul_call_s"` // per MatMul, besides its bytes
	// Attention over a KV cache larger than the caches: its reads of K and
	// V (strided by head, slower than a stream) and its arithmetic.
	AttnKVBytesPerS float64 `json:"attention_kv_bytes_per_s"`
	AttnElemsPerS   float64 `json:"attention_elems_per_s"` // query heads × positions × headDim
	AttnCallS       float64 `json:"attention_call_s"`
	// AttnQ8KVBytesPerS is the rate of attention over a Q8_0 cache (KV
	// bytes per second, arithmetic included, groups of four query heads);
	// 0: not measured (the F16 figures then stand in).
	AttnQ8KVBytesPerS float64 `json:"attention_q8_kv_bytes_per_s,omitempty"`
	VecElemsPerS      float64 `json:"vector_elems_per_s"` // LayerVectorElems per second
	Source            string  `json:"source"`
}

// LayerVectorElems counts the vector work of one decoder layer at one
// token as the kernel probe measures its rate: two RMSNorms and two
// residual adds over dim, RoPE over the query and key, SiLU and the gate
// product over hiddenDim, the key and value rows stored. It must count
// as kprobe.VectorElems does (cmd/glassbox tests that they agree).
func LayerVectorElems(dim, hiddenDim, qDim, kvDim int) float64 {
	return float64(4*dim + qDim + kvDim + 2*hiddenDim + 2*kvDim)
}

// The speed models, recorded with each run (Observation.SpeedModel).
// Calibration only corrects a plan from runs predicted by the same model
// (a ratio measured against another model says nothing about this one);
// runs recorded before models were versioned (0) are never used.
const (
	SpeedModelRoofline = 1 // bytes ÷ bandwidth vs FLOPs ÷ peak share (no measured kernels)
	SpeedModel         = 4 // the measured kernels (measuredDecode; 3: half the kernel time hidden at one thread; 4: measuredPrefill)
)

// KernelsFor returns d's measured kernels for threads workers (0: the most
// threads measured), or nil when there are none for that count.
func (d *Device) KernelsFor(threads int) *Kernels {
	var best *Kernels
	for i := range d.Kernels {
		k := &d.Kernels[i]
		if k.Threads == threads || (threads == 0 && (best == nil || k.Threads > best.Threads)) {
			best = k
		}
	}
	if best == nil || best.Bandwidth <= 0 || len(best.MatMul) == 0 || best.VecElemsPerS <= 0 || best.AttnElemsPerS <= 0 {
		return nil
	}
	return best
}

// rate is the MatMul rate of type name; a type the probe did not measure
// counts at the slowest rate it did (an unknown kernel is not assumed
// fast).
func (k *Kernels) rate(name string) float64 {
	if r, ok := k.MatMul[name]; ok && r > 0 {
		return r
	}
	slow := math.Inf(1)
	for _, r := range k.MatMul {
		if r > 0 {
			slow = min(slow, r)
		}
	}
	return slow
}

// overlap combines a weight matrix's DRAM time m and kernel time c at
// threads workers (attention, with its own measured read rate, is summed). Token generation on the CPU overlaps them little: one activation
// row gives each weight byte a few operations, the hardware prefetcher runs
// only a short way ahead of the dot loop, and the dot loop cannot start on a
// cache line before it arrives. With two threads the plain sum (the byte
// streams as if read at 1/(1/B + 1/C)) fitted the measured generation of
// the 1B F16, Q8_0, Q4_0 and Q4_K_M models better than max(m, c): both cores
// contend for DRAM and the 4-bit kernels do not reach the probe's bandwidth
// (docs/BENCHMARKS.md, "Generation speed prediction"). With one thread about
// half of the kernel time hides under the reads: on the quiet machine
// (2026-11-30 00:53 UTC, session 2 summary) the four 1B models' one-thread
// runs fitted m + α·c with α = 0.38–0.58, where the sum was 17–24 % slow.
func overlap(m, c float64, threads int) float64 {
	if threads == 1 {
		return m + c/2
	}
	return m + c
}

// decodeParts is one token's time split by where it goes (seconds).
type decodeParts struct {
	memory, kernel float64 // DRAM reads and kernel work (each alone)
	fixed          float64 // per-call costs and vector ops
	total          float64 // what the token takes: overlap per part + fixed
}

// measuredDecode predicts one decode step with the measured kernels: every
// weight matrix (the output too, the tied embedding table when it is the
// output) read once per token from DRAM and consumed by its kernel (its
// bytes at the format's rate plus a cost per output row); the attention
// over pos+1 positions of the KV cache (its reads at attention's own
// measured rate, its arithmetic); each call's fixed cost;
// the layers' vector ops. par sequences stepped together share the weight
// reads and multiply the kernel work.
func (p *Plan) measuredDecode(k *Kernels, pos int) decodeParts {
	s := p.Model
	par := float64(p.Options.Parallel)
	var d decodeParts
	add := func(m, c, fixed float64, threads int) {
		d.memory += m
		d.kernel += c
		d.fixed += fixed
		d.total += overlap(m, c, threads) + fixed
	}
	for _, m := range s.mats {
		if m.layer < 0 && m.layer != -2 && !(m.layer == -1 && s.Tied) {
			continue // the embedding table is looked up, not multiplied
		}
		// Of an expert tensor, a token reads its experts' share, in a
		// call per expert.
		b, rows, calls, ty := float64(m.size), float64(m.rows), 1.0, m.typ.String()
		if m.stack > 0 {
			sh := s.expertShare()
			b, rows, calls = b*sh, rows*sh, float64(m.stack)*sh
		}
		add(b/k.Bandwidth, par*(b/k.rate(ty)+rows*k.MatMulRowS[ty]), calls*k.CallS, k.Threads)
	}
	if s.Layers > 0 {
		kvLayer := float64(p.Memory.KVBytesPerTok) / float64(s.Layers) * float64(pos+1)
		attn := float64(s.NumHeads*s.HeadDim) * float64(pos+1)
		qDim, kvDim := s.NumHeads*s.HeadDim, s.NumKVHeads*s.HeadDim
		vec := LayerVectorElems(s.Dim, s.HiddenDim, qDim, kvDim) / k.VecElemsPerS
		kvRate := k.AttnKVBytesPerS
		if kvRate <= 0 {
			kvRate = k.Bandwidth
		}
		for range s.Layers {
			if q8 := k.AttnQ8KVBytesPerS; p.Options.KV == "q8_0" && q8 > 0 {
				// The Q8_0 loops take a group's query heads four at a time
				// (the last four padded), each pass over the head's keys.
				passes := float64((s.NumHeads/max(s.NumKVHeads, 1) + 3) / 4)
				add(par*kvLayer*passes/q8, 0, par*(k.AttnCallS+vec), 0)
				continue
			}
			add(par*kvLayer/kvRate, par*attn/k.AttnElemsPerS, par*(k.AttnCallS+vec), 0) // its own strided read rate: summed
		}
	}
	return d
}

// prefillParts is the measured prefill model's account of one batch of n
// tokens (seconds): the weights read once from DRAM, the kernels'
// arithmetic at their measured batch rates, and what is paid per call,
// per layer and per token (attention over the batch's positions, vector
// ops).
type prefillParts struct {
	memory, kernel, fixed, total float64
}

// measuredPrefill is the prefill time of a batch of n tokens starting at
// position 0, or ok false when k has no batch rate for one of the model's
// multiplied weight types. The weights are read once per batch while the
// kernels work (a batch gives every weight byte hundreds of operations),
// so the two overlap: the step takes the longer, plus the fixed costs.
// Only the last row's logits are computed.
func (p *Plan) measuredPrefill(k *Kernels, n int) (d prefillParts, ok bool) {
	s := p.Model
	par := float64(p.Options.Parallel)
	nf := float64(n)
	for _, m := range s.mats {
		if m.layer < 0 && m.layer != -2 && !(m.layer == -1 && s.Tied) {
			continue // the embedding table is looked up, not multiplied
		}
		rate := k.Prefill[m.typ.String()]
		if rate <= 0 {
			return d, false
		}
		rows := nf * par
		if m.layer < 0 {
			rows = par // the output matrix: logits of the last position only
		}
		size, elems, calls := float64(m.size), float64(m.elems), 1.0
		if m.stack > 0 { // the experts the batch goes through; each row through its own
			touched := s.expertTouched(rows)
			size, elems, calls = size*touched, elems*s.expertShare(), float64(m.stack)*touched
		}
		d.memory += size / k.Bandwidth
		d.kernel += 2 * elems * rows / rate
		d.fixed += calls * k.CallS
	}
	if s.Layers > 0 {
		// Token i attends over i+1 positions: n(n+1)/2 query positions.
		attn := float64(s.NumHeads*s.HeadDim) * nf * (nf + 1) / 2
		qDim, kvDim := s.NumHeads*s.HeadDim, s.NumKVHeads*s.HeadDim
		vec := nf * LayerVectorElems(s.Dim, s.HiddenDim, qDim, kvDim) / k.VecElemsPerS
		d.fixed += par * float64(s.Layers) * (attn/k.AttnElemsPerS + k.AttnCallS + vec)
	}
	d.total = max(d.memory, d.kernel) + d.fixed
	return d, true
}

// prefillBasis describes the measured prefill model's inputs.
func prefillBasis(k *Kernels, s *Shape) string {
	return fmt.Sprintf("prefill: the weights read once per batch while the kernels work (in cache, a batch of rows: %s), attention and vector ops per token",
		s.ratesOf(k.Prefill, "OP/s"))
}

// ratesOf lists rates (by weight type) of the model's weight types, as
// "Q4_0 780 GOP/s, Q6_K 636 GOP/s".
func (s *Shape) ratesOf(rates map[string]float64, unit string) string {
	types := make([]string, 0, len(s.weightTy))
	for t := range s.weightTy {
		if r, ok := rates[t.String()]; ok {
			types = append(types, fmt.Sprintf("%s %s", t, FormatRate(r, unit)))
		}
	}
	sort.Strings(types)
	return strings.Join(types, ", ")
}

// kernelBasis describes the measured decode model's inputs for a KV cache
// of type kv.
func kernelBasis(k *Kernels, s *Shape, kv string) string {
	threads := "1 thread"
	if k.Threads != 1 {
		threads = fmt.Sprintf("%d threads", k.Threads)
	}
	attn := "attention reads the KV cache at " + FormatRate(k.AttnKVBytesPerS, "B/s")
	if kv == "q8_0" && k.AttnQ8KVBytesPerS > 0 {
		attn = "attention goes through the q8_0 KV cache at " + FormatRate(k.AttnQ8KVBytesPerS, "B/s")
	}
	return fmt.Sprintf("generation: %s, DRAM %s + kernels (in cache: %s), %.1f µs per call, %s (%s)",
		threads, FormatRate(k.Bandwidth, "B/s"), s.ratesOf(k.MatMul, "B/s"), 1e6*k.CallS, attn, k.Source)
}
