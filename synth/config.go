package synth

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Config is a model's shape and hyperparameters.
type Config struct {
	Name string
	// Arch is the architecture written (general.architecture), one of
	// Archs; "" is "llama". Each writes the tensors and metadata keys of
	// its family (see arch.go).
	Arch       string
	Dim        int // embedding width (dim)
	Layers     int
	NumHeads   int
	NumKVHeads int
	// KeyLength is the width of a head when it is not Dim/NumHeads
	// (<arch>.attention.key_length; gpt-oss: 64 with dim 2880 and 64
	// heads); 0 means Dim/NumHeads.
	KeyLength int
	HiddenDim int // FFN width (an expert's in a mixture of experts)
	VocabSize int // used with the synthetic vocabulary; a VocabFrom file sets its own
	CtxLen    int // <arch>.context_length (the trained context)
	// RopeBase and NormEps are <arch>.rope.freq_base and the RMSNorm
	// epsilon; 0 means the family's usual value (llama: 10000 and 1e-5;
	// Qwen: 1e6 and 1e-6; gemma3's global layers 1e6).
	RopeBase float32
	NormEps  float32
	// Experts > 0 makes every feed-forward network a mixture of Experts
	// SwiGLU networks of HiddenDim, ExpertsUsed per token (Mixtral's
	// layout: <arch>.expert_count, a router ffn_gate_inp and stacked
	// ffn_*_exps tensors; qwen2moe adds a shared expert).
	Experts     int
	ExpertsUsed int
	// SlidingWindow is the window of gemma2's and gemma3's local layers
	// (the other architectures attend to the whole context); 0 means the
	// family's (4096 in Gemma 2, 1024 in Gemma 3).
	SlidingWindow int
	// SlidingWindowPattern: every SlidingWindowPattern-th gemma3 layer is
	// global, the others local; 0 means Gemma 3's 6.
	SlidingWindowPattern int
	// YaRNFactor > 1 writes YaRN RoPE scaling (Qwen2.5's long-context
	// layout): CtxLen is the extended context and CtxLen/YaRNFactor the
	// original one. 0: no scaling.
	YaRNFactor float32
}

