package synth

import (
	"fmt"
	"slices"
)

// A family is what one architecture adds to llama's file: tensors, the
// metadata keys its loaders read, and the values real models of the
// family carry for them. The facts come from llama.cpp (src/models/<arch>.cpp
// load_arch_hparams and load_arch_tensors; the converters in conversion/)
// and from glassbox's loaders (model/<arch>).
type family struct {
	ropeBase float32 // the usual <arch>.rope.freq_base (gemma3: of the global layers)
	normEps  float32 // the usual RMSNorm epsilon
	// tied: no output.weight, the token embedding is the output matrix
	// (Gemma, Granite 3, and the small Qwen2.5 and Qwen3 models).
	tied     bool
	moe      moeRule
	qkvBias  bool // attn_q/k/v.bias (Qwen2)
	qkNorm   bool // attn_q_norm, attn_k_norm: an RMSNorm of each query and key head (Qwen3, Gemma 3)
	postNorm bool // post_attention_norm, post_ffw_norm (Gemma)
	fused    bool // attn_qkv, and ffn_up holding the gate rows then the up rows (Phi-3)
	shared   bool // a shared expert beside the routed ones, gated by a sigmoid (Qwen2-MoE)
	// oss: gpt-oss's block: attn_output.bias, attn_sinks (a logit per
	// head), post_attention_norm as the experts' input norm (no
	// ffn_norm), and biases on the router and the stacked experts.
	oss bool
	// keys returns the family's own metadata keys (without the "<arch>."
	// prefix) for c.
	keys func(c Config) []entry
}

// moeRule says whether an architecture's feed-forward networks are
// dense, a mixture of experts, or either (llama: Mixtral).
type moeRule int

const (
	moeNever moeRule = iota
	moeMaybe
	moeAlways
)

// entry is one metadata key and value, in writing order.
type entry struct {
	k string
	v any
}

// The families' scalars, as their models' configs have them.
const (
	gemma2AttnSoftcap  = 50 // attn_logit_softcapping of Gemma 2 (all sizes)
	gemma2FinalSoftcap = 30 // final_logit_softcapping
	gemma2Window       = 4096
	gemma3Window       = 1024 // Gemma 3 4B, 12B, 27B (1B: 512)
	gemma3Pattern      = 6    // five local layers, then a global one
	gemma3LocalBase    = 10000
	// Granite 3.0/3.1: embedding_multiplier 12, residual_multiplier 0.22,
	// attention_multiplier 1/head_dim, logits_scaling 8 (2B dense) and 6
	// (1B-A400M mixture).
	graniteEmbedding = 12
	graniteResidual  = 0.22
	graniteLogit     = 8
	graniteMoELogit  = 6
	gptOSSWindow     = 128 // gpt-oss-20b and -120b: sliding_window 128 on even layers
)

var archs = map[string]family{
	"llama":    {ropeBase: 10000, normEps: 1e-5, moe: moeMaybe},
	"qwen2":    {ropeBase: 1e6, normEps: 1e-6, tied: true, qkvBias: true},
	"qwen2moe": {ropeBase: 1e6, normEps: 1e-6, moe: moeAlways, qkvBias: true, shared: true, keys: qwenMoEKeys},
	"qwen3":    {ropeBase: 1e6, normEps: 1e-6, tied: true, qkNorm: true, keys: headKeys},
	"qwen3moe": {ropeBase: 1e6, normEps: 1e-6, moe: moeAlways, qkNorm: true, keys: func(c Config) []entry {
		return append(headKeys(c), qwenMoEKeys(c)...)
	}},
	"gemma2": {ropeBase: 10000, normEps: 1e-6, tied: true, postNorm: true, keys: func(c Config) []entry {
		return append(headKeys(c),
			entry{"attention.sliding_window", uint32(c.window(gemma2Window))},
			entry{"attn_logit_softcapping", float32(gemma2AttnSoftcap)},
			entry{"final_logit_softcapping", float32(gemma2FinalSoftcap)})
	}},
	"gemma3": {ropeBase: 1e6, normEps: 1e-6, tied: true, qkNorm: true, postNorm: true, keys: func(c Config) []entry {
		pattern := c.SlidingWindowPattern
		if pattern == 0 {
			pattern = gemma3Pattern
		}
		return append(headKeys(c),
			entry{"attention.sliding_window", uint32(c.window(gemma3Window))},
			entry{"attention.sliding_window_pattern", uint32(pattern)},
			entry{"rope.freq_base_swa", float32(gemma3LocalBase)})
	}},
	// gpt-oss: rope_theta 150000, rms_norm_eps 1e-5, untied, every block
	// a mixture; released files also scale RoPE by YaRN (factor 32 over
	// 4096 positions: --yarn).
	"gpt-oss": {ropeBase: 150000, normEps: 1e-5, moe: moeAlways, qkvBias: true, oss: true, keys: func(c Config) []entry {
		return append(headKeys(c),
			entry{"expert_feed_forward_length", uint32(c.HiddenDim)},
			entry{"attention.sliding_window", uint32(c.window(gptOSSWindow))})
	}},
	"granite":    {ropeBase: 10000, normEps: 1e-5, tied: true, keys: graniteKeys(graniteLogit)},
	"granitemoe": {ropeBase: 10000, normEps: 1e-5, tied: true, moe: moeAlways, keys: graniteKeys(graniteMoELogit)},
	"phi3": {ropeBase: 10000, normEps: 1e-5, fused: true, keys: func(c Config) []entry {
		var e []entry
		if c.YaRNFactor == 0 { // else YaRN's original context
			e = append(e, entry{"rope.scaling.original_context_length", uint32(c.CtxLen)})
		}
		// 0, as the converter writes for Phi-4: llama.cpp runs Phi-3
		// without its window (llama.cpp PR 13676), glassbox with it.
		return append(e, entry{"attention.sliding_window", uint32(0)})
	}},
}

