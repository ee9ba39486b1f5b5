package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestLlamaBytes pins the llama files written before architectures were
// added (the benchmark models and the tests' expectations depend on
// them): Arch "" and "llama" write the same bytes.
func TestLlamaBytes(t *testing.T) {
	for _, tc := range []struct {
		preset, format, sha256 string
	}{
		{"tiny", "Q4_K_M", "85e23f96b665e81bb992de3f9dc7d16f824146aa50e094333f38208dbc552c6d"},
		{"tiny", "F32", "9ddf10f745a08e54f90a2dac07953ce70b08f1ba002c6525296e3bbafad9818a"},
		{"moe-tiny", "Q8_0", "0fbe8d3b2268d4f9321c4459eafb37b94b3b878dc67c2e0264297ff926e2cc03"},
	} {
		for _, arch := range []string{"", "llama"} {
			t.Run(tc.preset+"-"+tc.format+"-"+arch, func(t *testing.T) {
				c := Presets[tc.preset]
				c.Arch = arch
				h := sha256.New()
				if err := Write(context.Background(), h, Options{Config: c, Format: tc.format, Seed: 1}); err != nil {
					t.Fatal(err)
				}
				if got := hex.EncodeToString(h.Sum(nil)); got != tc.sha256 {
					t.Errorf("sha256 %s, want %s", got, tc.sha256)
				}
			})
		}
	}
}

// archCase is one architecture's expected file: tensors of block 0 that
// must and must not be there, and metadata values.
type archCase struct {
	arch, preset string
	has, hasNot  []string
	keys         map[string]any // int64, float64 or string
}

var archCases = []archCase{
	{"qwen2", "tiny", []string{"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias", "blk.0.ffn_gate.weight"},
		[]string{"output.weight", "blk.0.attn_q_norm.weight"},
		map[string]any{"qwen2.rope.freq_base": 1e6, "qwen2.attention.layer_norm_rms_epsilon": 1e-6, "qwen2.feed_forward_length": int64(512)}},
	{"qwen2moe", "moe-tiny", []string{"output.weight", "blk.0.attn_k.bias", "blk.0.ffn_gate_inp.weight", "blk.0.ffn_down_exps.weight",
		"blk.0.ffn_gate_inp_shexp.weight", "blk.0.ffn_gate_shexp.weight", "blk.0.ffn_up_shexp.weight", "blk.0.ffn_down_shexp.weight"},
		[]string{"blk.0.ffn_gate.weight"},
		map[string]any{"qwen2moe.expert_count": int64(4), "qwen2moe.expert_used_count": int64(2), "qwen2moe.expert_feed_forward_length": int64(256),
			"qwen2moe.expert_shared_feed_forward_length": int64(512), "qwen2moe.feed_forward_length": int64(512)}},
	{"qwen3", "tiny", []string{"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight"},
		[]string{"output.weight", "blk.0.attn_q.bias"},
		map[string]any{"qwen3.attention.key_length": int64(64), "qwen3.attention.value_length": int64(64)}},
	{"qwen3moe", "moe-tiny", []string{"output.weight", "blk.0.attn_k_norm.weight", "blk.0.ffn_up_exps.weight"},
		[]string{"blk.0.ffn_gate_inp_shexp.weight", "blk.0.attn_q.bias"},
		map[string]any{"qwen3moe.expert_feed_forward_length": int64(256), "qwen3moe.feed_forward_length": int64(512), "qwen3moe.expert_count": int64(4)}},
	{"gemma2", "tiny", []string{"blk.0.post_attention_norm.weight", "blk.0.post_ffw_norm.weight"},
		[]string{"output.weight", "blk.0.attn_q_norm.weight"},
		map[string]any{"gemma2.attn_logit_softcapping": 50.0, "gemma2.final_logit_softcapping": 30.0, "gemma2.attention.sliding_window": int64(8),
			"gemma2.attention.key_length": int64(64), "gemma2.rope.freq_base": 10000.0}},
	{"gemma3", "tiny", []string{"blk.0.post_attention_norm.weight", "blk.0.post_ffw_norm.weight", "blk.0.attn_q_norm.weight"},
		[]string{"output.weight", "gemma3.attn_logit_softcapping", "gemma3.final_logit_softcapping"},
		map[string]any{"gemma3.attention.sliding_window": int64(8), "gemma3.attention.sliding_window_pattern": int64(2),
			"gemma3.rope.freq_base": 1e6, "gemma3.rope.freq_base_swa": 10000.0}},
	{"granite", "tiny", []string{"blk.0.ffn_gate.weight"}, []string{"output.weight"},
		map[string]any{"granite.embedding_scale": 12.0, "granite.residual_scale": 0.22, "granite.attention.scale": 1.0 / 64, "granite.logit_scale": 8.0}},
	{"granitemoe", "moe-tiny", []string{"blk.0.ffn_gate_exps.weight"}, []string{"output.weight", "blk.0.ffn_gate_shexp.weight"},
		map[string]any{"granitemoe.logit_scale": 6.0, "granitemoe.feed_forward_length": int64(256), "granitemoe.expert_used_count": int64(2)}},
	{"phi3", "tiny", []string{"output.weight", "blk.0.attn_qkv.weight", "blk.0.ffn_up.weight"},
		[]string{"blk.0.attn_q.weight", "blk.0.ffn_gate.weight"},
		map[string]any{"phi3.rope.scaling.original_context_length": int64(256), "phi3.attention.sliding_window": int64(0)}},
	{"gpt-oss", "moe-tiny", []string{"output.weight", "blk.0.attn_q.bias", "blk.0.attn_output.bias", "blk.0.attn_sinks.weight",
		"blk.0.post_attention_norm.weight", "blk.0.ffn_gate_inp.bias", "blk.0.ffn_gate_exps.bias", "blk.0.ffn_up_exps.bias", "blk.0.ffn_down_exps.bias"},
		[]string{"blk.0.ffn_norm.weight", "blk.0.attn_q_norm.weight", "blk.0.ffn_gate_inp_shexp.weight"},
		map[string]any{"gpt-oss.attention.sliding_window": int64(8), "gpt-oss.expert_feed_forward_length": int64(256), "gpt-oss.rope.freq_base": 150000.0,
			"gpt-oss.attention.key_length": int64(64)}},
	{"llama", "moe-tiny", []string{"output.weight", "blk.0.ffn_gate_inp.weight"}, []string{"blk.0.ffn_gate_inp_shexp.weight"},
		map[string]any{"llama.expert_count": int64(4), "llama.feed_forward_length": int64(256)}},
}

