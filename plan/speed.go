package plan

import (
	"fmt"
	"math"
)

// Speed is the predicted throughput of one sequence.
type Speed struct {
	PrefillTokensPerS float64 `json:"prefill_tokens_per_s"`
	DecodeTokensPerS  float64 `json:"decode_tokens_per_s"`
	// DecodeTotalTokensPerS is the throughput of all parallel sequences.
	DecodeTotalTokensPerS float64 `json:"decode_total_tokens_per_s"`

	DecodeBytesPerToken int64   `json:"decode_bytes_per_token"` // weights + live KV read per step
	DecodeFLOPsPerToken float64 `json:"decode_flops_per_token"`
	AtPosition          int     `json:"at_position"` // context position the decode figure assumes
	DecodeLimit         string  `json:"decode_limit"`
	PrefillLimit        string  `json:"prefill_limit"`

	// The measured decode model's parts (zero without measured kernels):
	// seconds per token reading from DRAM, in the kernels (each as if
	// alone), and in fixed costs; Threads is the thread count they were
	// measured at.
	DecodeMemoryS float64 `json:"decode_memory_s,omitempty"`
	DecodeKernelS float64 `json:"decode_kernel_s,omitempty"`
	DecodeFixedS  float64 `json:"decode_fixed_s,omitempty"`
	Threads       int     `json:"threads,omitempty"`
	// DecodeCorrection is the factor calibration applied to the decode
	// figure (0: none), from DecodeCorrectionRuns runs of similar models on
	// this device, which the corrected figure fits within ±DecodeErrorBar.
	DecodeCorrection     float64 `json:"decode_correction,omitempty"`
	DecodeCorrectionRuns int     `json:"decode_correction_runs,omitempty"`
	DecodeErrorBar       float64 `json:"decode_error_bar,omitempty"`
	PrefillCorrection    float64 `json:"prefill_correction,omitempty"`
	// PrefillCorrectionRuns is how many runs of similar models and prompt
	// batches PrefillCorrection comes from.
	PrefillCorrectionRuns int `json:"prefill_correction_runs,omitempty"`

	Estimated bool   `json:"estimated"` // roofline figures are estimates, not measurements
	Basis     string `json:"basis"`
}

// Constants of the roofline model, used where no kernels were measured
// (device profiles, GPUs, a machine not probed yet) and for prefill.
// Fixed costs per step that the roofline does not see: thread-pool
// barriers and the sampler on the CPU, kernel launches on a GPU.
const (
	cpuStepCost     = 40e-6
	cpuLayerCost    = 60e-6 // ~8 pool barriers per layer at several µs each, more on a busy machine
	gpuStepCost     = 30e-6
	gpuLayerCost    = 8e-6
	slowForChatTokS = 5.0 // below reading speed (~5 tokens/s), chat feels broken

	// Spec-sheet figures are peaks; kernels reach a share of them. The
	// shares are what llama.cpp's published CUDA runs reach: ~80% of the
	// memory bandwidth when generating, ~40% of the dense tensor peak in
	// prefill.
	gpuBandwidthShare = 0.8
	gpuComputeShare   = 0.4

	// On the CPU, glassbox's matrix kernels reach about a fifth of the
	// probed int8/f32 peak (a VNNI or FMA loop with nothing else to do):
	// measured 1B Q4_K_M prefill ran at ~10% of the probe on a busy
	// machine; calibration fits the rest.
	cpuComputeShare = 0.2
)

// work is what one part of a step costs: bytes read and operations done on
// one device.
type work struct {
	bytes, flops float64
	bw, peak     float64
}

// time is the roofline time of w and whether memory (not compute) limits it.
func (w work) time() (float64, bool) {
	if w.bytes == 0 && w.flops == 0 {
		return 0, true
	}
	tm, tc := w.bytes/w.bw, w.flops/w.peak
	return math.Max(tm, tc), tm >= tc
}

