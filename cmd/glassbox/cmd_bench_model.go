package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/roofline"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
)

func init() { modelBench = benchModel }

// benchProbeBytes is the roofline buffer: larger than any last-level cache
// of this kind of machine. Tests lower it.
var benchProbeBytes int64 = 512 << 20

// benchResult is what 'glassbox bench -m' measures, like llama-bench:
// prompt processing (pp) of Prompt tokens in one batch, and generation
// (tg) of Gen tokens one at a time, each repeated Reps times after one
// warm-up, from a cache that holds Depth tokens (filled once, before the
// tests; llama-bench's -d).
type benchResult struct {
	Model     string `json:"model"`
	Arch      string `json:"arch"`
	Params    int64  `json:"params"`
	FileBytes int64  `json:"file_bytes"`
	ReadBytes int64  `json:"bytes_per_token"` // weight bytes one decode step reads
	// A mixture of experts: the experts of each block, and those a token
	// goes through (ReadBytes counts only theirs).
	Experts     int     `json:"experts,omitempty"`
	ExpertsUsed int     `json:"experts_used,omitempty"`
	Threads     int     `json:"threads"`
	Prompt      int     `json:"prompt_tokens"`
	Gen         int     `json:"gen_tokens"`
	Depth       int     `json:"depth"`   // tokens in the KV cache before each test
	DepthS      float64 `json:"depth_s"` // filling them (prompt processing in batches)
	// KVReadBytes is what a tg step reads of the KV cache at its mean
	// position (Depth + (Gen+1)/2 entries per layer), added to ReadBytes
	// for the limit.
	KVReadBytes int64   `json:"kv_bytes_per_token"`
	KV          string  `json:"kv"` // the KV cache type: f16, q8_0 or f32
	Reps        int     `json:"reps"`
	PPMean      float64 `json:"pp_tokens_per_s"`
	PPStd       float64 `json:"pp_stddev"`
	TGMean      float64 `json:"tg_tokens_per_s"`
	TGStd       float64 `json:"tg_stddev"`
	ReadGBs     float64 `json:"read_gbs"`              // roofline read bandwidth at Threads
	ReadSource  string  `json:"read_source"`           // where ReadGBs comes from
	TGLimit     float64 `json:"tg_limit_tokens_per_s"` // ReadGBs / bytes per token
	TGOfLimit   float64 `json:"tg_of_limit"`           // TGMean / TGLimit
	// Paired: each tg repetition divided by the limit from the reads just
	// before and after it (their mean), median over the repetitions. The
	// reads around a repetition are as many bytes as it reads (half before,
	// half after), and their sustained rate is the limit: the machine's
	// bandwidth dips for tenths of a second at a time, which a repetition
	// lives through and a short probe may miss. The Best fields take the
	// better of each window's first two passes instead (a short probe's
	// figure, what bench paired with before -d and the windows).
	TGOfLimitPaired  float64 `json:"tg_of_limit_paired"`
	TGPairedMin      float64 `json:"tg_of_limit_paired_min"`
	TGPairedMax      float64 `json:"tg_of_limit_paired_max"`
	ReadGBsPairedMed float64 `json:"read_gbs_paired"` // median of the pairs' sustained bandwidths
	TGOfLimitBest    float64 `json:"tg_of_limit_paired_best"`
	ReadGBsBestMed   float64 `json:"read_gbs_paired_best"`
	// One more tg pass with the session's StepProfile attached, per token:
	// the matrix products (and the weight bytes they read per second),
	// attention, and the rest (norms, RoPE, activations, residual adds).
	StepMS      float64 `json:"step_ms"`
	MatrixMS    float64 `json:"matrix_ms"`
	MatrixGBs   float64 `json:"matrix_gbs"`
	AttentionMS float64 `json:"attention_ms"`
	RestMS      float64 `json:"rest_ms"`
	KernelImpl  string  `json:"kernel_impl"`
	LoadS       float64 `json:"load_s"` // mapping the file and laying out its weights for the kernels
}

