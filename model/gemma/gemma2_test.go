package gemma

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/model/internal/fake"
)

// spec2 is a small Gemma 2: head_dim 8 ≠ dim/heads, a window of 3,
// attention scores capped at 2 and logits at 5; the query weights are
// scaled so that the scores reach past the cap.
func spec2(layers int, meta map[string]any) *fake.Spec {
	s := &fake.Spec{
		Meta: map[string]any{
			"general.architecture":                    "gemma2",
			"gemma2.embedding_length":                 uint32(8),
			"gemma2.block_count":                      uint32(layers),
			"gemma2.attention.head_count":             uint32(2),
			"gemma2.attention.head_count_kv":          uint32(1),
			"gemma2.attention.key_length":             uint32(8),
			"gemma2.feed_forward_length":              uint32(16),
			"gemma2.context_length":                   uint32(32),
			"gemma2.rope.freq_base":                   float32(10000),
			"gemma2.attention.layer_norm_rms_epsilon": float32(1e-6),
			"gemma2.attention.sliding_window":         uint32(3),
			"gemma2.attn_logit_softcapping":           float32(2),
			"gemma2.final_logit_softcapping":          float32(5),
		},
		Shapes: map[string][]int64{"token_embd.weight": {10, 8}, "output_norm.weight": {8}},
		Scale:  map[string]float32{},
	}
	for k, v := range meta {
		if v == nil {
			delete(s.Meta, k)
		} else {
			s.Meta[k] = v
		}
	}
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		for name, shape := range map[string][]int64{
			"attn_norm.weight": {8}, "attn_q.weight": {16, 8}, "attn_k.weight": {8, 8}, "attn_v.weight": {8, 8},
			"attn_output.weight": {8, 16}, "post_attention_norm.weight": {8}, "ffn_norm.weight": {8},
			"ffn_gate.weight": {16, 8}, "ffn_up.weight": {16, 8}, "ffn_down.weight": {8, 16}, "post_ffw_norm.weight": {8},
		} {
			s.Shapes[p+name] = shape
		}
		s.Scale[p+"attn_q.weight"] = 12
		s.Scale[p+"attn_k.weight"] = 4
	}
	s.Scale["token_embd.weight"] = 5
	return s
}

// ref2 is Gemma 2's forward pass written out in float64 from the paper's
// description, over f's F32 weights: the logits of every position.
func ref2(t *testing.T, f *gguf.File, ids []int, layers int, attnCap, finalCap float64) [][]float64 {
	t.Helper()
	const dim, heads, kvHeads, hd, hid, vocab, window, eps = 8, 2, 1, 8, 16, 10, 3, 1e-6
	w := func(name string) []float64 {
		b, _, err := f.TensorData(name)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float64, len(b)/4)
		for i := range v {
			v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return v
	}
	mul := func(m []float64, x []float64) []float64 { // rows of len(x)
		out := make([]float64, len(m)/len(x))
		for r := range out {
			for c, xv := range x {
				out[r] += m[r*len(x)+c] * xv
			}
		}
		return out
	}
	norm := func(x, g []float64) []float64 {
		ss := 0.0
		for _, v := range x {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(len(x))+eps)
		out := make([]float64, len(x))
		for i := range x {
			out[i] = x[i] * s * g[i]
		}
		return out
	}
	rope := func(x []float64, n, pos int) { // NeoX: pairs (i, i+hd/2)
		for h := range n {
			for i := range hd / 2 {
				th := float64(pos) * math.Pow(10000, -2*float64(i)/hd)
				a, b := x[h*hd+i], x[h*hd+i+hd/2]
				x[h*hd+i], x[h*hd+i+hd/2] = a*math.Cos(th)-b*math.Sin(th), a*math.Sin(th)+b*math.Cos(th)
			}
		}
	}
	embd := w("token_embd.weight")
	keys := make([][][]float64, layers) // [layer][pos] k, v
	vals := make([][][]float64, layers)
	var logits [][]float64
	for pos, id := range ids {
		x := make([]float64, dim)
		for i := range x {
			x[i] = embd[id*dim+i] * math.Sqrt(dim)
		}
		for l := range layers {
			p := fmt.Sprintf("blk.%d.", l)
			xb := norm(x, w(p+"attn_norm.weight"))
			q, k, v := mul(w(p+"attn_q.weight"), xb), mul(w(p+"attn_k.weight"), xb), mul(w(p+"attn_v.weight"), xb)
			rope(q, heads, pos)
			rope(k, kvHeads, pos)
			keys[l], vals[l] = append(keys[l], k), append(vals[l], v)
			first := 0
			if l%2 == 0 { // even layers are local
				first = max(0, pos-window+1)
			}
			att := make([]float64, heads*hd)
			for h := range heads {
				var sc []float64
				mx := math.Inf(-1)
				for j := first; j <= pos; j++ {
					s := 0.0
					for d := range hd {
						s += q[h*hd+d] * keys[l][j][d]
					}
					s /= math.Sqrt(hd)
					s = attnCap * math.Tanh(s/attnCap)
					sc = append(sc, s)
					mx = max(mx, s)
				}
				sum := 0.0
				for i := range sc {
					sc[i] = math.Exp(sc[i] - mx)
					sum += sc[i]
				}
				for i, j := 0, first; j <= pos; i, j = i+1, j+1 {
					for d := range hd {
						att[h*hd+d] += sc[i] / sum * vals[l][j][d]
					}
				}
			}
			o := norm(mul(w(p+"attn_output.weight"), att), w(p+"post_attention_norm.weight"))
			for i := range x {
				x[i] += o[i]
			}
			xb = norm(x, w(p+"ffn_norm.weight"))
			g, u := mul(w(p+"ffn_gate.weight"), xb), mul(w(p+"ffn_up.weight"), xb)
			for i := range g {
				gv := g[i]
				g[i] = 0.5 * gv * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(gv+0.044715*gv*gv*gv))) * u[i]
			}
			d := norm(mul(w(p+"ffn_down.weight"), g), w(p+"post_ffw_norm.weight"))
			for i := range x {
				x[i] += d[i]
			}
		}
		lg := mul(embd, norm(x, w("output_norm.weight"))) // tied output
		for i := range lg {
			lg[i] = finalCap * math.Tanh(lg[i]/finalCap)
		}
		logits = append(logits, lg)
	}
	return logits
}

