package plan

import (
	"fmt"
	"os"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Llama describes a llama-architecture model to write as a header-only
// (sparse) GGUF: the tensor directory is exact, the data reads as zeros.
// It lets the planner (and its tests and docs) work on real model sizes
// without the weights.
type Llama struct {
	Name       string
	Layers     int
	Dim        int
	HiddenDim  int
	NumHeads   int
	NumKVHeads int
	VocabSize  int
	CtxTrain   int
	Format     string // "F16", "Q8_0", "Q4_K_M", "Q4_0"
	Tied       bool   // no output.weight
	// Experts > 0: every feed-forward network is a mixture of that many
	// (Mixtral's layout: a router and stacked ffn_*_exps tensors),
	// ExpertsUsed per token.
	Experts, ExpertsUsed int
}

// Llama3_8B is Meta Llama 3 8B's shape (config.json of the release).
var Llama3_8B = Llama{Name: "Llama-3-8B (synthetic header)", Layers: 32, Dim: 4096, HiddenDim: 14336,
	NumHeads: 32, NumKVHeads: 8, VocabSize: 128256, CtxTrain: 8192, Format: "Q4_K_M"}

// Llama3_70B is Meta Llama 3 70B's shape.
var Llama3_70B = Llama{Name: "Llama-3-70B (synthetic header)", Layers: 80, Dim: 8192, HiddenDim: 28672,
	NumHeads: 64, NumKVHeads: 8, VocabSize: 128256, CtxTrain: 8192, Format: "Q4_K_M"}

// Llama32_1B is Meta Llama 3.2 1B's shape (tied embeddings).
var Llama32_1B = Llama{Name: "Llama-3.2-1B (synthetic header)", Layers: 16, Dim: 2048, HiddenDim: 8192,
	NumHeads: 32, NumKVHeads: 8, VocabSize: 128256, CtxTrain: 131072, Format: "Q4_K_M", Tied: true}

// Mixtral8x7B is Mistral AI's Mixtral 8x7B: Mistral 7B's body with 8
// experts per feed-forward network, 2 per token (46.7B parameters, 12.9B
// per token).
var Mixtral8x7B = Llama{Name: "Mixtral-8x7B (synthetic header)", Layers: 32, Dim: 4096, HiddenDim: 14336,
	NumHeads: 32, NumKVHeads: 8, VocabSize: 32000, CtxTrain: 32768, Format: "Q4_K_M", Experts: 8, ExpertsUsed: 2}

// Synthetic returns a preset shape by name ("llama3-8b", "llama3-70b",
// "llama3.2-1b", "mixtral-8x7b"), optionally with a format suffix
// (":Q8_0").
func Synthetic(spec string) (Llama, error) {
	name, format, _ := strings.Cut(spec, ":")
	presets := map[string]Llama{"llama3-8b": Llama3_8B, "llama3-70b": Llama3_70B, "llama3.2-1b": Llama32_1B, "mixtral-8x7b": Mixtral8x7B}
	l, ok := presets[strings.ToLower(name)]
	if !ok {
		return Llama{}, fmt.Errorf("plan: unknown synthetic model %q (presets: llama3-8b, llama3-70b, llama3.2-1b, mixtral-8x7b)", name)
	}
	if format != "" {
		l.Format = strings.ToUpper(format)
	}
	if _, err := l.typer(); err != nil {
		return Llama{}, err
	}
	return l, nil
}

// typer returns the function that picks each matrix's dtype in l.Format:
// the llama-quantize presets of requant.go, or one type for all (Q4_0
// keeps the output in Q6_K, as llama-quantize does).
func (l Llama) typer() (func(m matrix) tensor.DType, error) {
	shape := &Shape{Layers: l.Layers, NumHeads: l.NumHeads, NumKVHeads: l.NumKVHeads}
	for _, q := range requantTargets {
		if q.name == l.Format {
			return func(m matrix) tensor.DType { return q.typ(m, shape) }, nil
		}
	}
	switch l.Format {
	case "F16", "F32", "BF16":
		t, _ := tensor.ParseDType(l.Format)
		return func(matrix) tensor.DType { return t }, nil
	case "Q4_0":
		return func(m matrix) tensor.DType {
			if m.layer == -2 {
				return tensor.Q6_K
			}
			return tensor.Q4_0
		}, nil
	}
	return nil, fmt.Errorf("plan: synthetic format %q (want F32, F16, BF16, Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0, Q3_K_M or Q2_K)", l.Format)
}

// WriteHeader writes l as a sparse GGUF at path: header and directory,
// then a hole up to the full size.
func (l Llama) WriteHeader(path string) error {
	var meta gguf.Metadata
	var merr error
	set := func(k string, v any) {
		if err := meta.Set(k, v); err != nil && merr == nil {
			merr = err
		}
	}
	set("general.architecture", "llama")
	set("general.name", l.Name)
	set("llama.block_count", uint32(l.Layers))
	set("llama.embedding_length", uint32(l.Dim))
	set("llama.feed_forward_length", uint32(l.HiddenDim))
	set("llama.attention.head_count", uint32(l.NumHeads))
	set("llama.attention.head_count_kv", uint32(l.NumKVHeads))
	set("llama.context_length", uint32(l.CtxTrain))
	set("llama.rope.dimension_count", uint32(l.Dim/l.NumHeads))
	set("llama.attention.layer_norm_rms_epsilon", float32(1e-5))
	if l.Experts > 0 {
		set("llama.expert_count", uint32(l.Experts))
		set("llama.expert_used_count", uint32(l.ExpertsUsed))
	}

	if merr != nil {
		return fmt.Errorf("plan: synthetic header: %w", merr)
	}
	if l.Layers <= 0 || l.Dim <= 0 || l.NumHeads <= 0 || l.NumKVHeads <= 0 || l.HiddenDim <= 0 || l.VocabSize <= 0 || l.Dim%l.NumHeads != 0 {
		return fmt.Errorf("plan: synthetic header: bad shape %+v", l)
	}
	headDim := l.Dim / l.NumHeads
	qDim, kvDim := int64(l.Dim), int64(l.NumKVHeads*headDim)
	dim, hid := int64(l.Dim), int64(l.HiddenDim)
	typeOf, err := l.typer()
	if err != nil {
		return err
	}
	mat := func(name string, layer int, shape ...int64) gguf.WriteTensor {
		return gguf.WriteTensor{Name: name, Shape: shape, Type: typeOf(matrix{name: name, layer: layer})}
	}
	vec := func(name string) gguf.WriteTensor {
		return gguf.WriteTensor{Name: name, Shape: []int64{dim}, Type: tensor.F32}
	}
	ts := []gguf.WriteTensor{mat("token_embd.weight", -1, int64(l.VocabSize), dim)}
	for i := 0; i < l.Layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			vec(p+"attn_norm.weight"),
			mat(p+"attn_q.weight", i, qDim, dim),
			mat(p+"attn_k.weight", i, kvDim, dim),
			mat(p+"attn_v.weight", i, kvDim, dim),
			mat(p+"attn_output.weight", i, dim, qDim),
			vec(p+"ffn_norm.weight"),
		)
		if e := int64(l.Experts); e > 0 {
			ts = append(ts,
				gguf.WriteTensor{Name: p + "ffn_gate_inp.weight", Shape: []int64{e, dim}, Type: tensor.F32},
				mat(p+"ffn_gate_exps.weight", i, e, hid, dim),
				mat(p+"ffn_up_exps.weight", i, e, hid, dim),
				mat(p+"ffn_down_exps.weight", i, e, dim, hid))
			continue
		}
		ts = append(ts,
			mat(p+"ffn_gate.weight", i, hid, dim),
			mat(p+"ffn_up.weight", i, hid, dim),
			mat(p+"ffn_down.weight", i, dim, hid),
		)
	}
	ts = append(ts, vec("output_norm.weight"))
	if !l.Tied {
		ts = append(ts, mat("output.weight", -2, int64(l.VocabSize), dim))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	size, err := gguf.WriteHeader(f, &meta, ts)
	if err == nil {
		err = f.Truncate(size)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("plan: writing %s: %w", path, err)
	}
	return nil
}
