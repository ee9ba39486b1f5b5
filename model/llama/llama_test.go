package llama

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/tensor"
)

// tiny describes a synthetic llama file: dim 8, 2 heads of 4, 1 KV head,
// FFN 16, vocab 10, 1 layer, F32 weights of small deterministic values.
type tiny struct {
	meta     map[string]any
	shapes   map[string][]int64
	skip     string // tensor to leave out
	noOutput bool
}

func newTiny() *tiny {
	return &tiny{
		meta: map[string]any{
			"general.architecture":                   "llama",
			"llama.embedding_length":                 uint32(8),
			"llama.block_count":                      uint32(1),
			"llama.attention.head_count":             uint32(2),
			"llama.attention.head_count_kv":          uint32(1),
			"llama.feed_forward_length":              uint32(16),
			"llama.context_length":                   uint32(32),
			"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		},
		shapes: map[string][]int64{
			"token_embd.weight":        {10, 8},
			"output_norm.weight":       {8},
			"output.weight":            {10, 8},
			"blk.0.attn_norm.weight":   {8},
			"blk.0.attn_q.weight":      {8, 8},
			"blk.0.attn_k.weight":      {4, 8},
			"blk.0.attn_v.weight":      {4, 8},
			"blk.0.attn_output.weight": {8, 8},
			"blk.0.ffn_norm.weight":    {8},
			"blk.0.ffn_gate.weight":    {16, 8},
			"blk.0.ffn_up.weight":      {16, 8},
			"blk.0.ffn_down.weight":    {8, 16},
		},
	}
}

func (tn *tiny) file(t *testing.T) *gguf.File {
	t.Helper()
	var meta gguf.Metadata
	for k, v := range tn.meta {
		if err := meta.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	var ts []gguf.WriteTensor
	seed := 1
	for name, shape := range tn.shapes {
		if name == tn.skip || (tn.noOutput && name == "output.weight") {
			continue
		}
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		data := make([]byte, 4*n)
		for i := range n {
			seed = (seed*1103515245 + 12345) & 0x7fffffff
			v := float32(seed%2001-1000) / 5000
			if len(shape) == 1 {
				v += 1
			}
			putF32(data[4*i:], v)
		}
		ts = append(ts, gguf.WriteTensor{Name: name, Shape: shape, Type: tensor.F32, Data: data})
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, &meta, ts); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(*tiny)
		want   []string
	}{
		{"missing key", func(tn *tiny) { delete(tn.meta, "llama.embedding_length") }, []string{"load:", "llama.embedding_length"}},
		{"missing eps", func(tn *tiny) { delete(tn.meta, "llama.attention.layer_norm_rms_epsilon") }, []string{"layer_norm_rms_epsilon"}},
		{"bad gqa", func(tn *tiny) { tn.meta["llama.attention.head_count_kv"] = uint32(3) }, []string{"head_count 2", "head_count_kv 3"}},
		{"missing tensor", func(tn *tiny) { tn.skip = "blk.0.ffn_up.weight" }, []string{"load:", "blk.0.ffn_up.weight", "missing"}},
		{"wrong shape", func(tn *tiny) { tn.shapes["blk.0.attn_k.weight"] = []int64{8, 8} }, []string{"blk.0.attn_k.weight", "[8 8]", "want [4 8]"}},
		{"wrong vector", func(tn *tiny) { tn.shapes["output_norm.weight"] = []int64{7} }, []string{"output_norm.weight", "want [8]"}},
		{"unsupported", func(tn *tiny) { tn.meta["general.architecture"] = "mamba" }, []string{`"mamba" is not supported`, "llama"}},
		{"vocab mismatch", func(tn *tiny) { tn.meta["llama.vocab_size"] = uint32(11) }, []string{"vocab_size = 11", "10 rows"}},
		{"moe without used count", func(tn *tiny) { tn.meta["llama.expert_count"] = uint32(8) }, []string{"llama.expert_used_count", "not found"}},
		{"moe used > count", func(tn *tiny) {
			tn.meta["llama.expert_count"], tn.meta["llama.expert_used_count"] = uint32(8), uint32(9)
		}, []string{"expert_used_count 9 must be between 1 and expert_count 8"}},
		{"moe gating", func(tn *tiny) {
			tn.meta["llama.expert_count"], tn.meta["llama.expert_used_count"], tn.meta["llama.expert_gating_func"] = uint32(8), uint32(2), uint32(2)
		}, []string{"expert_gating_func 2 is not supported"}},
		{"moe without experts", func(tn *tiny) {
			tn.meta["llama.expert_count"], tn.meta["llama.expert_used_count"] = uint32(8), uint32(2)
		}, []string{"tensor blk.0.ffn_gate_inp.weight is missing"}},
		{"yarn without its original context", func(tn *tiny) { tn.meta["llama.rope.scaling.type"] = "yarn" }, []string{"llama.rope.scaling.original_context_length", "not found"}},
		{"yarn of DeepSeek", func(tn *tiny) {
			tn.meta["llama.rope.scaling.type"], tn.meta["llama.rope.scaling.original_context_length"] = "yarn", uint32(16)
			tn.meta["llama.rope.scaling.yarn_log_multiplier"] = float32(0.1)
		}, []string{"yarn_log_multiplier", "not supported"}},
		{"su", func(tn *tiny) { tn.meta["llama.rope.scaling.type"] = "su" }, []string{`RoPE scaling "su" is not supported yet (supported: none, linear, yarn)`}},
		{"bad factor", func(tn *tiny) {
			tn.meta["llama.rope.scaling.type"] = "linear"
			tn.meta["llama.rope.scaling.factor"] = float32(-2)
		}, []string{"rope.scaling.factor = -2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tn := newTiny()
			tc.change(tn)
			_, err := model.Load(tn.file(t))
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	var ue *model.UnsupportedError
	tn := newTiny()
	tn.meta["general.architecture"] = "mamba"
	if _, err := model.Load(tn.file(t)); !errors.As(err, &ue) || ue.Arch != "mamba" {
		t.Errorf("got %v, want *model.UnsupportedError", err)
	}
}

// TestForwardErrors checks the infer-stage errors of Forward.
func TestForwardErrors(t *testing.T) {
	m, err := model.Load(newTiny().file(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession(model.SessionOptions{CtxLen: 8, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logits := make([]float32, 10)
	tests := []struct {
		name   string
		tokens []int
		pos    int
		out    []float32
		want   string
	}{
		{"empty", nil, 0, logits, "no tokens"},
		{"over batch", []int{1, 2, 3, 4, 5}, 0, logits, "batch size is 4"},
		{"past context", []int{1, 2}, 7, logits, "positions 7..8 do not fit the context of 8"},
		{"bad id", []int{1, 10}, 0, logits, "token 10 (at position 1) is outside the vocabulary of 10"},
		{"bad logits", []int{1, 2}, 0, make([]float32, 15), "holds 15 floats, want 10 (last token) or 20"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Forward(context.Background(), tc.tokens, tc.pos, tc.out)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "infer: ") {
				t.Errorf("got %v, want an infer error containing %q", err, tc.want)
			}
		})
	}
}

// TestTiedAndBatchConsistency checks that a file without output.weight
// uses the embedding as output, and that one batch equals token-by-token
// evaluation (exact path, F32 cache) on a synthetic model.
func TestTiedAndBatchConsistency(t *testing.T) {
	for _, tied := range []bool{false, true} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			tn := newTiny()
			tn.noOutput = tied
			m, err := model.Load(tn.file(t))
			if err != nil {
				t.Fatal(err)
			}
			ids := []int{1, 5, 9, 0, 3, 3}
			opts := model.SessionOptions{CtxLen: 8, Exact: true, KVF32: true}
			a, _ := m.NewSession(opts)
			defer a.Close()
			batch := make([]float32, len(ids)*10)
			if err := a.Forward(context.Background(), ids, 0, batch); err != nil {
				t.Fatal(err)
			}
			b, _ := m.NewSession(opts)
			defer b.Close()
			one := make([]float32, 10)
			for i, id := range ids {
				if err := b.Forward(context.Background(), []int{id}, i, one); err != nil {
					t.Fatal(err)
				}
				for j := range one {
					if d := one[j] - batch[i*10+j]; d > 1e-5 || d < -1e-5 {
						t.Fatalf("position %d logit %d: one-by-one %g, batch %g", i, j, one[j], batch[i*10+j])
					}
				}
			}
		})
	}
}

// TestLinearRopeScaling checks that linear scaling reaches the rotation:
// the config carries the factor and the logits change.
func TestLinearRopeScaling(t *testing.T) {
	run := func(scaled bool) []float32 {
		tn := newTiny()
		if scaled {
			tn.meta["llama.rope.scaling.type"] = "linear"
			tn.meta["llama.rope.scaling.factor"] = float32(4)
		}
		m, err := model.Load(tn.file(t))
		if err != nil {
			t.Fatal(err)
		}
		if c := m.Config(); scaled && (c.RopeLinear != 4 || len(c.RopeFactors(nil)) != c.RopeDim/2) {
			t.Fatalf("config %+v: want linear factor 4", c)
		}
		s, _ := m.NewSession(model.SessionOptions{CtxLen: 8, Exact: true, KVF32: true})
		defer s.Close()
		out := make([]float32, 10)
		if err := s.Forward(context.Background(), []int{1, 2, 3, 4}, 0, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := run(false), run(true)
	diff := float32(0)
	for i := range a {
		diff = max(diff, a[i]-b[i], b[i]-a[i])
	}
	if diff < 1e-4 {
		t.Errorf("linear RoPE scaling changed the logits by only %g", diff)
	}
}

// FuzzLoad feeds hostile hyperparameters to the loader of a fixed set of
// tensors: loading must fail with an error or give a model whose forward
// pass runs, never panic.
func FuzzLoad(f *testing.F) {
	f.Add(uint32(8), uint32(1), uint32(2), uint32(1), uint32(16), uint32(4), uint32(4), int64(0))
	f.Add(uint32(8), uint32(1), uint32(4), uint32(2), uint32(16), uint32(2), uint32(2), int64(3))
	f.Add(uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), int64(-1))
	f.Fuzz(func(t *testing.T, dim, layers, heads, kvHeads, ffn, keyLen, ropeDim uint32, window int64) {
		tn := newTiny()
		tn.meta["llama.embedding_length"] = dim
		tn.meta["llama.block_count"] = layers % 4
		tn.meta["llama.attention.head_count"] = heads
		tn.meta["llama.attention.head_count_kv"] = kvHeads
		tn.meta["llama.feed_forward_length"] = ffn
		tn.meta["llama.attention.key_length"] = keyLen
		tn.meta["llama.rope.dimension_count"] = ropeDim
		tn.meta["llama.attention.sliding_window"] = window
		loadRuns(t, tn)
	})
}

// loadRuns is the fuzzers' check: tn fails to load with an error, or it
// loads and a forward pass runs.
func loadRuns(t *testing.T, tn *tiny) {
	m, err := model.Load(tn.file(t))
	if err != nil {
		return
	}
	s, err := m.NewSession(model.SessionOptions{CtxLen: 4})
	if err != nil {
		return
	}
	defer s.Close()
	out := make([]float32, m.Config().VocabSize)
	if err := s.Forward(context.Background(), []int{1, 2}, 0, out); err != nil {
		t.Fatalf("loaded %+v but Forward failed: %v", m.Config(), err)
	}
}

// FuzzLoadMoE feeds hostile expert counts to the loader of a fixed set of
// expert tensors (2 experts of 16): loading must fail with an error or
// give a model whose forward pass runs, never panic.
func FuzzLoadMoE(f *testing.F) {
	f.Add(uint32(2), uint32(1), uint32(16), uint32(1))
	f.Add(uint32(2), uint32(2), uint32(16), uint32(1))
	f.Add(uint32(0), uint32(5), uint32(0), uint32(2))
	f.Fuzz(func(t *testing.T, experts, used, ffn, gating uint32) {
		tn := newTiny()
		for _, k := range []string{"gate", "up", "down"} {
			shape := tn.shapes["blk.0.ffn_"+k+".weight"]
			delete(tn.shapes, "blk.0.ffn_"+k+".weight")
			tn.shapes["blk.0.ffn_"+k+"_exps.weight"] = append([]int64{2}, shape...)
		}
		tn.shapes["blk.0.ffn_gate_inp.weight"] = []int64{2, 8}
		tn.meta["llama.expert_count"] = experts
		tn.meta["llama.expert_used_count"] = used
		tn.meta["llama.feed_forward_length"] = ffn
		tn.meta["llama.expert_gating_func"] = gating
		loadRuns(t, tn)
	})
}

// TestStepProfile: an attached profile counts each matrix's weight bytes
// once per pass (however many rows the pass has, in either mode), times
// the matrices and attention, leaves the logits as they were, and counts
// nothing once detached.
func TestStepProfile(t *testing.T) {
	// q 8×8, k 4×8, v 4×8, o 8×8, gate and up 16×8, down 8×16, output 10×8, F32.
	const passBytes = 4 * (64 + 32 + 32 + 64 + 128 + 128 + 128 + 80)
	for _, exact := range []bool{false, true} {
		t.Run(fmt.Sprintf("exact=%v", exact), func(t *testing.T) {
			m, err := model.Load(newTiny().file(t))
			if err != nil {
				t.Fatal(err)
			}
			opts := model.SessionOptions{CtxLen: 8, Exact: exact}
			plain, _ := m.NewSession(opts)
			defer plain.Close()
			s, _ := m.NewSession(opts)
			defer s.Close()
			var p model.StepProfile
			s.(model.Profiler).Profile(&p)
			want, got := make([]float32, 10), make([]float32, 10)
			ctx := context.Background()
			for i, ids := range [][]int{{1, 5, 9}, {4}} {
				pos := 3 * i
				if err := plain.Forward(ctx, ids, pos, want); err != nil {
					t.Fatal(err)
				}
				if err := s.Forward(ctx, ids, pos, got); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("pass %d: profiled logits %v, want %v", i, got, want)
				}
				if p.MatrixBytes != int64(i+1)*passBytes {
					t.Fatalf("after pass %d: %d matrix bytes, want %d", i, p.MatrixBytes, (i+1)*passBytes)
				}
			}
			if p.Matrix <= 0 || p.Attention <= 0 {
				t.Fatalf("times not counted: %+v", p)
			}
			s.(model.Profiler).Profile(nil)
			before := p
			if err := s.Forward(ctx, []int{2}, 4, got); err != nil {
				t.Fatal(err)
			}
			if p != before {
				t.Fatalf("detached profile changed: %+v, was %+v", p, before)
			}
		})
	}
}