// TestGemma2Reference: the engine's logits of every position, in one batch
// and one token at a time, match the float64 reference above (local and
// global layers, the window, both soft-caps), and the caps matter.
func TestGemma2Reference(t *testing.T) {
	const layers = 3
	ids := []int{2, 5, 7, 1, 3, 8, 4, 6, 9, 0}
	f, err := spec2(layers, nil).File()
	if err != nil {
		t.Fatal(err)
	}
	want := ref2(t, f, ids, layers, 2, 5)
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	opts := model.SessionOptions{CtxLen: 16, Exact: true, KVF32: true}
	batch, err := m.NewSession(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Close()
	all := make([]float32, len(ids)*10)
	if err := batch.Forward(context.Background(), ids, 0, all); err != nil {
		t.Fatal(err)
	}
	one, err := m.NewSession(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	row := make([]float32, 10)
	for pos := range ids {
		if err := one.Forward(context.Background(), ids[pos:pos+1], pos, row); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			for name, got := range map[string]float32{"batch": all[pos*10+i], "one by one": row[i]} {
				if d := math.Abs(float64(got) - want[pos][i]); d > 2e-4 {
					t.Fatalf("position %d logit %d (%s): %g, reference %g", pos, i, name, got, want[pos][i])
				}
			}
		}
	}
	// Without the attention cap (or with odd layers local) the reference
	// moves well past the tolerance: the test would catch either mistake.
	for name, alt := range map[string][][]float64{
		"uncapped attention": ref2(t, f, ids, layers, 1e9, 5),
		"uncapped logits":    ref2(t, f, ids, layers, 2, 1e9),
	} {
		d := 0.0
		for pos := range ids {
			for i := range 10 {
				d = max(d, math.Abs(alt[pos][i]-want[pos][i]))
			}
		}
		if d < 1e-2 {
			t.Errorf("%s changes the reference by only %g", name, d)
		}
	}
}

func TestGemma2LoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta map[string]any
		want string
	}{
		{"no window", map[string]any{"gemma2.attention.sliding_window": nil}, "sliding_window is 0"},
		{"no heads", map[string]any{"gemma2.attention.head_count": nil}, "head_count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := spec2(2, tc.meta).File()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := model.Load(f); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