// Archs lists the architectures Write accepts, sorted.
func Archs() []string {
	names := make([]string, 0, len(archs))
	for n := range archs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func moeArchs() []string {
	var names []string
	for _, n := range Archs() {
		if archs[n].moe != moeNever {
			names = append(names, n)
		}
	}
	return names
}

// headKeys are the head sizes Qwen3's and Gemma's converters write
// (their heads need not be dim/heads wide; here they are).
func headKeys(c Config) []entry {
	return []entry{{"attention.key_length", uint32(c.HeadDim())}, {"attention.value_length", uint32(c.HeadDim())}}
}

// qwenMoEKeys: the expert width, which llama.cpp otherwise takes as
// feed_forward_length / expert_used_count, and Qwen2-MoE's shared expert.
func qwenMoEKeys(c Config) []entry {
	e := []entry{{"expert_feed_forward_length", uint32(c.HiddenDim)}}
	if c.arch() == "qwen2moe" { // the family with a shared expert (archs cannot be read while it is initialized)
		e = append(e, entry{"expert_shared_feed_forward_length", uint32(c.sharedHiddenDim())})
	}
	return e
}

func graniteKeys(logit float32) func(Config) []entry {
	return func(c Config) []entry {
		return []entry{
			{"embedding_scale", float32(graniteEmbedding)},
			{"residual_scale", float32(graniteResidual)},
			{"attention.scale", 1 / float32(c.HeadDim())},
			{"logit_scale", logit},
		}
	}
}

// arch is c.Arch, "llama" when empty.
func (c Config) arch() string {
	if c.Arch == "" {
		return "llama"
	}
	return c.Arch
}

func (c Config) family() family { return archs[c.arch()] }

// window is c.SlidingWindow, or def when 0.
func (c Config) window(def int) int {
	if c.SlidingWindow > 0 {
		return c.SlidingWindow
	}
	return def
}

func (c Config) ropeBase() float32 {
	if c.RopeBase > 0 {
		return c.RopeBase
	}
	return c.family().ropeBase
}

func (c Config) normEps() float32 {
	if c.NormEps > 0 {
		return c.NormEps
	}
	return c.family().normEps
}

// sharedHiddenDim is the width of qwen2moe's shared expert: the routed
// experts' width times the experts per token, as in Qwen1.5-MoE-A2.7B
// (1408·4 = 5632) and Qwen2-57B-A14B (2560·8 = 20480).
func (c Config) sharedHiddenDim() int { return c.HiddenDim * c.ExpertsUsed }

// ffnLength is <arch>.feed_forward_length: the dense width, or in a
// mixture the width llama.cpp reads for the experts (llama, granitemoe)
// or the one the family's configs state as intermediate_size (Qwen).
func (c Config) ffnLength() int {
	switch {
	case c.Experts == 0:
		return c.HiddenDim
	case c.arch() == "qwen2moe":
		return c.sharedHiddenDim()
	case c.arch() == "qwen3moe":
		return c.HiddenDim * c.ExpertsUsed // Qwen3-30B-A3B: 768·8 = 6144
	}
	return c.HiddenDim
}

// layout lists c's tensors in file order, without their dtypes. The
// roles name the llama-quantize category that picks a tensor's dtype:
// attn_qkv is in attn_v's, the shared expert's matrices in their routed
// counterparts', and a tied token embedding in the output's.
func (c Config) layout() []Tensor {
	a := c.family()
	hd := int64(c.HeadDim())
	d, q, kv, ff, v := int64(c.Dim), hd*int64(c.NumHeads), hd*int64(c.NumKVHeads), int64(c.HiddenDim), int64(c.VocabSize)
	var ts []Tensor
	add := func(name, role string, layer int, shape ...int64) {
		ts = append(ts, Tensor{Name: name, Shape: shape, role: role, layer: layer, index: uint64(len(ts))})
	}
	embd := "embd"
	if a.tied {
		embd = "output"
	}
	add("token_embd.weight", embd, -1, v, d)
	for i := 0; i < c.Layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		add(b+"attn_norm.weight", "norm", i, d)
		if a.fused {
			add(b+"attn_qkv.weight", "attn_v", i, q+2*kv, d)
		} else {
			add(b+"attn_q.weight", "attn_q", i, q, d)
			add(b+"attn_k.weight", "attn_k", i, kv, d)
			add(b+"attn_v.weight", "attn_v", i, kv, d)
		}
		if a.qkvBias {
			add(b+"attn_q.bias", "bias", i, q)
			add(b+"attn_k.bias", "bias", i, kv)
			add(b+"attn_v.bias", "bias", i, kv)
		}
		if a.qkNorm {
			add(b+"attn_q_norm.weight", "norm", i, hd)
			add(b+"attn_k_norm.weight", "norm", i, hd)
		}
		add(b+"attn_output.weight", "attn_output", i, d, q)
		if a.oss {
			add(b+"attn_output.bias", "bias", i, d)
			add(b+"attn_sinks.weight", "bias", i, int64(c.NumHeads))
		}
		if a.postNorm || a.oss {
			add(b+"post_attention_norm.weight", "norm", i, d)
		}
		if !a.oss {
			add(b+"ffn_norm.weight", "norm", i, d)
		}
		switch e := int64(c.Experts); {
		case e > 0:
			// The router stays F32, as llama-quantize leaves it; the
			// experts take the types of the dense matrices they replace.
			add(b+"ffn_gate_inp.weight", "router", i, e, d)
			add(b+"ffn_gate_exps.weight", "ffn_gate", i, e, ff, d)
			add(b+"ffn_up_exps.weight", "ffn_up", i, e, ff, d)
			add(b+"ffn_down_exps.weight", "ffn_down", i, e, d, ff)
			if a.oss {
				add(b+"ffn_gate_inp.bias", "bias", i, e)
				add(b+"ffn_gate_exps.bias", "bias", i, e, ff)
				add(b+"ffn_up_exps.bias", "bias", i, e, ff)
				add(b+"ffn_down_exps.bias", "bias", i, e, d)
			}
			if a.shared {
				sh := int64(c.sharedHiddenDim())
				add(b+"ffn_gate_inp_shexp.weight", "router", i, d)
				add(b+"ffn_gate_shexp.weight", "ffn_gate", i, sh, d)
				add(b+"ffn_up_shexp.weight", "ffn_up", i, sh, d)
				add(b+"ffn_down_shexp.weight", "ffn_down", i, d, sh)
			}
		case a.fused:
			add(b+"ffn_up.weight", "ffn_up", i, 2*ff, d)
			add(b+"ffn_down.weight", "ffn_down", i, d, ff)
		default:
			add(b+"ffn_gate.weight", "ffn_gate", i, ff, d)
			add(b+"ffn_up.weight", "ffn_up", i, ff, d)
			add(b+"ffn_down.weight", "ffn_down", i, d, ff)
		}
		if a.postNorm {
			add(b+"post_ffw_norm.weight", "norm", i, d)
		}
	}
	add("output_norm.weight", "norm", -1, d)
	if !a.tied {
		add("output.weight", "output", -1, v, d)
	}
	return ts
}

// archKeys are the "<arch>.*" keys after the common ones: the family's,
// the experts', and YaRN's.
func (c Config) archKeys() []entry {
	var e []entry
	if k := c.family().keys; k != nil {
		e = k(c)
	}
	if c.KeyLength > 0 && !slices.ContainsFunc(e, func(x entry) bool { return x.k == "attention.key_length" }) {
		e = append(e, headKeys(c)...) // heads not dim/heads wide, in a family that does not say so
	}
	if c.Experts > 0 {
		e = append(e, entry{"expert_count", uint32(c.Experts)}, entry{"expert_used_count", uint32(c.ExpertsUsed)})
	}
	if c.YaRNFactor > 0 {
		// As Qwen2.5's converted YaRN files: the type, the factor and
		// the context the model was trained with before extension.
		e = append(e, entry{"rope.scaling.type", "yarn"}, entry{"rope.scaling.factor", c.YaRNFactor},
			entry{"rope.scaling.original_context_length", uint32(float64(c.CtxLen) / float64(c.YaRNFactor))})
	}
	return e
}
