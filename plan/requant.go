package plan

import (
	"strings"

	"github.com/glassbox-ai/glassbox/tensor"
)

// quantMix is a llama-quantize preset: the dtype it gives each weight
// matrix. The rules follow llama.cpp's llama_tensor_get_type for these
// presets (output matrix to Q6_K; more bits for attn_v, ffn_down and
// attn_output by preset and layer); TestRequantMatchesLlamaQuantize checks
// them against the shared tiny-llama files. Fallbacks for rows that are not
// a multiple of 256 are ignored.
type quantMix struct {
	name string
	typ  func(m matrix, s *Shape) tensor.DType
}

// useMoreBits is llama.cpp's use_more_bits(i, n): the first and last
// eighth of the blocks and every third one in between.
func useMoreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

func role(name string) string {
	for _, r := range []string{"attn_v", "ffn_down", "attn_output"} {
		if strings.Contains(name, "."+r+".") || strings.Contains(name, "."+r+"_exps.") {
			return r
		}
	}
	return ""
}

// isRouter reports whether m is a mixture of experts' router, which
// llama-quantize leaves in F32.
func isRouter(m matrix) bool { return strings.Contains(m.name, ".ffn_gate_inp.") }

// uniform gives every matrix t.
func uniform(t tensor.DType) func(matrix, *Shape) tensor.DType {
	return func(matrix, *Shape) tensor.DType { return t }
}

// kM is the Q4_K_M / Q5_K_M rule: Q6_K for the output, and for attn_v and
// ffn_down in the use_more_bits blocks.
func kM(base tensor.DType) func(matrix, *Shape) tensor.DType {
	return func(m matrix, s *Shape) tensor.DType {
		switch r := role(m.name); {
		case m.layer == -2:
			return tensor.Q6_K
		case (r == "attn_v" || r == "ffn_down") && useMoreBits(m.layer, s.Layers):
			return tensor.Q6_K
		}
		return base
	}
}

func q3KM(m matrix, s *Shape) tensor.DType {
	switch role(m.name) {
	case "attn_v":
		if m.layer < 2 {
			return tensor.Q5_K
		}
		return tensor.Q4_K
	case "ffn_down":
		if m.layer < s.Layers/16 {
			return tensor.Q5_K
		}
		return tensor.Q4_K
	case "attn_output":
		return tensor.Q4_K
	}
	if m.layer == -2 {
		return tensor.Q6_K
	}
	return tensor.Q3_K
}

func q2K(m matrix, s *Shape) tensor.DType {
	switch role(m.name) {
	case "attn_v":
		if s.NumKVHeads > 0 && s.NumHeads/s.NumKVHeads >= 4 {
			return tensor.Q4_K
		}
		return tensor.Q3_K
	case "ffn_down", "attn_output":
		return tensor.Q3_K
	}
	if m.layer == -2 {
		return tensor.Q6_K
	}
	return tensor.Q2_K
}

// requantTargets, from the largest to the smallest.
var requantTargets = []quantMix{
	{"Q8_0", uniform(tensor.Q8_0)},
	{"Q6_K", uniform(tensor.Q6_K)},
	{"Q5_K_M", kM(tensor.Q5_K)},
	{"Q4_K_M", kM(tensor.Q4_K)},
	{"Q3_K_M", q3KM},
	{"Q2_K", q2K},
}

// requant returns the shape the model would have in format q.
func (s *Shape) requant(q quantMix) *Shape {
	r := *s
	r.LayerBytes = append([]int64(nil), s.LayerBytes...)
	if s.ExpertBytes != nil {
		r.ExpertBytes = append([]int64(nil), s.ExpertBytes...)
	}
	r.weightTy = map[tensor.DType]int64{}
	r.quantBytes = 0
	r.mats = nil
	for _, m := range s.mats {
		t := q.typ(m, s)
		if isRouter(m) {
			t = m.typ
		}
		size := m.elems / int64(t.BlockSize()) * int64(t.TypeSize())
		delta := size - m.size
		switch {
		case m.layer >= 0:
			r.LayerBytes[m.layer] += delta
			if m.stack > 0 {
				r.ExpertBytes[m.layer] += delta
			}
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
		r.weightTy[t] += size
		r.quantBytes += size
		r.mats = append(r.mats, matrix{name: m.name, layer: m.layer, elems: m.elems, rows: m.rows, size: size, typ: t, stack: m.stack})
	}
	r.FileType = q.name
	r.FileBytes = r.HeaderSize + r.WeightBytes()
	return &r
}
