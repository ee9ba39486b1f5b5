package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/gguf"
)

// Config is the shape of a decoder-only transformer, read from the
// "<arch>.*" metadata keys that llama.cpp's converters write.
type Config struct {
	Arch          string
	Name          string  // general.name, for messages
	VocabSize     int     // rows of token_embd
	Dim           int     // <arch>.embedding_length
	NumLayers     int     // <arch>.block_count
	NumHeads      int     // <arch>.attention.head_count
	NumKVHeads    int     // <arch>.attention.head_count_kv (default NumHeads)
	HeadDim       int     // <arch>.attention.key_length, default Dim/NumHeads
	HiddenDim     int     // <arch>.feed_forward_length
	RopeDim       int     // <arch>.rope.dimension_count, default HeadDim
	RopeBase      float32 // <arch>.rope.freq_base, default 10000
	NormEps       float32 // <arch>.attention.layer_norm_rms_epsilon
	CtxLen        int     // <arch>.context_length: the trained context (advisory)
	SlidingWindow int     // <arch>.attention.sliding_window; 0 = full attention
	// RopeLinear is the linear RoPE scaling factor (<arch>.rope.scaling.type
	// "linear", .factor): positions are divided by it. 1 when unscaled.
	RopeLinear float32
	// RopeYaRN is YaRN's scaling (<arch>.rope.scaling.type "yarn"), or nil.
	RopeYaRN *YaRN
	// Pooling is <arch>.pooling_type, how the file's makers pool its
	// hidden states into an embedding (llama.cpp's enum: 0 none or unset,
	// 1 mean, 2 cls, 3 last, 4 rank).
	Pooling int
	// A mixture-of-experts model (ReadConfigMoE; 0 experts: dense):
	// Experts is <arch>.expert_count, ExpertsUsed <arch>.expert_used_count
	// (the experts each token goes through), ExpertHiddenDim
	// <arch>.expert_feed_forward_length (default HiddenDim).
	Experts         int
	ExpertsUsed     int
	ExpertHiddenDim int
	// ExpertProbs: the chosen experts are weighted by their softmax
	// probabilities as they are (Qwen2-MoE's norm_topk_prob false), not
	// renormalized to sum to 1 (Mixtral's, Qwen3-MoE's rule).
	ExpertProbs bool
	// ExpertSharedHiddenDim is the width of a shared expert every token
	// goes through beside its chosen ones (<arch>.expert_shared_feed_forward_length;
	// 0: none).
	ExpertSharedHiddenDim int
}

// BufferHiddenDim is the feed-forward hidden width the activation
// buffers hold: an expert's in a mixture of experts (every block's
// network is one: qwen3moe's feed_forward_length then sizes nothing),
// else a dense block's.
func (c *Config) BufferHiddenDim() int {
	if c.Experts > 0 {
		return max(c.ExpertHiddenDim, c.ExpertSharedHiddenDim)
	}
	return c.HiddenDim
}

// KVDim is the width of one position's keys (or values): NumKVHeads·HeadDim.
func (c *Config) KVDim() int { return c.NumKVHeads * c.HeadDim }

// QDim is the width of one position's queries: NumHeads·HeadDim.
func (c *Config) QDim() int { return c.NumHeads * c.HeadDim }

// ReadConfig reads the common hyperparameters of arch from f. Missing
// required keys, mistyped values and inconsistent shapes are load errors
// that name the key. A mixture-of-experts file (expert_count > 0) is
// refused: its architecture package reads it with ReadConfigMoE.
func ReadConfig(f *gguf.File, arch string) (Config, error) {
	return readConfig(f, arch, false)
}

// ReadConfigMoE is ReadConfig for an architecture whose files may hold
// a mixture of experts (model.Experts): their counts are read, not
// refused.
func ReadConfigMoE(f *gguf.File, arch string) (Config, error) {
	return readConfig(f, arch, true)
}

// MoEArchs names the architectures that run mixture-of-experts files,
// for the refusal of the others.
const MoEArchs = "llama (Mixtral), qwen2moe, qwen3moe, granitemoe, gpt-oss"

