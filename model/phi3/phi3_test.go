package phi3

import (
	"context"
	"math"
	"testing"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/model/internal/fake"
)

// spec is a one-layer Phi-3 (dim 8, 2 heads of 4) trained to 64 positions
// from an original 32; factors, when given, become rope_factors_short and
// _long, and attn, when positive, rope.scaling.attn_factor.
func spec(short, long []float32, attn float32) *fake.Spec {
	s := &fake.Spec{
		Meta: map[string]any{
			"general.architecture":                      "phi3",
			"phi3.embedding_length":                     uint32(8),
			"phi3.block_count":                          uint32(1),
			"phi3.attention.head_count":                 uint32(2),
			"phi3.attention.head_count_kv":              uint32(1),
			"phi3.feed_forward_length":                  uint32(16),
			"phi3.context_length":                       uint32(64),
			"phi3.rope.scaling.original_context_length": uint32(32),
			"phi3.attention.layer_norm_rms_epsilon":     float32(1e-5),
		},
		Shapes: map[string][]int64{
			"token_embd.weight": {10, 8}, "output_norm.weight": {8}, "output.weight": {10, 8},
			"blk.0.attn_norm.weight": {8}, "blk.0.attn_qkv.weight": {16, 8}, "blk.0.attn_output.weight": {8, 8},
			"blk.0.ffn_norm.weight": {8}, "blk.0.ffn_up.weight": {32, 8}, "blk.0.ffn_down.weight": {8, 16},
		},
		Values: map[string][]float32{},
	}
	if short != nil {
		s.Shapes["rope_factors_short.weight"] = []int64{2}
		s.Shapes["rope_factors_long.weight"] = []int64{2}
		s.Values["rope_factors_short.weight"] = short
		s.Values["rope_factors_long.weight"] = long
	}
	if attn > 0 {
		s.Meta["phi3.rope.scaling.attn_factor"] = attn
	}
	return s
}

func logits(t *testing.T, s *fake.Spec, ctxLen int) []float32 {
	t.Helper()
	f, err := s.File()
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := m.NewSession(model.SessionOptions{CtxLen: ctxLen, Exact: true, KVF32: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ids := []int{1, 4, 7, 2, 9, 3, 5}
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

// TestLongRoPE checks which factors a session uses and that the attention
// factor reaches the scores.
func TestLongRoPE(t *testing.T) {
	one, two := []float32{1, 1}, []float32{2, 2}
	plain := logits(t, spec(nil, nil, 0), 16)
	tests := []struct {
		name     string
		s        *fake.Spec
		ctxLen   int
		mustDiff bool
	}{
		{"unit factors, attn 1", spec(one, one, 1), 16, false},
		{"short factors within the original context", spec(one, two, 1), 16, false},
		{"long factors beyond it", spec(one, two, 1), 64, true},
		{"attention factor", spec(one, one, 2), 16, true},
		{"default attention factor √(1+ln2/ln32)", spec(one, one, 0), 16, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := maxDiff(plain, logits(t, tc.s, tc.ctxLen))
			if tc.mustDiff && d < 1e-4 {
				t.Errorf("logits changed by only %g, want a change", d)
			}
			if !tc.mustDiff && d > 1e-5 {
				t.Errorf("logits changed by %g, want none", d)
			}
		})
	}
	// The attention factor a multiplies q and k: it is the same as scaling
	// the query rows of attn_qkv by a² (q·k grows by a²).
	f, _ := spec(nil, nil, 0).File()
	m, _ := model.Load(f)
	if got := m.(*model.Transformer).Arch.RotatedScale; got != 1 {
		t.Errorf("plain model attention factor %g, want 1", got)
	}
	f, _ = spec(one, one, 0).File()
	m, _ = model.Load(f)
	if got, want := m.(*model.Transformer).Arch.RotatedScale, float32(math.Sqrt(1+math.Log(2)/math.Log(32))); math.Abs(float64(got-want)) > 1e-6 {
		t.Errorf("default attention factor %g, want %g", got, want)
	}
}
