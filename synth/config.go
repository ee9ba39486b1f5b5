package synth

import (
	"fmt"
	"slices"
	"strings"
)

// Config is a llama model's shape and hyperparameters.
type Config struct {
	Name       string
	Dim        int // embedding width (dim)
	Layers     int
	NumHeads   int
	NumKVHeads int
	HiddenDim  int // FFN width
	VocabSize  int // used with the synthetic vocabulary; a VocabFrom file sets its own
	CtxLen     int // llama.context_length (the trained context)
	RopeBase   float32
	NormEps    float32
	// Experts > 0 makes every feed-forward network a mixture of Experts
	// SwiGLU networks of HiddenDim, ExpertsUsed per token (Mixtral's
	// layout: llama.expert_count, a router ffn_gate_inp and stacked
	// ffn_*_exps tensors).
	Experts     int
	ExpertsUsed int
}

// Presets are the shapes the benchmarks use (issue 5): "1b" is the
// Llama-3.2-1B body (1.1B parameters with a 32000 vocabulary), "134m" a
// GPT-2-small-sized llama, and "tiny" the shape of the shared tiny-llama
// test model (fast enough for unit tests).
var Presets = map[string]Config{
	"1b":   {Name: "synth-1.1B", Dim: 2048, Layers: 16, NumHeads: 32, NumKVHeads: 8, HiddenDim: 8192, VocabSize: 32000, CtxLen: 4096, RopeBase: 10000, NormEps: 1e-5},
	"134m": {Name: "synth-134M", Dim: 768, Layers: 12, NumHeads: 12, NumKVHeads: 12, HiddenDim: 2048, VocabSize: 32000, CtxLen: 4096, RopeBase: 10000, NormEps: 1e-5},
	"tiny": {Name: "synth-tiny", Dim: 256, Layers: 2, NumHeads: 4, NumKVHeads: 2, HiddenDim: 512, VocabSize: 512, CtxLen: 256, RopeBase: 10000, NormEps: 1e-5},
	// "moe-tiny" is tiny as a mixture of 4 experts, 2 per token (tests);
	// "moe" the 1b body with 8 experts of a quarter of its FFN width, 2
	// per token (Mixtral's ratio): 1.9B parameters, 0.66B per token.
	"moe-tiny": {Name: "synth-moe-tiny", Dim: 256, Layers: 2, NumHeads: 4, NumKVHeads: 2, HiddenDim: 256, VocabSize: 512, CtxLen: 256, RopeBase: 10000, NormEps: 1e-5,
		Experts: 4, ExpertsUsed: 2},
	"moe": {Name: "synth-moe-1.9B", Dim: 2048, Layers: 16, NumHeads: 32, NumKVHeads: 8, HiddenDim: 2048, VocabSize: 32000, CtxLen: 4096, RopeBase: 10000, NormEps: 1e-5,
		Experts: 8, ExpertsUsed: 2},
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

// HeadDim is Dim / NumHeads.
func (c Config) HeadDim() int { return c.Dim / c.NumHeads }

// Validate checks that the shape is a llama model ggml can hold.
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
		if c.Dim%c.NumHeads != 0 {
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
	if !(c.RopeBase > 0) || !(c.NormEps > 0) {
		bad = append(bad, fmt.Sprintf("rope base %v and norm eps %v must be positive", c.RopeBase, c.NormEps))
	}
	if len(bad) > 0 {
		return fmt.Errorf("synth: config %q: %s", c.Name, strings.Join(bad, "; "))
	}
	return nil
}

// Params returns the number of weights (embedding, blocks, output).
func (c Config) Params() int64 {
	d, kv, f, v := int64(c.Dim), int64(c.Dim/c.NumHeads*c.NumKVHeads), int64(c.HiddenDim), int64(c.VocabSize)
	ffn := 3 * d * f
	if c.Experts > 0 {
		ffn = int64(c.Experts) * (3*d*f + d) // each expert's three matrices and its router row
	}
	block := d*d*2 + 2*d*kv + ffn + 2*d
	return v*d*2 + d + int64(c.Layers)*block
}