func readConfig(f *gguf.File, arch string, moe bool) (Config, error) {
	c := Config{Arch: arch}
	c.Name, _ = f.Meta.String("general.name")
	r := metaReader{f: f, arch: arch}
	c.Dim = r.int("embedding_length", -1)
	c.NumLayers = r.int("block_count", -1)
	c.NumHeads = r.int("attention.head_count", -1)
	c.HiddenDim = r.int("feed_forward_length", -1)
	c.CtxLen = r.int("context_length", -1)
	c.NumKVHeads = r.int("attention.head_count_kv", c.NumHeads)
	if r.err == nil && c.NumHeads > 0 {
		c.HeadDim = r.int("attention.key_length", c.Dim/c.NumHeads)
	}
	c.RopeDim = r.int("rope.dimension_count", c.HeadDim)
	c.RopeBase = r.float("rope.freq_base", 10000)
	c.NormEps = r.float("attention.layer_norm_rms_epsilon", -1)
	c.SlidingWindow = r.int("attention.sliding_window", 0)
	c.Pooling = r.int("pooling_type", 0)
	if n := r.int("expert_count", 0); n > 0 && r.err == nil {
		if !moe {
			return c, fmt.Errorf("load: %s: mixture-of-experts files (expert_count %d) are not supported for this architecture (supported: %s)", arch, n, MoEArchs)
		}
		c.Experts = n
		c.ExpertsUsed = r.int("expert_used_count", -1)
		c.ExpertHiddenDim = r.int("expert_feed_forward_length", c.HiddenDim)
		c.ExpertSharedHiddenDim = r.int("expert_shared_feed_forward_length", 0)
		if g := r.int("expert_gating_func", 1); r.err == nil && g != 1 {
			return c, fmt.Errorf("load: %s: expert_gating_func %d is not supported (supported: 1, softmax)", arch, g)
		}
	}
	if r.err != nil {
		return c, r.err
	}
	var err error
	if c.RopeLinear, c.RopeYaRN, err = ropeScaling(f, arch); err != nil {
		return c, err
	}
	if c.RopeYaRN != nil {
		if !yarnArchs[arch] {
			return c, fmt.Errorf("load: %s: RoPE scaling \"yarn\" is not supported for this architecture (supported: gpt-oss, llama, qwen2, qwen2moe, qwen3, qwen3moe, granite, granitemoe)", arch)
		}
		if c.RopeDim != c.HeadDim {
			return c, fmt.Errorf("load: %s: RoPE scaling \"yarn\" with %d of %d head dimensions rotated is not supported (its attention factor is applied to the whole head)", arch, c.RopeDim, c.HeadDim)
		}
	}
	if t, err := f.Tensor("token_embd.weight"); err == nil && len(t.Shape) == 2 {
		c.VocabSize = int(t.Shape[0])
	} else {
		return c, fmt.Errorf("load: tensor token_embd.weight: missing or not a matrix (needed for the vocabulary size)")
	}
	if n := r.int("vocab_size", 0); r.err == nil && n > 0 && n != c.VocabSize {
		return c, fmt.Errorf("load: metadata %s.vocab_size = %d, but token_embd.weight has %d rows", arch, n, c.VocabSize)
	} else if r.err != nil {
		return c, r.err
	}
	return c, c.check()
}

// maxExperts bounds expert_count (the largest open models have 256 or 384).
const maxExperts = 1024

func (c *Config) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("load: %s: "+format, append([]any{c.Arch}, args...)...)
	}
	switch {
	case c.Dim <= 0 || c.NumLayers <= 0 || c.NumHeads <= 0 || c.HiddenDim <= 0 || c.HeadDim <= 0:
		return bad("non-positive size (dim %d, layers %d, heads %d, ffn %d, head_dim %d)",
			c.Dim, c.NumLayers, c.NumHeads, c.HiddenDim, c.HeadDim)
	case c.NumKVHeads <= 0 || c.NumHeads%c.NumKVHeads != 0:
		return bad("head_count %d is not a multiple of head_count_kv %d", c.NumHeads, c.NumKVHeads)
	case c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return bad("rope.dimension_count %d must be even and ≤ head_dim %d", c.RopeDim, c.HeadDim)
	case c.NormEps <= 0:
		return bad("layer_norm_rms_epsilon %g must be positive", c.NormEps)
	case c.RopeBase <= 0:
		return bad("rope.freq_base %g must be positive", c.RopeBase)
	case c.SlidingWindow < 0:
		return bad("attention.sliding_window %d is negative", c.SlidingWindow)
	case c.Experts > maxExperts:
		return bad("expert_count %d is more than the %d supported", c.Experts, maxExperts)
	case c.Experts > 0 && (c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts):
		return bad("expert_used_count %d must be between 1 and expert_count %d", c.ExpertsUsed, c.Experts)
	case c.Experts > 0 && c.ExpertHiddenDim <= 0:
		return bad("expert_feed_forward_length %d must be positive", c.ExpertHiddenDim)
	}
	return nil
}

