package qwen3

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/model/internal/fake"
)

// spec is a one-layer Qwen3 with head_dim (8) ≠ dim/heads (4), as the real
// Qwen3 models have.
func spec(scale map[string]float32) *fake.Spec {
	return &fake.Spec{
		Meta: map[string]any{
			"general.architecture":                   "qwen3",
			"qwen3.embedding_length":                 uint32(8),
			"qwen3.block_count":                      uint32(1),
			"qwen3.attention.head_count":             uint32(2),
			"qwen3.attention.head_count_kv":          uint32(1),
			"qwen3.attention.key_length":             uint32(8),
			"qwen3.feed_forward_length":              uint32(16),
			"qwen3.context_length":                   uint32(32),
			"qwen3.rope.freq_base":                   float32(1e6),
			"qwen3.attention.layer_norm_rms_epsilon": float32(1e-6),
		},
		Shapes: map[string][]int64{
			"token_embd.weight":        {10, 8},
			"output_norm.weight":       {8},
			"blk.0.attn_norm.weight":   {8},
			"blk.0.attn_q.weight":      {16, 8},
			"blk.0.attn_k.weight":      {8, 8},
			"blk.0.attn_v.weight":      {8, 8},
			"blk.0.attn_q_norm.weight": {8},
			"blk.0.attn_k_norm.weight": {8},
			"blk.0.attn_output.weight": {8, 16},
			"blk.0.ffn_norm.weight":    {8},
			"blk.0.ffn_gate.weight":    {16, 8},
			"blk.0.ffn_up.weight":      {16, 8},
			"blk.0.ffn_down.weight":    {8, 16},
		},
		Scale: scale,
	}
}

func logits(t *testing.T, s *fake.Spec, ids []int) []float32 {
	t.Helper()
	f, err := s.File()
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Config(); c.HeadDim != 8 || c.QDim() != 16 {
		t.Fatalf("head_dim %d, qDim %d; want 8, 16 from key_length", c.HeadDim, c.QDim())
	}
	sess, err := m.NewSession(model.SessionOptions{CtxLen: 16, Exact: true, KVF32: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out := make([]float32, len(ids)*10)
	if err := sess.Forward(context.Background(), ids, 0, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// TestQKNorm checks the defining property of Qwen3's per-head Q/K norm:
// scaling the Q and K projections does not change the output (the norm
// removes the scale), while scaling V does.
func TestQKNorm(t *testing.T) {
	ids := []int{1, 4, 7, 2, 9}
	base := logits(t, spec(nil), ids)
	qk := logits(t, spec(map[string]float32{"blk.0.attn_q.weight": 3, "blk.0.attn_k.weight": 0.5}), ids)
	if d := maxDiff(base, qk); d > 1e-4 {
		t.Errorf("scaling Wq, Wk changed the logits by %g; the per-head norm should cancel it", d)
	}
	v := logits(t, spec(map[string]float32{"blk.0.attn_v.weight": 3}), ids)
	if d := maxDiff(base, v); d < 1e-3 {
		t.Errorf("scaling Wv changed the logits by only %g", d)
	}
	qn := logits(t, spec(map[string]float32{"blk.0.attn_q_norm.weight": 2}), ids)
	if d := maxDiff(base, qn); d < 1e-3 {
		t.Errorf("scaling attn_q_norm changed the logits by only %g: the norm weight is not applied", d)
	}
}

// moeSpec is spec as qwen3moe: experts feed-forward networks of the
// dense width (their stacked values from vals, or the fake's own when
// vals is nil), used per token, and a router.
func moeSpec(experts, used int, vals map[string][]float32) *fake.Spec {
	s := spec(nil)
	meta := map[string]any{}
	for k, v := range s.Meta {
		meta[strings.Replace(k, "qwen3.", "qwen3moe.", 1)] = v
	}
	meta["general.architecture"] = "qwen3moe"
	meta["qwen3moe.expert_count"] = uint32(experts)
	meta["qwen3moe.expert_used_count"] = uint32(used)
	meta["qwen3moe.expert_feed_forward_length"] = uint32(16)
	s.Meta = meta
	for _, k := range []string{"ffn_gate", "ffn_up", "ffn_down"} {
		shape := s.Shapes["blk.0."+k+".weight"]
		delete(s.Shapes, "blk.0."+k+".weight")
		s.Shapes["blk.0."+k+"_exps.weight"] = append([]int64{int64(experts)}, shape...)
	}
	s.Shapes["blk.0.ffn_gate_inp.weight"] = []int64{int64(experts), 8}
	s.Values = vals
	return s
}

// TestMoE: qwen3moe whose experts are all qwen3's dense network gives the
// dense logits (the router's weights sum to 1), whichever experts each
// token takes; with distinct experts, it does not.
func TestMoE(t *testing.T) {
	ids := []int{1, 4, 7, 2, 9, 3}
	dense, err := spec(nil).File()
	if err != nil {
		t.Fatal(err)
	}
	const experts = 4
	vals := map[string][]float32{}
	for _, k := range []string{"ffn_gate", "ffn_up", "ffn_down"} {
		ti, err := dense.Tensor("blk.0." + k + ".weight")
		if err != nil {
			t.Fatal(err)
		}
		data := dense.Data(ti)
		var one []float32
		for i := 0; i < len(data); i += 4 {
			one = append(one, math.Float32frombits(binary.LittleEndian.Uint32(data[i:])))
		}
		for range experts {
			vals["blk.0."+k+"_exps.weight"] = append(vals["blk.0."+k+"_exps.weight"], one...)
		}
	}
	base := logits(t, spec(nil), ids)
	for _, used := range []int{1, 2, 4} {
		if d := maxDiff(base, logits(t, moeSpec(experts, used, vals), ids)); d > 1e-5 {
			t.Errorf("%d of %d experts, all the dense network: logits differ by %g", used, experts, d)
		}
	}
	if d := maxDiff(base, logits(t, moeSpec(experts, 2, nil), ids)); d < 1e-3 {
		t.Errorf("distinct experts changed the logits by only %g", d)
	}
}