// TestArchs writes every architecture and reads it back: the tensors of
// Tensors in order, the family's tensors and keys, F32 norms, biases and
// routers, and matrices (experts and fused ones too) in the format.
func TestArchs(t *testing.T) {
	for _, tc := range archCases {
		for _, format := range []string{"F32", "Q8_0", "Q4_K_M"} {
			t.Run(tc.arch+"-"+format, func(t *testing.T) {
				c := Presets[tc.preset]
				c.Arch = tc.arch
				o := Options{Config: c, Format: format, Seed: 1}
				f := writeTiny(t, o)
				want, err := o.Tensors()
				if err != nil {
					t.Fatal(err)
				}
				if len(f.Tensors) != len(want) {
					t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
				}
				var params int64
				for i, ti := range f.Tensors {
					w := want[i]
					if ti.Name != w.Name || ti.Type != w.Type || !equal(ti.Shape, w.Shape) {
						t.Errorf("tensor %d: %s %v %s, want %s %v %s", i, ti.Name, ti.Shape, ti.Type, w.Name, w.Shape, w.Type)
					}
					small := strings.Contains(ti.Name, "norm") || strings.HasSuffix(ti.Name, ".bias") || strings.Contains(ti.Name, "gate_inp") || strings.Contains(ti.Name, "sinks")
					if small != (ti.Type == tensor.F32) && format != "F32" {
						t.Errorf("%s is %s", ti.Name, ti.Type)
					}
					if format == "Q8_0" && strings.HasSuffix(ti.Name, "_exps.weight") && ti.Type != tensor.Q8_0 {
						t.Errorf("%s is %s, want Q8_0", ti.Name, ti.Type)
					}
					params += elements(ti.Shape)
				}
				if params != c.Params() {
					t.Errorf("%d weights in the file, Params says %d", params, c.Params())
				}
				if a, _ := f.Meta.Architecture(); a != tc.arch {
					t.Errorf("architecture %q", a)
				}
				for _, name := range tc.has {
					if !f.HasTensor(name) {
						t.Errorf("no tensor %s", name)
					}
				}
				for _, name := range tc.hasNot {
					if f.HasTensor(name) || f.Meta.Has(name) {
						t.Errorf("%s should not be there", name)
					}
				}
				checkKeys(t, f, tc.keys)
			})
		}
	}
}