// metaReader reads "<arch>.<key>" values, keeping the first error.
type metaReader struct {
	f    *gguf.File
	arch string
	err  error
}

// int returns the key's value, def if the key is absent and def ≥ 0, or
// records a missing-key error if def < 0.
func (r *metaReader) int(key string, def int) int {
	if r.err != nil {
		return 0
	}
	full := r.arch + "." + key
	n, err := r.f.Meta.Int(full)
	switch {
	case errors.Is(err, gguf.ErrMissingKey) && def >= 0:
		return def
	case err != nil:
		r.err = fmt.Errorf("load: metadata %s: %w", full, err)
		return 0
	case n < 0 || n > 1<<31-1:
		r.err = fmt.Errorf("load: metadata %s = %d is out of range", full, n)
		return 0
	}
	return int(n)
}

func (r *metaReader) float(key string, def float32) float32 {
	if r.err != nil {
		return 0
	}
	full := r.arch + "." + key
	x, err := r.f.Meta.Float(full)
	switch {
	case errors.Is(err, gguf.ErrMissingKey) && def >= 0:
		return def
	case err != nil:
		r.err = fmt.Errorf("load: metadata %s: %w", full, err)
		return 0
	}
	return float32(x)
}

// Int reads an optional architecture key with a default, for architecture
// packages that need more than Config holds.
func Int(f *gguf.File, arch, key string, def int) (int, error) {
	r := metaReader{f: f, arch: arch}
	n := r.int(key, def)
	return n, r.err
}

// Float reads an optional architecture key with a default (≥ 0), as Int.
func Float(f *gguf.File, arch, key string, def float32) (float32, error) {
	r := metaReader{f: f, arch: arch}
	x := r.float(key, def)
	return x, r.err
}

// yarnArchs are the architectures whose attention applies YaRN's factor
// (Config.AttnScale).
var yarnArchs = map[string]bool{"gpt-oss": true, "llama": true, "qwen2": true, "qwen2moe": true, "qwen3": true, "qwen3moe": true, "granite": true, "granitemoe": true}

// ropeScaling reads <arch>.rope.scaling.*: linear scaling (positions
// divided by the factor) or YaRN; other types fail at load rather than
// run with wrong positions.
func ropeScaling(f *gguf.File, arch string) (float32, *YaRN, error) {
	key := arch + ".rope.scaling.type"
	typ, err := f.Meta.String(key)
	if errors.Is(err, gguf.ErrMissingKey) || (err == nil && (typ == "none" || typ == "")) {
		return 1, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("load: metadata %s: %w", key, err)
	}
	if typ == "longrope" && arch == "phi3" {
		return 1, nil, nil // factors come from tensors, see model/phi3
	}
	if typ != "linear" && typ != "yarn" {
		return 0, nil, fmt.Errorf("load: %s: RoPE scaling %q is not supported yet (supported: none, linear, yarn)", arch, typ)
	}
	r := metaReader{f: f, arch: arch}
	factor := r.float("rope.scaling.factor", 1)
	if r.err != nil {
		return 0, nil, r.err
	}
	if !(factor > 0) || math.IsInf(float64(factor), 0) {
		return 0, nil, fmt.Errorf("load: metadata %s.rope.scaling.factor = %g must be a positive number", arch, factor)
	}
	if typ == "linear" {
		return factor, nil, nil
	}
	if f.Meta.Has(arch + ".rope.scaling.yarn_log_multiplier") {
		return 0, nil, fmt.Errorf("load: %s: YaRN with rope.scaling.yarn_log_multiplier (DeepSeek's attention factor) is not supported", arch)
	}
	y := &YaRN{Factor: factor}
	y.OrigCtx = r.int("rope.scaling.original_context_length", -1)
	y.BetaFast = r.float("rope.scaling.yarn_beta_fast", 32)
	y.BetaSlow = r.float("rope.scaling.yarn_beta_slow", 1)
	y.AttnFactor = r.float("rope.scaling.attn_factor", 1)
	if r.err != nil {
		return 0, nil, r.err
	}
	if y.OrigCtx <= 0 || !(y.BetaFast > y.BetaSlow) || !(y.BetaSlow > 0) || !(y.AttnFactor > 0) {
		return 0, nil, fmt.Errorf("load: %s: YaRN parameters out of range (original context %d, beta fast %g, slow %g, attention factor %g)",
			arch, y.OrigCtx, y.BetaFast, y.BetaSlow, y.AttnFactor)
	}
	return 1, y, nil
}