// Presets are the shapes the benchmarks use (issue 5): "1b" is the
// Llama-3.2-1B body (1.1B parameters with a 32000 vocabulary), "134m" a
// GPT-2-small-sized llama, and "tiny" the shape of the shared tiny-llama
// test model (fast enough for unit tests), whose window of 8 positions
// and gemma3 pattern of 2 make a 32-token test see both kinds of layer.
var Presets = map[string]Config{
	"1b":   {Name: "synth-1.1B", Dim: 2048, Layers: 16, NumHeads: 32, NumKVHeads: 8, HiddenDim: 8192, VocabSize: 32000, CtxLen: 4096},
	"134m": {Name: "synth-134M", Dim: 768, Layers: 12, NumHeads: 12, NumKVHeads: 12, HiddenDim: 2048, VocabSize: 32000, CtxLen: 4096},
	"tiny": {Name: "synth-tiny", Dim: 256, Layers: 2, NumHeads: 4, NumKVHeads: 2, HiddenDim: 512, VocabSize: 512, CtxLen: 256,
		SlidingWindow: 8, SlidingWindowPattern: 2},
	// "moe-tiny" is tiny as a mixture of 4 experts, 2 per token (tests);
	// "moe" the 1b body with 8 experts of a quarter of its FFN width, 2
	// per token (Mixtral's ratio): 1.9B parameters, 0.66B per token.
	"moe-tiny": {Name: "synth-moe-tiny", Dim: 256, Layers: 2, NumHeads: 4, NumKVHeads: 2, HiddenDim: 256, VocabSize: 512, CtxLen: 256,
		Experts: 4, ExpertsUsed: 2, SlidingWindow: 8, SlidingWindowPattern: 2},
	"moe": {Name: "synth-moe-1.9B", Dim: 2048, Layers: 16, NumHeads: 32, NumKVHeads: 8, HiddenDim: 2048, VocabSize: 32000, CtxLen: 4096,
		Experts: 8, ExpertsUsed: 2},
	// "gpt-oss-20b" is gpt-oss-20b's shape (its config.json): 24 blocks of
	// 32 experts of width 2880, 4 per token, 64 query heads of 64 over 8
	// KV heads, a 201088-token vocabulary, 131072 positions by YaRN ×32
	// over 4096, a window of 128 on even layers. 20.9B parameters, 3.6B
	// per token; as MXFP4_MOE, a 13 GB file.
	"gpt-oss-20b": {Name: "synth-gpt-oss-20b", Arch: "gpt-oss", Dim: 2880, Layers: 24, NumHeads: 64, NumKVHeads: 8, KeyLength: 64,
		HiddenDim: 2880, VocabSize: 201088, CtxLen: 131072, Experts: 32, ExpertsUsed: 4, SlidingWindow: 128, YaRNFactor: 32},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// HeadDim is KeyLength, or Dim / NumHeads.
func (c Config) HeadDim() int {
	if c.KeyLength > 0 {
		return c.KeyLength
	}
	return c.Dim / c.NumHeads
}

// Validate checks that the shape is a model of its architecture that
// ggml can hold.
func (c Config) Validate() error {
	var bad []string
	pos := func(name string, v int) {
		if v <= 0 {
			bad = append(bad, fmt.Sprintf("%s = %d must be positive", name, v))
		}
	}
	pos("dim", c.Dim)
	pos("layers", c.Layers)
	pos("heads", c.NumHeads)
	pos("kv heads", c.NumKVHeads)
	pos("ffn", c.HiddenDim)
	pos("vocab", c.VocabSize)
	pos("context", c.CtxLen)
	if len(bad) == 0 {
		if c.KeyLength < 0 {
			bad = append(bad, fmt.Sprintf("key length %d is negative", c.KeyLength))
		} else if c.KeyLength == 0 && c.Dim%c.NumHeads != 0 {
			bad = append(bad, fmt.Sprintf("dim %d is not a multiple of heads %d", c.Dim, c.NumHeads))
		} else if c.HeadDim()%2 != 0 {
			bad = append(bad, fmt.Sprintf("head dim %d is odd (RoPE rotates pairs)", c.HeadDim()))
		}
		if c.NumHeads%c.NumKVHeads != 0 {
			bad = append(bad, fmt.Sprintf("heads %d is not a multiple of kv heads %d", c.NumHeads, c.NumKVHeads))
		}
	}
	if c.Experts < 0 || c.Experts > 0 && (c.ExpertsUsed <= 0 || c.ExpertsUsed > c.Experts) || c.Experts == 0 && c.ExpertsUsed != 0 {
		bad = append(bad, fmt.Sprintf("experts used %d must be between 1 and experts %d (or both 0: dense)", c.ExpertsUsed, c.Experts))
	}
	if !(c.RopeBase >= 0) || !(c.NormEps >= 0) || math.IsInf(float64(c.RopeBase), 0) {
		bad = append(bad, fmt.Sprintf("rope base %v and norm eps %v must be positive (or 0: the family's)", c.RopeBase, c.NormEps))
	}
	if c.SlidingWindow < 0 || c.SlidingWindowPattern < 0 {
		bad = append(bad, fmt.Sprintf("sliding window %d and pattern %d must be positive (or 0: the family's)", c.SlidingWindow, c.SlidingWindowPattern))
	}
	if c.YaRNFactor != 0 && !(c.YaRNFactor > 1 && float64(c.CtxLen)/float64(c.YaRNFactor) >= 1) {
		bad = append(bad, fmt.Sprintf("YaRN factor %v must be more than 1 and leave an original context of at least 1 (context %d)", c.YaRNFactor, c.CtxLen))
	}
	a, ok := archs[c.arch()]
	switch {
	case !ok:
		bad = append(bad, fmt.Sprintf("architecture %q is not supported (supported: %s)", c.Arch, strings.Join(Archs(), ", ")))
	case a.moe == moeNever && c.Experts > 0:
		bad = append(bad, fmt.Sprintf("%s is dense: %d experts need a mixture-of-experts architecture (%s)", c.arch(), c.Experts, strings.Join(moeArchs(), ", ")))
	case a.moe == moeAlways && c.Experts == 0:
		bad = append(bad, fmt.Sprintf("%s is a mixture of experts: set the experts (e.g. the moe-tiny or moe preset)", c.arch()))
	}
	if len(bad) > 0 {
		return fmt.Errorf("synth: config %q: %s", c.Name, strings.Join(bad, "; "))
	}
	return nil
}

// Params returns the number of weights (embedding, blocks, output).
func (c Config) Params() int64 {
	var n int64
	for _, t := range c.layout() {
		n += elements(t.Shape)
	}
	return n
}
