package all

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/tensor"
)

// scaled returns F32 data times s.
func scaled(data []byte, s float32) []byte {
	out := make([]byte, len(data))
	for i := 0; i < len(data); i += 4 {
		binary.LittleEndian.PutUint32(out[i:], math.Float32bits(s*math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))))
	}
	return out
}

// qwen2MoEOf writes tiny-qwen2 (F32) as qwen2moe: 4 experts, used per
// token, each a copy of the dense network, a zero router (every expert
// equally likely), and a shared expert that is the dense network with its
// down matrix times sharedDown, gated by a zero vector (sigmoid 0.5).
func qwen2MoEOf(t *testing.T, src string, used int, sharedDown float32, sharedLen uint32) string {
	t.Helper()
	const experts = 4
	set := map[string]any{"qwen2moe.expert_count": uint32(experts), "qwen2moe.expert_used_count": uint32(used)}
	if sharedLen > 0 {
		set["qwen2moe.expert_shared_feed_forward_length"] = sharedLen
	}
	key := func(k string, v any) (string, any) {
		if rest, ok := strings.CutPrefix(k, "qwen2."); ok {
			k = "qwen2moe." + rest
		}
		if k == "general.architecture" {
			v = "qwen2moe"
		}
		return k, v
	}
	return shared.Rewrite(t, src, "qwen2moe", key, set, func(in []gguf.WriteTensor) []gguf.WriteTensor {
		var ts []gguf.WriteTensor
		for _, ti := range in {
			name := strings.TrimSuffix(ti.Name, ".weight")
			kind := name[strings.LastIndex(name, ".")+1:]
			if kind != "ffn_gate" && kind != "ffn_up" && kind != "ffn_down" {
				ts = append(ts, ti)
				continue
			}
			stack := make([]byte, 0, experts*len(ti.Data))
			for range experts {
				stack = append(stack, ti.Data...)
			}
			ts = append(ts, gguf.WriteTensor{Name: name + "_exps.weight", Shape: append([]int64{experts}, ti.Shape...), Type: ti.Type, Data: stack})
			sh := ti.Data
			if kind == "ffn_down" {
				sh = scaled(ti.Data, sharedDown)
			}
			ts = append(ts, gguf.WriteTensor{Name: name + "_shexp.weight", Shape: ti.Shape, Type: ti.Type, Data: sh})
			if kind == "ffn_gate" {
				dim := ti.Shape[1]
				blk := strings.TrimSuffix(name, "ffn_gate")
				ts = append(ts, gguf.WriteTensor{Name: blk + "ffn_gate_inp.weight", Shape: []int64{experts, dim}, Type: tensor.F32, Data: make([]byte, 4*experts*dim)},
					gguf.WriteTensor{Name: blk + "ffn_gate_inp_shexp.weight", Shape: []int64{dim}, Type: tensor.F32, Data: make([]byte, 4*dim)})
			}
		}
		return ts
	})
}

// TestQwen2MoE: Qwen2-MoE's mixture checked against qwen2's dense network.
// All four equally likely experts, copies of it, weigh 1 together, and a
// shared expert with a zero down matrix adds nothing: qwen2's logits. A
// shared expert that is the network itself, gated by sigmoid(0) = 1/2,
// adds half of it: qwen2 with its down matrices times 1.5. Two of the four
// weigh 1/2 together, as they are (not renormalized): logits that differ.
func TestQwen2MoE(t *testing.T) {
	man, dir := readManifest(t)
	seq := man.Sequence.IDs[:16]
	src := filepath.Join(dir, man.Models["tiny-qwen2-F32"].Model)
	dense := open(t, dir, man.Models["tiny-qwen2-F32"].Model)
	vocab := dense.Config().VocabSize
	opts := model.SessionOptions{CtxLen: 64, Batch: 32, Threads: 2, KVF32: true}
	logits := func(m model.Model) []float32 { return batchLogits(t, session(t, m, opts), seq, vocab) }
	want := logits(dense)
	down15 := openPath(t, shared.Rewrite(t, src, "down15", nil, nil, func(in []gguf.WriteTensor) []gguf.WriteTensor {
		for i := range in {
			if strings.HasSuffix(in[i].Name, ".ffn_down.weight") {
				in[i].Data = scaled(in[i].Data, 1.5)
			}
		}
		return in
	}))
	want15 := logits(down15)
	for _, tc := range []struct {
		name       string
		used       int
		sharedDown float32
		want       []float32 // nil: must differ from qwen2's
	}{
		{"all experts, no shared", 4, 0, want},
		{"all experts, shared half", 4, 1, want15},
		{"two experts as they are", 2, 0, nil},
	} {
		m := openPath(t, qwen2MoEOf(t, src, tc.used, tc.sharedDown, 512))
		if c := m.Config(); c.Experts != 4 || !c.ExpertProbs || c.ExpertSharedHiddenDim != dense.Config().HiddenDim {
			t.Fatalf("%s: config %+v", tc.name, c)
		}
		got := logits(m)
		if tc.want == nil {
			var d float64
			for i := range got {
				d = max(d, math.Abs(float64(got[i]-want[i])))
			}
			if d < 1e-3 {
				t.Errorf("%s: the logits moved by only %g", tc.name, d)
			}
			continue
		}
		for i := range seq {
			closeRows(t, tc.name, i, got[i*vocab:(i+1)*vocab], tc.want[i*vocab:(i+1)*vocab])
		}
	}
}

// TestQwen2MoEShared: a shared expert's tensors without its width in the
// metadata fail the load, rather than being left out.
func TestQwen2MoEShared(t *testing.T) {
	man, dir := readManifest(t)
	f, err := gguf.Open(qwen2MoEOf(t, filepath.Join(dir, man.Models["tiny-qwen2-F32"].Model), 2, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := model.Load(f); err == nil || !strings.Contains(err.Error(), "qwen2moe.expert_shared_feed_forward_length is missing") {
		t.Errorf("load: %v", err)
	}
}
