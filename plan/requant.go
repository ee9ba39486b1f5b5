package plan

import (
	"strings"

	"github.com/glassbox-ai/glassbox/tensor"
)

// quantMix describes a llama-quantize preset: the base type of the weight
// matrices and the types it promotes some of them to. Following
// llama.cpp's llama_tensor_get_type for the _M presets: the output matrix
// goes to Q6_K, and attn_v / ffn_down get more bits in about half the
// blocks. The estimate ignores the per-row fallbacks for rows that are not
// a multiple of 256, so it is approximate by a few percent.
type quantMix struct {
	name    string
	base    tensor.DType
	output  tensor.DType
	promote tensor.DType // for half of attn_v and ffn_down; 0: none
}

// requantTargets, from the largest to the smallest.
var requantTargets = []quantMix{
	{"Q8_0", tensor.Q8_0, tensor.Q8_0, 0},
	{"Q6_K", tensor.Q6_K, tensor.Q6_K, 0},
	{"Q5_K_M", tensor.Q5_K, tensor.Q6_K, tensor.Q6_K},
	{"Q4_K_M", tensor.Q4_K, tensor.Q6_K, tensor.Q6_K},
	{"Q3_K_M", tensor.Q3_K, tensor.Q6_K, tensor.Q4_K},
	{"Q2_K", tensor.Q2_K, tensor.Q6_K, tensor.Q3_K},
}

func bitsPerWeight(t tensor.DType) float64 {
	return 8 * float64(t.TypeSize()) / float64(t.BlockSize())
}

// requant returns the shape the model would have in format q.
func (s *Shape) requant(q quantMix) *Shape {
	r := *s
	r.LayerBytes = append([]int64(nil), s.LayerBytes...)
	r.weightTy = map[tensor.DType]int64{}
	r.quantBytes = 0
	r.mats = nil
	for _, m := range s.mats {
		bpw := bitsPerWeight(q.base)
		switch {
		case m.layer == -2:
			bpw = bitsPerWeight(q.output)
		case q.promote != 0 && (strings.Contains(m.name, "attn_v") || strings.Contains(m.name, "ffn_down")):
			bpw = (bitsPerWeight(q.base) + bitsPerWeight(q.promote)) / 2
		}
		size := int64(float64(m.elems) * bpw / 8)
		delta := size - m.size
		switch {
		case m.layer >= 0:
			r.LayerBytes[m.layer] += delta
		case m.layer == -1:
			r.EmbeddingBytes += delta
			if r.VocabSize > 0 {
				r.EmbeddingRow = r.EmbeddingBytes / int64(r.VocabSize)
			}
		case m.layer == -2:
			r.OutputBytes += delta
		default:
			r.OtherBytes += delta
		}
		r.weightTy[q.base] += size
		r.quantBytes += size
		r.mats = append(r.mats, matrix{name: m.name, layer: m.layer, elems: m.elems, size: size, typ: q.base})
	}
	r.FileType = q.name
	r.FileBytes = r.HeaderSize + r.WeightBytes()
	return &r
}