func checkKeys(t *testing.T, f *gguf.File, keys map[string]any) {
	t.Helper()
	for k, want := range keys {
		switch want := want.(type) {
		case int64:
			if got, err := f.Meta.Int(k); err != nil || got != want {
				t.Errorf("%s = %d, %v; want %d", k, got, err, want)
			}
		case float64:
			if got, err := f.Meta.Float(k); err != nil || math.Abs(got-want) > math.Abs(want)*1e-6 {
				t.Errorf("%s = %v, %v; want %v", k, got, err, want)
			}
		case string:
			if got, err := f.Meta.String(k); err != nil || got != want {
				t.Errorf("%s = %q, %v; want %q", k, got, err, want)
			}
		}
	}
}

// TestTiedQuantization: a tied token embedding is also the output
// matrix, so llama-quantize gives it the output's type (Q6_K in a Q4_K_M
// file); phi3's fused attn_qkv takes attn_v's (Q6_K in the layers use_more_bits picks: the last of two).
func TestTiedQuantization(t *testing.T) {
	for _, tc := range []struct{ arch, name, want string }{
		{"qwen2", "token_embd.weight", "Q6_K"},
		{"llama", "token_embd.weight", "Q4_K"},
		{"phi3", "blk.0.attn_qkv.weight", "Q4_K"},
		{"phi3", "blk.1.attn_qkv.weight", "Q6_K"},
		{"phi3", "blk.0.ffn_up.weight", "Q4_K"},
	} {
		c := Presets["tiny"]
		c.Arch = tc.arch
		ts, err := Options{Config: c, Format: "Q4_K_M"}.Tensors()
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range ts {
			if ti.Name == tc.name && ti.Type.String() != tc.want {
				t.Errorf("%s %s is %s, want %s", tc.arch, tc.name, ti.Type, tc.want)
			}
		}
	}
}

// TestYaRN: the scaling keys on any architecture, the original context
// being the context over the factor (phi3's own original context key is
// then YaRN's).
func TestYaRN(t *testing.T) {
	for _, arch := range []string{"qwen2", "llama", "phi3"} {
		c := Presets["tiny"]
		c.Arch, c.YaRNFactor = arch, 4
		f := writeTiny(t, Options{Config: c, Format: "F32"})
		checkKeys(t, f, map[string]any{arch + ".rope.scaling.type": "yarn", arch + ".rope.scaling.factor": 4.0,
			arch + ".rope.scaling.original_context_length": int64(64), arch + ".context_length": int64(256)})
	}
	f := writeTiny(t, Options{Config: Presets["tiny"], Format: "F32"})
	if f.Meta.Has("llama.rope.scaling.type") {
		t.Error("scaling keys without YaRN")
	}
}

// TestWeightStd: matrices take WeightStd; norms keep 1 + N(0, Std²).
func TestWeightStd(t *testing.T) {
	f := writeTiny(t, Options{Config: Presets["tiny"], Format: "F32", WeightStd: 0.2})
	for name, want := range map[string]float64{"blk.0.ffn_up.weight": 0.2, "blk.0.attn_norm.weight": Std} {
		ti, err := f.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, elements(ti.Shape))
		if err := kernel.Dequantize(ti.Type, f.Data(ti), x); err != nil {
			t.Fatal(err)
		}
		var sum, sq float64
		for _, v := range x {
			sum += float64(v)
		}
		mean := sum / float64(len(x))
		for _, v := range x {
			sq += (float64(v) - mean) * (float64(v) - mean)
		}
		if std := math.Sqrt(sq / float64(len(x))); math.Abs(std-want) > 0.15*want {
			t.Errorf("%s: std %.4f, want %v", name, std, want)
		}
	}
}

