package synth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/glassbox-ai/glassbox/tensor"
)

// A format assigns a dtype to each tensor, as llama-quantize does for its
// file types (llama.cpp src/llama-quant.cpp, llama_tensor_get_type, with
// default settings: no importance matrix, no pure mode). Norms, biases
// and routers are F32 in every format. The other architectures' tensors
// take the type of llama-quantize's category for them: attn_qkv takes
// attn_v's, a shared expert's and the stacked experts' matrices those of
// the dense ones they stand for, and a token embedding tied to the output
// (no output.weight) the output's. For the quantized formats the output
// matrix is Q6_K (except Q8_0 and Q6_K files, where it is Q8_0 and Q6_K),
// and the mixes are (without llama-quantize's extra bits for models of
// exactly 8 experts: attn_k and attn_v Q8_0, attn_output Q5_K):
//
//	format  token_embd  attn_q/k, ffn_gate/up  attn_v          attn_output  ffn_down
//	Q4_0    Q4_0        Q4_0                   Q4_0            Q4_0         Q4_0   (likewise Q4_1, Q5_0, Q5_1)
//	Q8_0    Q8_0        Q8_0                   Q8_0            Q8_0         Q8_0
//	Q6_K    Q6_K        Q6_K                   Q6_K            Q6_K         Q6_K
//	Q5_K_M  Q5_K        Q5_K                   Q6_K if more*   Q5_K         Q6_K if more*
//	Q4_K_M  Q4_K        Q4_K                   Q6_K if more*   Q4_K         Q6_K if more*
//	Q3_K_M  Q3_K        Q3_K                   Q5_K (i<2),Q4_K Q4_K         Q5_K (i<n/16), Q4_K
//	Q2_K    Q2_K        Q2_K                   Q4_K if GQA≥4, else Q3_K     Q3_K  Q3_K
//
//	IQ4_NL  IQ4_NL      IQ4_NL                 IQ4_NL          IQ4_NL       IQ4_NL (likewise IQ4_XS)
//
//	MXFP4_MOE  Q8_0 everywhere but the stacked experts (*_exps), which are MXFP4
//
// The IQ4 rows are not llama-quantize's mixes (it also gives some tensors
// more bits, and quantizes with its own search): one type with the output
// in Q6_K, for benchmarks of the formats' kernels.
//
// more* is llama.cpp's use_more_bits(i, n): i < n/8 || i >= 7n/8 ||
// (i-n/8)%3 == 2 — 8 of 16 layers for the 1b preset, blocks 0, 1, 4, 7,
// 10, 13, 14, 15. This matches the shared tiny-llama files made with
// llama-quantize (see shared/models/README.md).
type format struct {
	ftype uint32 // general.file_type (enum llama_ftype)
	types func(c Config, role string, layer int) tensor.DType
}

// ftypeMXFP4MoE is llama-quantize's MXFP4_MOE: the stacked experts
// (*_exps.weight) are MXFP4 whatever their role, the other matrices Q8_0.
const ftypeMXFP4MoE = 38

func uniform(t tensor.DType) func(Config, string, int) tensor.DType {
	return func(Config, string, int) tensor.DType { return t }
}

// legacy is a Q4_0/Q4_1/Q5_0/Q5_1 (or IQ4) file: one type, output Q6_K.
func legacy(t tensor.DType) func(Config, string, int) tensor.DType {
	return func(_ Config, role string, _ int) tensor.DType {
		if role == "output" {
			return tensor.Q6_K
		}
		return t
	}
}

func moreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

func kMix(base tensor.DType) func(Config, string, int) tensor.DType {
	return func(c Config, role string, i int) tensor.DType {
		switch {
		case role == "output":
			return tensor.Q6_K
		case (role == "attn_v" || role == "ffn_down") && moreBits(i, c.Layers):
			return tensor.Q6_K
		}
		return base
	}
}

var formats = map[string]format{
	"F32":    {0, uniform(tensor.F32)},
	"F16":    {1, uniform(tensor.F16)},
	"BF16":   {32, uniform(tensor.BF16)},
	"Q8_0":   {7, uniform(tensor.Q8_0)},
	"Q4_0":   {2, legacy(tensor.Q4_0)},
	"Q4_1":   {3, legacy(tensor.Q4_1)},
	"Q5_0":   {8, legacy(tensor.Q5_0)},
	"Q5_1":   {9, legacy(tensor.Q5_1)},
	"Q6_K":   {18, uniform(tensor.Q6_K)},
	"IQ4_NL": {25, legacy(tensor.IQ4_NL)},
	"IQ4_XS": {30, legacy(tensor.IQ4_XS)},
	// gpt-oss's release format: MXFP4 experts, the rest Q8_0.
	"MXFP4_MOE": {ftypeMXFP4MoE, uniform(tensor.Q8_0)},
	"Q5_K_M":    {17, kMix(tensor.Q5_K)},
	"Q4_K_M":    {15, kMix(tensor.Q4_K)},
	"Q3_K_M": {12, func(c Config, role string, i int) tensor.DType {
		switch role {
		case "output":
			return tensor.Q6_K
		case "attn_v":
			if i < 2 {
				return tensor.Q5_K
			}
			return tensor.Q4_K
		case "attn_output":
			return tensor.Q4_K
		case "ffn_down":
			if i < c.Layers/16 {
				return tensor.Q5_K
			}
			return tensor.Q4_K
		}
		return tensor.Q3_K
	}},
	"Q2_K": {10, func(c Config, role string, _ int) tensor.DType {
		switch role {
		case "output":
			return tensor.Q6_K
		case "attn_v":
			if c.NumHeads/c.NumKVHeads >= 4 {
				return tensor.Q4_K
			}
			return tensor.Q3_K
		case "attn_output", "ffn_down":
			return tensor.Q3_K
		}
		return tensor.Q2_K
	}},
}

// Formats lists the weight formats Write accepts, sorted.
func Formats() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func lookupFormat(name string) (format, error) {
	f, ok := formats[name]
	if !ok {
		return format{}, fmt.Errorf("synth: weight format %q is not supported (supported: %s)", name, strings.Join(Formats(), ", "))
	}
	return f, nil
}