// YaRN is RoPE scaling by YaRN (Peng et al. 2023, "YaRN: Efficient
// Context Window Extension of Large Language Models", arXiv:2309.00071):
// the rotation pairs whose wavelength fits many times in the original
// context keep their frequency, those it does not are interpolated (the
// frequency divided by Factor), a linear ramp between, and the attention
// logits grow by Mscale()² (each of q and k by Mscale).
type YaRN struct {
	Factor             float32 // rope.scaling.factor
	OrigCtx            int     // rope.scaling.original_context_length
	BetaFast, BetaSlow float32 // the ramp's ends in rotations (32 and 1 by default)
	AttnFactor         float32 // rope.scaling.attn_factor (1 by default)
}

// Mscale is the factor on q and k: AttnFactor·(1 + 0.1·ln Factor), 1 for
// no extension.
func (y *YaRN) Mscale() float64 {
	m := float64(y.AttnFactor)
	if y.Factor > 1 {
		m *= 1 + 0.1*math.Log(float64(y.Factor))
	}
	return m
}

// Divisors returns the divisor of each rotation pair's angle (ropeDim/2 of
// them) for RoPE with base: 1 for the pairs kept, Factor for the ones
// interpolated, between on the ramp.
func (y *YaRN) Divisors(ropeDim int, base float32) []float32 {
	// The pair index that turns n times over the original context:
	// ropeDim·ln(L/(2πn)) / (2 ln base).
	corr := func(n float32) float64 {
		return float64(ropeDim) * math.Log(float64(y.OrigCtx)/(float64(n)*2*math.Pi)) / (2 * math.Log(float64(base)))
	}
	lo := max(math.Floor(corr(y.BetaFast)), 0)
	hi := min(math.Ceil(corr(y.BetaSlow)), float64(ropeDim-1))
	if hi == lo {
		hi += 0.001
	}
	out := make([]float32, ropeDim/2)
	for i := range out {
		ramp := min(max((float64(i)-lo)/(hi-lo), 0), 1)
		keep := 1 - ramp // the share of the original frequency
		out[i] = float32(1 / (keep + (1-keep)/float64(y.Factor)))
	}
	return out
}

// AttnScale is the attention logits' scale: 1/√HeadDim, times YaRN's
// Mscale² when it applies.
func (c *Config) AttnScale() float32 {
	s := 1 / math.Sqrt(float64(c.HeadDim))
	if c.RopeYaRN != nil {
		m := c.RopeYaRN.Mscale()
		s *= m * m
	}
	return float32(s)
}

// RopeFactors returns the per-pair divisors of the RoPE angles: the
// file's frequency factors (rope_freqs.weight, Llama 3.1) times the linear
// scaling factor, or nil when neither applies.
func (c *Config) RopeFactors(file []float32) []float32 {
	if c.RopeYaRN != nil {
		out := c.RopeYaRN.Divisors(c.RopeDim, c.RopeBase)
		for i := range out {
			if file != nil {
				out[i] *= file[i]
			}
		}
		return out
	}
	if c.RopeLinear == 1 || c.RopeLinear == 0 {
		return file
	}
	out := make([]float32, c.RopeDim/2)
	for i := range out {
		out[i] = c.RopeLinear
		if file != nil {
			out[i] *= file[i]
		}
	}
	return out
}
