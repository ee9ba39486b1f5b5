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

// Synthetic returns a preset shape by name ("llama3-8b", "llama3-70b",
// "llama3.2-1b"), optionally with a format suffix (":Q8_0").
func Synthetic(spec string) (Llama, error) {
	name, format, _ := strings.Cut(spec, ":")
	presets := map[string]Llama{"llama3-8b": Llama3_8B, "llama3-70b": Llama3_70B, "llama3.2-1b": Llama32_1B}
	l, ok := presets[strings.ToLower(name)]
	if !ok {
		return Llama{}, fmt.Errorf("plan: unknown synthetic model %q (presets: llama3-8b, llama3-70b, llama3.2-1b)", name)
	}
	if format != "" {
		l.Format = strings.ToUpper(format)
	}
	if _, _, _, err := l.types(0); err != nil {
		return Llama{}, err
	}
	return l, nil
}

// moreBits is llama.cpp's use_more_bits(i, n): the blocks whose attn_v and
// ffn_down the _M presets keep at higher precision.
func moreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

// types returns the dtypes of token_embd, output, and a block's matrices
// (by role) in format f for block i.
func (l Llama) types(i int) (embd, out tensor.DType, role map[string]tensor.DType, err error) {
	all := func(t tensor.DType) map[string]tensor.DType {
		return map[string]tensor.DType{"attn_q": t, "attn_k": t, "attn_v": t, "attn_output": t, "ffn_gate": t, "ffn_up": t, "ffn_down": t}
	}
	switch l.Format {
	case "F16", "F32", "Q8_0", "BF16":
		t, _ := tensor.ParseDType(l.Format)
		return t, t, all(t), nil
	case "Q4_0":
		return tensor.Q4_0, tensor.Q6_K, all(tensor.Q4_0), nil
	case "Q4_K_M", "Q5_K_M":
		base := tensor.Q4_K
		if l.Format == "Q5_K_M" {
			base = tensor.Q5_K
		}
		r := all(base)
		if moreBits(i, l.Layers) {
			r["attn_v"], r["ffn_down"] = tensor.Q6_K, tensor.Q6_K
		}
		return base, tensor.Q6_K, r, nil
	}
	return 0, 0, nil, fmt.Errorf("plan: synthetic format %q (want F32, F16, BF16, Q8_0, Q5_K_M, Q4_K_M or Q4_0)", l.Format)
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

	if merr != nil {
		return fmt.Errorf("plan: synthetic header: %w", merr)
	}
	if l.Layers <= 0 || l.Dim <= 0 || l.NumHeads <= 0 || l.NumKVHeads <= 0 || l.HiddenDim <= 0 || l.VocabSize <= 0 || l.Dim%l.NumHeads != 0 {
		return fmt.Errorf("plan: synthetic header: bad shape %+v", l)
	}
	headDim := l.Dim / l.NumHeads
	qDim, kvDim := int64(l.Dim), int64(l.NumKVHeads*headDim)
	dim, hid := int64(l.Dim), int64(l.HiddenDim)
	embd, out, _, err := l.types(0)
	if err != nil {
		return err
	}
	ts := []gguf.WriteTensor{{Name: "token_embd.weight", Shape: []int64{int64(l.VocabSize), dim}, Type: embd}}
	for i := 0; i < l.Layers; i++ {
		_, _, r, _ := l.types(i)
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			gguf.WriteTensor{Name: p + "attn_norm.weight", Shape: []int64{dim}, Type: tensor.F32},
			gguf.WriteTensor{Name: p + "attn_q.weight", Shape: []int64{qDim, dim}, Type: r["attn_q"]},
			gguf.WriteTensor{Name: p + "attn_k.weight", Shape: []int64{kvDim, dim}, Type: r["attn_k"]},
			gguf.WriteTensor{Name: p + "attn_v.weight", Shape: []int64{kvDim, dim}, Type: r["attn_v"]},
			gguf.WriteTensor{Name: p + "attn_output.weight", Shape: []int64{dim, qDim}, Type: r["attn_output"]},
			gguf.WriteTensor{Name: p + "ffn_norm.weight", Shape: []int64{dim}, Type: tensor.F32},
			gguf.WriteTensor{Name: p + "ffn_gate.weight", Shape: []int64{hid, dim}, Type: r["ffn_gate"]},
			gguf.WriteTensor{Name: p + "ffn_up.weight", Shape: []int64{hid, dim}, Type: r["ffn_up"]},
			gguf.WriteTensor{Name: p + "ffn_down.weight", Shape: []int64{dim, hid}, Type: r["ffn_down"]},
		)
	}
	ts = append(ts, gguf.WriteTensor{Name: "output_norm.weight", Shape: []int64{dim}, Type: tensor.F32})
	if !l.Tied {
		ts = append(ts, gguf.WriteTensor{Name: "output.weight", Shape: []int64{int64(l.VocabSize), dim}, Type: out})
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