func (p *Plan) speed() {
	s, o, d, pl := p.Model, p.Options, p.Device, &p.Placement
	sp := &p.Speed
	sp.Estimated = d.Estimated
	pos := p.tokens() / 2
	sp.AtPosition = pos
	par := float64(o.Parallel)

	cpuPeak := d.PeakF32 * cpuComputeShare
	if s.quantized() {
		cpuPeak = d.PeakInt8 * cpuComputeShare
	}
	var gpuBW, gpuPeak float64
	if d.GPU != nil {
		gpuBW, gpuPeak = d.GPU.Bandwidth*gpuBandwidthShare, d.GPU.PeakF16*gpuComputeShare
		if s.quantized() {
			gpuPeak = d.GPU.PeakInt8 * gpuComputeShare
		}
	}
	// step returns the roofline time of one step of n tokens per sequence
	// at context position pos, its fixed cost, and whether memory limits it.
	step := func(n float64) (roof, fixed float64, memBound bool) {
		var cpu, gpu work
		cpu.bw, cpu.peak, gpu.bw, gpu.peak = d.Bandwidth, cpuPeak, gpuBW, gpuPeak
		layerElems := float64(s.activeMatElems()-s.outElems) / float64(max(s.Layers, 1))
		kvLayer := float64(p.Memory.KVBytesPerTok) / float64(max(s.Layers, 1))
		attn := 4 * float64(s.NumHeads*s.HeadDim) * float64(pos)
		for i := 0; i < s.Layers; i++ {
			w := &cpu
			if i >= s.Layers-pl.GPULayers {
				w = &gpu
			}
			w.bytes += s.layerBytesFor(i, n*par) + kvLayer*float64(pos)*par
			w.flops += (2*layerElems + attn) * n * par
		}
		out := &cpu
		if pl.OutputGPU {
			out = &gpu
		}
		out.bytes += float64(s.OutputBytes)
		if s.Tied {
			out.bytes += float64(s.EmbeddingBytes)
		}
		out.flops += 2 * float64(s.outElems) * par // logits for the last position only
		out.bytes += float64(s.OtherBytes)
		tc, mc := cpu.time()
		tg, mg := gpu.time()
		if pl.CPULayers > 0 || pl.GPULayers == 0 {
			fixed += cpuStepCost + cpuLayerCost*float64(pl.CPULayers)
		}
		if pl.GPULayers > 0 {
			fixed += gpuStepCost + gpuLayerCost*float64(pl.GPULayers)
		}
		return tc + tg, fixed, (tc >= tg && mc) || (tg > tc && mg)
	}

	roof, fixed, memBound := step(1)
	sp.DecodeTokensPerS = 1 / (roof + fixed)
	sp.DecodeLimit = limitName(memBound)
	var kern *Kernels
	if pl.GPULayers == 0 {
		kern = d.KernelsFor(o.Threads)
	}
	if kern != nil {
		dp := p.measuredDecode(kern, pos)
		sp.DecodeTokensPerS = 1 / dp.total
		sp.DecodeLimit = limitName(dp.memory >= dp.kernel)
		sp.DecodeMemoryS, sp.DecodeKernelS, sp.DecodeFixedS, sp.Threads = dp.memory, dp.kernel, dp.fixed, kern.Threads
	}
	sp.DecodeBytesPerToken = int64(float64(s.WeightBytes()-s.EmbeddingBytes-s.inactiveExpertBytes()) + float64(p.Memory.KVBytesPerTok)*float64(pos))
	if s.Tied {
		sp.DecodeBytesPerToken += s.EmbeddingBytes
	}
	sp.DecodeFLOPsPerToken = 2*float64(s.activeMatElems()) + 4*float64(s.NumHeads*s.HeadDim)*float64(pos)*float64(s.Layers)

	// Prefill runs in batches of Batch tokens; a known prompt shorter than
	// that is one smaller batch.
	nb := min(o.Batch, p.tokens())
	if o.Prompt > 0 {
		nb = min(o.Batch, o.Prompt)
	}
	b := float64(nb)
	roof, fixed, memBound = step(b)
	sp.PrefillTokensPerS = b / (roof + fixed)
	sp.PrefillLimit = limitName(memBound)
	prefillMeasured := false
	if kern != nil {
		if pp, ok := p.measuredPrefill(kern, nb); ok {
			sp.PrefillTokensPerS = b / pp.total
			sp.PrefillLimit = limitName(pp.memory >= pp.kernel)
			prefillMeasured = true
		}
	}

	p.raw.prefill, p.raw.decode, p.raw.threads = sp.PrefillTokensPerS, sp.DecodeTokensPerS, o.Threads
	p.raw.speedModel = SpeedModelRoofline
	if kern != nil {
		p.raw.threads, p.raw.speedModel = kern.Threads, SpeedModel
	}
	if c := d.Calibration; c != nil {
		if f, e, n := c.correction(s, p.raw.threads, p.raw.speedModel, true, 1); n > 0 {
			sp.DecodeTokensPerS *= f
			sp.DecodeCorrection, sp.DecodeCorrectionRuns, sp.DecodeErrorBar = f, n, e
		}
		if f, _, n := c.correction(s, p.raw.threads, p.raw.speedModel, false, nb); n > 0 {
			sp.PrefillTokensPerS *= f
			sp.PrefillCorrection, sp.PrefillCorrectionRuns = f, n
		}
	}
	sp.DecodeTotalTokensPerS = sp.DecodeTokensPerS * par
	sp.Basis = p.speedBasis(cpuPeak)
	switch {
	case prefillMeasured:
		sp.Basis = kernelBasis(kern, s, p.Options.KV) + "; " + prefillBasis(kern, s) + p.correctionNotes()
	case kern != nil:
		sp.Basis = kernelBasis(kern, s, p.Options.KV) + "; prefill: " + sp.Basis
	}
}

func limitName(memBound bool) string {
	if memBound {
		return "memory bandwidth"
	}
	return "compute"
}

func (p *Plan) speedBasis(cpuPeak float64) string {
	d := p.Device
	kind := "measured"
	if d.Estimated {
		kind = "estimated"
	}
	b := fmt.Sprintf("CPU %s, %s peak, kernels at ~%.0f%% of it (%s: %s)", FormatRate(d.Bandwidth, "B/s"),
		FormatRate(cpuPeak/cpuComputeShare, "OP/s"), 100*cpuComputeShare, kind, d.Roofline)
	if d.GPU != nil {
		b = fmt.Sprintf("%s %s, %s (spec sheet); ", d.GPU.Name, FormatRate(d.GPU.Bandwidth, "B/s"), FormatRate(d.GPU.PeakInt8, "OP/s int8")) + b
	}
	return b + p.correctionNotes()
}

// correctionNotes says which calibration corrections the speed figures
// carry.
func (p *Plan) correctionNotes() string {
	b := ""
	if sp := p.Speed; sp.DecodeCorrectionRuns > 0 {
		b += fmt.Sprintf("; generation corrected ×%.2f by %d measured runs of similar models", sp.DecodeCorrection, sp.DecodeCorrectionRuns)
	}
	if sp := p.Speed; sp.PrefillCorrectionRuns > 0 {
		b += fmt.Sprintf("; prefill corrected ×%.2f by %d measured runs of similar models and prompts", sp.PrefillCorrection, sp.PrefillCorrectionRuns)
	}
	return b
}
