// Package modelinfo summarises a GGUF model from its header alone: the facts
// `glassbox show` prints (architecture, sizes, quantization mix, RoPE,
// tokenizer). Nothing here reads tensor data, so it works for vocab-only
// files and for architectures glassbox cannot run yet.
//
// Keys that a file lacks are left nil (omitted from JSON), never zero.
//
// Imports: gguf, tensor.
package modelinfo

import (
	"fmt"
	"sort"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Info is the summary. Its JSON field names are stable (documented in the
// README under `glassbox show --json`).
type Info struct {
	Path          string   `json:"path"`
	FileBytes     int64    `json:"file_bytes"`
	GGUFVersion   uint32   `json:"gguf_version"`
	Architecture  string   `json:"architecture"`
	Name          string   `json:"name,omitempty"`
	Supported     *bool    `json:"supported,omitempty"`
	SupportedArch []string `json:"supported_architectures,omitempty"`
	Parameters    int64    `json:"parameters"`
	TensorBytes   int64    `json:"tensor_bytes"`
	FileType      string   `json:"file_type,omitempty"`
	Quantization  []Quant  `json:"quantization"`
	MetadataKeys  int      `json:"metadata_keys"`

	ContextLength  *int64   `json:"context_length,omitempty"`
	EmbeddingDim   *int64   `json:"embedding_length,omitempty"`
	BlockCount     *int64   `json:"block_count,omitempty"`
	FeedForwardDim *int64   `json:"feed_forward_length,omitempty"`
	Experts        *int64   `json:"expert_count,omitempty"`      // a mixture of experts
	ExpertsUsed    *int64   `json:"expert_used_count,omitempty"` // of them, each token's
	ExpertFFDim    *int64   `json:"expert_feed_forward_length,omitempty"`
	HeadCount      *int64   `json:"head_count,omitempty"`
	HeadCountKV    *int64   `json:"head_count_kv,omitempty"`
	HeadDim        *int64   `json:"head_dim,omitempty"`
	NormEps        *float64 `json:"norm_eps,omitempty"`
	SlidingWindow  *int64   `json:"sliding_window,omitempty"`
	RoPE           *RoPE    `json:"rope,omitempty"`

	Tokenizer *Tokenizer `json:"tokenizer,omitempty"`
	Tensors   []Tensor   `json:"tensors,omitempty"`
}

// Quant is the share of one tensor type in the file.
type Quant struct {
	Type       string `json:"type"`
	Tensors    int    `json:"tensors"`
	Parameters int64  `json:"parameters"`
	Bytes      int64  `json:"bytes"`
}

// RoPE holds the rotary position embedding parameters.
type RoPE struct {
	DimensionCount *int64   `json:"dimension_count,omitempty"`
	FreqBase       float64  `json:"freq_base"`
	FreqBaseSet    bool     `json:"freq_base_in_file"`
	ScalingType    string   `json:"scaling_type,omitempty"`
	ScalingFactor  *float64 `json:"scaling_factor,omitempty"`
	OrigContext    *int64   `json:"original_context_length,omitempty"`
	FreqFactors    bool     `json:"freq_factors"`
}

// Tokenizer describes the vocabulary.
type Tokenizer struct {
	Model        string `json:"model"`
	Pre          string `json:"pre,omitempty"`
	VocabSize    int    `json:"vocab_size"`
	Merges       int    `json:"merges,omitempty"`
	BOS          *int64 `json:"bos_token_id,omitempty"`
	EOS          *int64 `json:"eos_token_id,omitempty"`
	AddBOS       *bool  `json:"add_bos_token,omitempty"`
	ChatTemplate bool   `json:"chat_template"`
}

// Tensor is one row of the tensor table.
type Tensor struct {
	Name   string  `json:"name"`
	Type   string  `json:"type"`
	Shape  []int64 `json:"shape"` // outermost first
	Bytes  int64   `json:"bytes"`
	Offset int64   `json:"offset"` // in the file
}

// fileTypes names llama.cpp's general.file_type values (enum llama_ftype).
var fileTypes = map[int64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}

// FileTypeName returns the name of a general.file_type value.
func FileTypeName(ft int64) string {
	if s, ok := fileTypes[ft]; ok {
		return s
	}
	return "unknown"
}

// Summarize reads the facts from f's header. withTensors adds the table.
func Summarize(f *gguf.File, withTensors bool) *Info {
	m := &f.Meta
	in := &Info{Path: f.Path, FileBytes: f.Size, GGUFVersion: f.Version, MetadataKeys: len(m.KVs)}
	in.Architecture, _ = m.String("general.architecture")
	in.Name, _ = m.String("general.name")
	if ft, err := m.Int("general.file_type"); err == nil {
		in.FileType = FileTypeName(ft)
	}
	arch := in.Architecture
	key := func(s string) string { return arch + "." + s }
	in.ContextLength = optInt(m, key("context_length"))
	in.EmbeddingDim = optInt(m, key("embedding_length"))
	in.BlockCount = optInt(m, key("block_count"))
	in.FeedForwardDim = optInt(m, key("feed_forward_length"))
	in.Experts = optInt(m, key("expert_count"))
	in.ExpertsUsed = optInt(m, key("expert_used_count"))
	in.ExpertFFDim = optInt(m, key("expert_feed_forward_length"))
	in.HeadCount = optInt(m, key("attention.head_count"))
	in.HeadCountKV = optInt(m, key("attention.head_count_kv"))
	in.SlidingWindow = optInt(m, key("attention.sliding_window"))
	in.HeadDim = optInt(m, key("attention.key_length"))
	if in.HeadDim == nil && in.EmbeddingDim != nil && in.HeadCount != nil && *in.HeadCount > 0 {
		hd := *in.EmbeddingDim / *in.HeadCount
		in.HeadDim = &hd
	}
	if in.NormEps = optFloat(m, key("attention.layer_norm_rms_epsilon")); in.NormEps == nil {
		in.NormEps = optFloat(m, key("attention.layer_norm_epsilon"))
	}
	if in.EmbeddingDim != nil {
		r := &RoPE{DimensionCount: optInt(m, key("rope.dimension_count")), FreqBase: 10000}
		if b := optFloat(m, key("rope.freq_base")); b != nil {
			r.FreqBase, r.FreqBaseSet = *b, true
		}
		r.ScalingType, _ = m.String(key("rope.scaling.type"))
		r.ScalingFactor = optFloat(m, key("rope.scaling.factor"))
		r.OrigContext = optInt(m, key("rope.scaling.original_context_length"))
		r.FreqFactors = f.HasTensor("rope_freqs.weight")
		in.RoPE = r
	}
	in.Tokenizer = tokenizerInfo(m)
	in.Quantization, in.Parameters, in.TensorBytes = quantMix(f)
	if withTensors {
		for i := range f.Tensors {
			t := &f.Tensors[i]
			in.Tensors = append(in.Tensors, Tensor{Name: t.Name, Type: t.Type.String(), Shape: t.Shape, Bytes: t.Size, Offset: f.DataOffset + t.Offset})
		}
	}
	return in
}

func tokenizerInfo(m *gguf.Metadata) *Tokenizer {
	model, err := m.String("tokenizer.ggml.model")
	if err != nil {
		return nil
	}
	tk := &Tokenizer{Model: model}
	tk.Pre, _ = m.String("tokenizer.ggml.pre")
	if v, ok := m.Lookup("tokenizer.ggml.tokens"); ok {
		tk.VocabSize = v.Len()
	}
	if v, ok := m.Lookup("tokenizer.ggml.merges"); ok {
		tk.Merges = v.Len()
	}
	tk.BOS = optInt(m, "tokenizer.ggml.bos_token_id")
	tk.EOS = optInt(m, "tokenizer.ggml.eos_token_id")
	if b, err := m.Bool("tokenizer.ggml.add_bos_token"); err == nil {
		tk.AddBOS = &b
	}
	tk.ChatTemplate = m.Has("tokenizer.chat_template")
	return tk
}

func quantMix(f *gguf.File) ([]Quant, int64, int64) {
	by := map[tensor.DType]*Quant{}
	var params, bytes int64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		q := by[t.Type]
		if q == nil {
			q = &Quant{Type: t.Type.String()}
			by[t.Type] = q
		}
		q.Tensors++
		q.Parameters += t.Elements()
		q.Bytes += t.Size
		params += t.Elements()
		bytes += t.Size
	}
	out := make([]Quant, 0, len(by))
	for _, q := range by {
		out = append(out, *q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
	return out, params, bytes
}

func optInt(m *gguf.Metadata, key string) *int64 {
	if n, err := m.Int(key); err == nil {
		return &n
	}
	return nil
}

func optFloat(m *gguf.Metadata, key string) *float64 {
	if x, err := m.Float(key); err == nil {
		return &x
	}
	return nil
}

// HumanCount formats a parameter count as Ollama reports parameter_size
// (293K, 134.1M, 1.1B); show and the server's model list share it.
func HumanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