func TestBadArch(t *testing.T) {
	with := func(preset string, edit func(*Config)) Config {
		c := Presets[preset]
		edit(&c)
		return c
	}
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"unknown", Options{Config: with("tiny", func(c *Config) { c.Arch = "mamba" }), Format: "F32"}, `architecture "mamba" is not supported`},
		{"dense with experts", Options{Config: with("moe-tiny", func(c *Config) { c.Arch = "qwen3" }), Format: "F32"}, "qwen3 is dense"},
		{"mixture without experts", Options{Config: with("tiny", func(c *Config) { c.Arch = "qwen2moe" }), Format: "F32"}, "qwen2moe is a mixture of experts"},
		{"yarn below 1", Options{Config: with("tiny", func(c *Config) { c.YaRNFactor = 0.5 }), Format: "F32"}, "YaRN factor 0.5"},
		{"negative window", Options{Config: with("tiny", func(c *Config) { c.SlidingWindow = -1 }), Format: "F32"}, "sliding window -1"},
		{"weight std", Options{Config: Presets["tiny"], Format: "F32", WeightStd: math.NaN()}, "weight std NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Write(context.Background(), &bytes.Buffer{}, tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestParamsArch counts qwen2moe's tiny mixture by hand: per layer the
// attention with its biases, the router, the experts, the shared expert
// and its gate, two norms; tied models have no output matrix.
func TestParamsArch(t *testing.T) {
	c := Presets["moe-tiny"]
	c.Arch = "qwen2moe"
	const d, kv, f, e, sh, v = 256, 128, 256, 4, 512, 512
	layer := 2*d*d + 2*d*kv + d + 2*kv + e*d + e*3*d*f + d + 3*d*sh + 2*d
	if got, want := c.Params(), int64(2*v*d+d+2*layer); got != want {
		t.Errorf("qwen2moe params = %d, want %d", got, want)
	}
	c = Presets["tiny"]
	c.Arch = "gemma2"
	if got, want := c.Params(), Presets["tiny"].Params()-512*256+2*2*256; got != want {
		t.Errorf("gemma2 params = %d, want %d (tied, two more norms a layer)", got, want)
	}
}

// TestMXFP4MoE: llama-quantize's MXFP4_MOE mix: the stacked experts MXFP4,
// every other matrix Q8_0, norms, biases and routers F32.
func TestMXFP4MoE(t *testing.T) {
	c := Presets["moe-tiny"]
	c.Arch = "gpt-oss"
	ts, err := Options{Config: c, Format: "MXFP4_MOE"}.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range ts {
		want := tensor.Q8_0
		switch {
		case strings.HasSuffix(tn.Name, "_exps.weight"):
			want = tensor.MXFP4
		case len(tn.Shape) == 1 || strings.HasSuffix(tn.Name, ".bias") || strings.HasSuffix(tn.Name, "ffn_gate_inp.weight"):
			want = tensor.F32
		}
		if tn.Type != want {
			t.Errorf("%s: %v, want %v", tn.Name, tn.Type, want)
		}
	}
}

// TestGPTOSS20B: the gpt-oss-20b preset has the model card's size (20.9B
// parameters) and writes its 64-wide heads over a 2880-wide embedding.
func TestGPTOSS20B(t *testing.T) {
	c := Presets["gpt-oss-20b"]
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if p := c.Params(); p < 20.8e9 || p > 21.0e9 {
		t.Errorf("%d parameters, want 20.9B", p)
	}
	keys := map[string]any{}
	for _, e := range c.archKeys() {
		keys[e.k] = e.v
	}
	if keys["attention.key_length"] != uint32(64) || keys["rope.scaling.factor"] != float32(32) ||
		keys["rope.scaling.original_context_length"] != uint32(4096) || keys["attention.sliding_window"] != uint32(128) {
		t.Errorf("keys %v", keys)
	}
	// A family without key_length keys of its own gets them when heads
	// are not dim/heads wide.
	l := Presets["tiny"]
	l.KeyLength = 32
	found := false
	for _, e := range l.archKeys() {
		found = found || e.k == "attention.key_length" && e.v == uint32(32)
	}
	if !found {
		t.Error("llama with key length 32: no attention.key_length")
	}
}