func benchModel(ctx context.Context, env *cmdEnv, cfg benchConfig) error {
	t0 := time.Now()
	t, err := loadText(ctx, cfg.Model)
	if err != nil {
		return err
	}
	loadS := time.Since(t0).Seconds()
	defer t.Close()
	m, f := t.Model, t.File
	threads := cfg.Threads
	if threads <= 0 {
		threads = compute.PhysicalCores()
	}
	c := m.Config()
	batch := max(cfg.Prompt, min(cfg.Depth, 512), 1)
	s, err := m.NewSession(model.SessionOptions{CtxLen: cfg.Depth + max(cfg.Prompt, cfg.Gen, 1) + 1, Batch: batch, Threads: threads,
		KVF32: cfg.KV.KVF32, KVQ8: cfg.KV.KVQ8})
	if err != nil {
		return pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	defer s.Close()
	var params int64
	for i := range f.Tensors {
		params += f.Tensors[i].Elements()
	}
	res := benchResult{Model: cfg.Model, Arch: c.Arch, Params: params, FileBytes: f.Size, ReadBytes: m.WeightBytes(), Experts: c.Experts, ExpertsUsed: c.ExpertsUsed,
		Threads: threads, Prompt: cfg.Prompt, Gen: cfg.Gen, Depth: cfg.Depth, Reps: cfg.Reps, LoadS: loadS, KV: s.Options().KVName()}
	if cfg.Gen > 0 { // the keys and values of one position in every layer, times the mean position
		hb, _ := s.Options().KVType().RowBytes(int64(c.HeadDim))
		perPos := int64(c.NumLayers) * 2 * int64(c.NumKVHeads) * hb
		res.KVReadBytes = perPos * int64(cfg.Depth+(cfg.Gen+1)/2)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	tokens := make([]int, cfg.Depth+max(cfg.Prompt, cfg.Gen, 1))
	for i := range tokens {
		tokens[i] = rng.IntN(c.VocabSize)
	}
	logits := make([]float32, c.VocabSize)
	// The context every test starts from: the tests overwrite only the
	// positions after it.
	t0 = time.Now()
	for i := 0; i < cfg.Depth; i += batch {
		if err := s.Forward(ctx, tokens[i:min(i+batch, cfg.Depth)], i, logits); err != nil {
			return err
		}
	}
	res.DepthS = time.Since(t0).Seconds()
	d, test := cfg.Depth, tokens[cfg.Depth:]
	pp := func() error { return s.Forward(ctx, test[:cfg.Prompt], d, logits) }
	tg := func() error {
		for i := range cfg.Gen {
			if err := s.Forward(ctx, test[i:i+1], d+i, logits); err != nil {
				return err
			}
		}
		return nil
	}
	if !cfg.JSON {
		fmt.Fprintf(env.stderr, "benchmarking %s (%s, %s, %d threads, %s KV cache): warm-up, then %d × %s and %d × %s ...\n",
			cfg.Model, c.Arch, formatBytes(f.Size), threads, res.KV, cfg.Reps, res.testName("pp", cfg.Prompt), cfg.Reps, res.testName("tg", cfg.Gen))
	}
	if cfg.Prompt > 0 {
		if res.PPMean, res.PPStd, err = timeReps(pp, cfg.Reps, cfg.Prompt); err != nil {
			return err
		}
	}
	// The roofline in this run: decode reads every weight once per token,
	// so bandwidth ÷ bytes per token bounds the generation speed. Reads
	// before and after each generation repetition, each half the bytes it
	// reads, pair it with the bandwidth of those seconds.
	reader := roofline.NewReader(benchProbeBytes, threads)
	var sustained, best []float64
	between := func() {
		s, b := reader.Window(res.stepBytes() * int64(cfg.Gen) / 2)
		sustained, best = append(sustained, s), append(best, b)
	}
	if cfg.Gen > 0 {
		var rates []float64
		if res.TGMean, res.TGStd, rates, err = timeRepsPaired(tg, cfg.Reps, cfg.Gen, between); err != nil {
			return err
		}
		res.TGOfLimitPaired, res.TGPairedMin, res.TGPairedMax, res.ReadGBsPairedMed = pairLimits(res.stepBytes(), rates, sustained)
		res.TGOfLimitBest, _, _, res.ReadGBsBestMed = pairLimits(res.stepBytes(), rates, best)
		if err := profileTG(s, tg, &res); err != nil {
			return err
		}
	}
	if !cfg.JSON {
		fmt.Fprintf(env.stderr, "measuring read bandwidth (%s buffer) ...\n", formatBytes(benchProbeBytes))
	}
	r, err := roofline.Probe(threads, roofline.Options{BufferBytes: benchProbeBytes})
	if err != nil {
		return err
	}
	res.ReadGBs, res.KernelImpl = r.ReadGBsN, r.KernelImpl
	// On a busy machine the probe reads low, which would flatter the
	// fraction: take the machine's cached roofline when it is higher.
	if cached, err := roofline.Load(threads); err == nil && cached.ReadGBsN > res.ReadGBs {
		res.ReadGBs, res.ReadSource = cached.ReadGBsN, "cached roofline of "+cached.Measured.Format("2006-01-02 15:04 UTC")+
			fmt.Sprintf(" (this run's probe read %.1f GB/s)", r.ReadGBsN)
	} else {
		res.ReadSource = "probed in this run"
	}
	if res.ReadBytes > 0 {
		res.TGLimit = res.ReadGBs * 1e9 / float64(res.stepBytes())
	}
	if res.TGLimit > 0 {
		res.TGOfLimit = res.TGMean / res.TGLimit
	}
	if cfg.JSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printBench(env.stdout, &res)
	return nil
}

func printBench(w io.Writer, res *benchResult) {
	experts := ""
	if res.Experts > 0 {
		experts = fmt.Sprintf(" (%d of %d experts)", res.ExpertsUsed, res.Experts)
	}
	fmt.Fprintf(w, "%s: %s, %.2f B parameters, %s file, %s read per token%s; %d threads; kernels %s\n",
		res.Model, res.Arch, float64(res.Params)/1e9, formatBytes(res.FileBytes), formatBytes(res.ReadBytes), experts, res.Threads, res.KernelImpl)
	fmt.Fprintf(w, "  load %.2f s (mapping the file, laying out the weights for the kernels)\n", res.LoadS)
	if res.Depth > 0 {
		fmt.Fprintf(w, "  context of %d tokens filled in %.2f s; each test starts from it\n", res.Depth, res.DepthS)
	}
	width := len(res.testName("pp", res.Prompt))
	fmt.Fprintf(w, "  %-*s %10s %10s\n", width, "test", "tokens/s", "± stddev")
	if res.Prompt > 0 {
		fmt.Fprintf(w, "  %-*s %10.2f %10.2f\n", width, res.testName("pp", res.Prompt), res.PPMean, res.PPStd)
	}
	if res.Gen > 0 {
		per := formatBytes(res.ReadBytes)
		if res.KVReadBytes > 0 {
			per = fmt.Sprintf("(%s of weights + %s of KV cache)", per, formatBytes(res.KVReadBytes))
		}
		fmt.Fprintf(w, "  %-*s %10.2f %10.2f   %.0f%% of the limit %.2f tokens/s (read %.1f GB/s ÷ %s per token)\n",
			width, res.testName("tg", res.Gen), res.TGMean, res.TGStd, 100*res.TGOfLimit, res.TGLimit, res.ReadGBs, per)
		fmt.Fprintf(w, "  read bandwidth: %s\n", res.ReadSource)
		if res.StepMS > 0 {
			fmt.Fprintf(w, "  a %s pass timed by part, per token: %.2f ms = matrix × vector %.2f ms (%.1f GB/s, %.0f%% of the read) + attention %.2f ms + the rest %.2f ms (norms, RoPE, activations, adds)\n",
				res.testName("tg", res.Gen), res.StepMS, res.MatrixMS, res.MatrixGBs, 100*res.MatrixGBs/res.ReadGBs, res.AttentionMS, res.RestMS)
		}
		if res.TGOfLimitPaired > 0 {
			fmt.Fprintf(w, "  paired with reads of as many bytes around each repetition: %.0f%% of the limit (median; %.0f–%.0f%%) at their sustained %.1f GB/s (median); %.0f%% at their best passes' %.1f GB/s\n",
				100*res.TGOfLimitPaired, 100*res.TGPairedMin, 100*res.TGPairedMax, res.ReadGBsPairedMed, 100*res.TGOfLimitBest, res.ReadGBsBestMed)
		}
	}
}

// testName is llama-bench's name for a test of n tokens: pp128, or
// tg64 @ d1000 from a context of 1000 tokens.
func (res *benchResult) testName(kind string, n int) string {
	if res.Depth > 0 {
		return fmt.Sprintf("%s%d @ d%d", kind, n, res.Depth)
	}
	return fmt.Sprintf("%s%d", kind, n)
}

// stepBytes is what one tg step reads: the weights and, at its mean
// position, the KV cache.
func (res *benchResult) stepBytes() int64 { return res.ReadBytes + res.KVReadBytes }

// profileTG runs tg once more with a StepProfile attached to s (if its
// architecture has one) and sets res's per-token breakdown.
func profileTG(s model.Session, tg func() error, res *benchResult) error {
	ps, ok := s.(model.Profiler)
	if !ok || res.Gen <= 0 {
		return nil
	}
	var p model.StepProfile
	ps.Profile(&p)
	t0 := time.Now()
	err := tg()
	el := time.Since(t0)
	ps.Profile(nil)
	if err != nil {
		return err
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(res.Gen) }
	res.StepMS, res.MatrixMS, res.AttentionMS = ms(el), ms(p.Matrix), ms(p.Attention)
	res.RestMS = res.StepMS - res.MatrixMS - res.AttentionMS
	if p.Matrix > 0 {
		res.MatrixGBs = float64(p.MatrixBytes) / p.Matrix.Seconds() / 1e9
	}
	return nil
}

// pairLimits returns the paired fractions of the limit (median, least,
// most) and the median bandwidth: repetition i ran between reads i and
// i+1, of bytes per token each.
func pairLimits(bytes int64, rates, reads []float64) (med, lo, hi, gbs float64) {
	if bytes <= 0 || len(reads) != len(rates)+1 || len(rates) == 0 {
		return 0, 0, 0, 0
	}
	fr, bw := make([]float64, len(rates)), make([]float64, len(rates))
	for i, r := range rates {
		bw[i] = (reads[i] + reads[i+1]) / 2
		fr[i] = r / (bw[i] * 1e9 / float64(bytes))
	}
	return median(fr), slices.Min(fr), slices.Max(fr), median(bw)
}

func median(x []float64) float64 {
	s := slices.Sorted(slices.Values(x))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// timeReps runs fn once to warm up, then reps times, and returns the mean
// and sample standard deviation of tokens/s.
func timeReps(fn func() error, reps, tokens int) (mean, std float64, err error) {
	mean, std, _, err = timeRepsPaired(fn, reps, tokens, nil)
	return mean, std, err
}

// timeRepsPaired is timeReps calling between (if not nil) before the first
// timed repetition and after each, and also returning each rate.
func timeRepsPaired(fn func() error, reps, tokens int, between func()) (mean, std float64, rates []float64, err error) {
	if err := fn(); err != nil {
		return 0, 0, nil, err
	}
	rates = make([]float64, reps)
	if between != nil {
		between()
	}
	for i := range rates {
		t0 := time.Now()
		if err := fn(); err != nil {
			return 0, 0, nil, err
		}
		rates[i] = float64(tokens) / time.Since(t0).Seconds()
		mean += rates[i]
		if between != nil {
			between()
		}
	}
	mean /= float64(reps)
	if reps > 1 {
		for _, r := range rates {
			std += (r - mean) * (r - mean)
		}
		std = math.Sqrt(std / float64(reps-1))
	}
	return mean, std, rates, nil
}
