package gemma

import (
	"context"
	"math"
	"testing"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/model/internal/fake"
)

// spec is a small Gemma 3 with head_dim 8 ≠ dim/heads, a window of 4 and
// the given number of layers and window pattern.
func spec(layers int, pattern int, scale map[string]float32) *fake.Spec {
	s := &fake.Spec{
		Meta: map[string]any{
			"general.architecture":                    "gemma3",
			"gemma3.embedding_length":                 uint32(8),
			"gemma3.block_count":                      uint32(layers),
			"gemma3.attention.head_count":             uint32(2),
			"gemma3.attention.head_count_kv":          uint32(1),
			"gemma3.attention.key_length":             uint32(8),
			"gemma3.feed_forward_length":              uint32(16),
			"gemma3.context_length":                   uint32(32),
			"gemma3.rope.freq_base":                   float32(1e6),
			"gemma3.attention.layer_norm_rms_epsilon": float32(1e-6),
			"gemma3.attention.sliding_window":         uint32(4),
			"gemma3.attention.sliding_window_pattern": uint32(pattern),
		},
		Shapes: map[string][]int64{"token_embd.weight": {10, 8}, "output_norm.weight": {8}},
		Scale:  scale,
	}
	for l := range layers {
		p := "blk." + string(rune('0'+l)) + "."
		for name, shape := range map[string][]int64{
			"attn_norm.weight": {8}, "attn_q.weight": {16, 8}, "attn_k.weight": {8, 8}, "attn_v.weight": {8, 8},
			"attn_q_norm.weight": {8}, "attn_k_norm.weight": {8}, "attn_output.weight": {8, 16},
			"post_attention_norm.weight": {8}, "ffn_norm.weight": {8}, "ffn_gate.weight": {16, 8},
			"ffn_up.weight": {16, 8}, "ffn_down.weight": {8, 16}, "post_ffw_norm.weight": {8},
		} {
			s.Shapes[p+name] = shape
		}
	}
	return s
}

// lastLogits evaluates ids in one batch and returns the last row.
func lastLogits(t *testing.T, s *fake.Spec, ids []int) []float32 {
	t.Helper()
	f, err := s.File()
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := m.NewSession(model.SessionOptions{CtxLen: 16, Exact: true, KVF32: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out := make([]float32, 10)
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

func TestGemma3Properties(t *testing.T) {
	ids := []int{2, 5, 7, 1, 3, 8, 4, 6, 9, 0}
	changed := func(i, tok int) []int {
		c := append([]int(nil), ids...)
		c[i] = tok
		return c
	}
	tests := []struct {
		name     string
		a, b     *fake.Spec
		ia, ib   []int
		mustDiff bool
	}{
		// One local layer with a window of 4: the last position (9)
		// sees positions 6..9 only.
		{"outside window", spec(1, 6, nil), spec(1, 6, nil), ids, changed(2, 9), false},
		{"inside window", spec(1, 6, nil), spec(1, 6, nil), ids, changed(7, 9), true},
		// Pattern 1 makes every layer global: position 2 is seen.
		{"global layer", spec(1, 1, nil), spec(1, 1, nil), ids, changed(2, 9), true},
		{"qk-norm cancels q,k scale", spec(2, 2, nil), spec(2, 2, map[string]float32{"blk.0.attn_q.weight": 3, "blk.1.attn_k.weight": 0.25}), ids, ids, false},
		{"post-attention norm applied", spec(1, 6, nil), spec(1, 6, map[string]float32{"blk.0.post_attention_norm.weight": 2}), ids, ids, true},
		{"post-ffn norm applied", spec(1, 6, nil), spec(1, 6, map[string]float32{"blk.0.post_ffw_norm.weight": 2}), ids, ids, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := maxDiff(lastLogits(t, tc.a, tc.ia), lastLogits(t, tc.b, tc.ib))
			if tc.mustDiff && d < 1e-4 {
				t.Errorf("logits changed by only %g, want a change", d)
			}
			if !tc.mustDiff && d > 1e-4 {
				t.Errorf("logits changed by %g, want none", d)
			}
		})
	}
}

// TestIncremental checks that evaluating a sequence one token at a time
// through the KV cache (and through DecodeStep with another session)
// gives the logits of one batch, across local and global layers.
func TestIncremental(t *testing.T) {
	f, err := spec(3, 3, nil).File() // layers 0, 1 local (window 4), layer 2 global
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	ids := []int{2, 5, 7, 1, 3, 8, 4, 6, 9, 0}
	opts := model.SessionOptions{CtxLen: 16, Exact: true, KVF32: true}
	newSess := func() model.Session {
		s, err := m.NewSession(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	batch := make([]float32, len(ids)*10)
	if err := newSess().Forward(context.Background(), ids, 0, batch); err != nil {
		t.Fatal(err)
	}
	one, pair := newSess(), []model.Session{newSess(), newSess()}
	row := make([]float32, 10)
	rows := make([]float32, 20)
	for i, id := range ids {
		if err := one.Forward(context.Background(), []int{id}, i, row); err != nil {
			t.Fatal(err)
		}
		if err := model.DecodeStep(context.Background(), &c, pair, []int{id, id}, []int{i, i}, rows); err != nil {
			t.Fatal(err)
		}
		want := batch[i*10 : (i+1)*10]
		if d := maxDiff(row, want); d > 1e-4 {
			t.Errorf("position %d: one at a time differs from the batch by %g", i, d)
		}
		if d := max(maxDiff(rows[:10], want), maxDiff(rows[10:], want)); d > 1e-4 {
			t.Errorf("position %d: DecodeStep differs from the batch by %g", i, d)
		}
	}
}
