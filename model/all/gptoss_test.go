package all

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/synth"
)

// synthGPTOSS writes synth's moe-tiny gpt-oss (weights of std 0.2, window
// 8, MXFP4 experts for format MXFP4_MOE) and returns its path. Its logits
// are checked against llama.cpp's in e2e/llamacpp.test.mjs.
func synthGPTOSS(t *testing.T, format string) string {
	t.Helper()
	c := synth.Presets["moe-tiny"]
	c.Arch = "gpt-oss"
	path := filepath.Join(t.TempDir(), "gpt-oss-"+format+".gguf")
	if err := synth.WriteFile(context.Background(), path, synth.Options{Config: c, Format: format, Seed: 1, WeightStd: 0.2}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGPTOSSSteps: a prompt evaluated in one batch and one token at a
// time through the KV cache give the same logits (sinks, the window of the
// even layers, biased experts), at F32 and with MXFP4 experts (that the
// window is applied: cmd/glassbox's TestSynthWindow).
func TestGPTOSSSteps(t *testing.T) {
	ids := []int{1, 5, 99, 200, 17, 300, 45, 2, 77, 123, 400, 8, 9, 10, 250, 251, 30, 31, 32, 33}
	for _, format := range []string{"F32", "MXFP4_MOE"} {
		m := openPath(t, synthGPTOSS(t, format))
		c := m.Config()
		if c.Arch != "gpt-oss" || c.SlidingWindow != 8 || c.Experts != 4 || c.ExpertsUsed != 2 {
			t.Fatalf("%s: config %+v", format, c)
		}
		vocab := c.VocabSize
		opts := model.SessionOptions{CtxLen: 64, Batch: 32, Threads: 2, KVF32: true}
		want := batchLogits(t, session(t, m, opts), ids, vocab)
		s := session(t, m, opts)
		row := make([]float32, vocab)
		for pos, id := range ids {
			if err := s.Forward(context.Background(), []int{id}, pos, row); err != nil {
				t.Fatal(err)
			}
			closeRows(t, format+" one by one", pos, row, want[pos*vocab:(pos+1)*vocab])
		}
	}
}

// TestGPTOSSLoadErrors: what gpt-oss cannot run without is named at load.
func TestGPTOSSLoadErrors(t *testing.T) {
	src := synthGPTOSS(t, "F32")
	for _, tc := range []struct {
		name string
		drop string // metadata key or tensor to leave out
		set  map[string]any
		want string
	}{
		{"no window", "gpt-oss.attention.sliding_window", nil, "gpt-oss.attention.sliding_window is missing"},
		{"dense", "gpt-oss.expert_count", nil, "gpt-oss.expert_count is missing"},
		{"no sinks", "blk.1.attn_sinks.weight", nil, "blk.1.attn_sinks.weight is missing"},
		{"no expert bias", "blk.0.ffn_down_exps.bias", nil, "blk.0.ffn_down_exps.bias is missing"},
		{"pattern", "", map[string]any{"gpt-oss.attention.sliding_window_pattern": int32(0)}, "sliding_window_pattern: want a period of at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := shared.Rewrite(t, src, "bad", func(k string, v any) (string, any) {
				if k == tc.drop {
					return "dropped." + k, v // out of the arch's keys
				}
				return k, v
			}, tc.set, func(ts []gguf.WriteTensor) []gguf.WriteTensor {
				var out []gguf.WriteTensor
				for _, w := range ts {
					if w.Name != tc.drop {
						out = append(out, w)
					}
				}
				return out
			})
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = model.Load(f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzGPTOSSConfig: whatever a gpt-oss file's hyperparameters say (window,
// its pattern, experts, key length, YaRN), loading it and running three
// tokens either works or fails with an error — never a panic or a hang.
func FuzzGPTOSSConfig(f *testing.F) {
	f.Add(int32(8), int32(2), uint32(4), uint32(2), uint32(64), float32(0))
	f.Add(int32(0), int32(0), uint32(4), uint32(5), uint32(64), float32(4))
	f.Add(int32(-3), int32(1), uint32(0), uint32(0), uint32(32), float32(-1))
	f.Add(int32(1<<30), int32(1<<20), uint32(1<<31), uint32(4), uint32(0), float32(1e30))
	c := synth.Presets["moe-tiny"]
	c.Arch = "gpt-oss"
	src := filepath.Join(f.TempDir(), "gpt-oss.gguf")
	if err := synth.WriteFile(context.Background(), src, synth.Options{Config: c, Format: "F32", Seed: 1}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, window, pattern int32, experts, used, keyLen uint32, yarn float32) {
		set := map[string]any{"gpt-oss.attention.sliding_window": window, "gpt-oss.attention.sliding_window_pattern": pattern,
			"gpt-oss.expert_count": experts, "gpt-oss.expert_used_count": used, "gpt-oss.attention.key_length": keyLen}
		if yarn != 0 {
			set["gpt-oss.rope.scaling.type"] = "yarn"
			set["gpt-oss.rope.scaling.factor"] = yarn
			set["gpt-oss.rope.scaling.original_context_length"] = uint32(64)
		}
		g, err := gguf.Open(shared.Rewrite(t, src, "fuzz", nil, set, nil))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		m, err := model.Load(g)
		if err != nil {
			return
		}
		s, err := m.NewSession(model.SessionOptions{CtxLen: 16, Batch: 4, Threads: 1})
		if err != nil {
			return
		}
		defer s.Close()
		logits := make([]float32, 3*m.Config().VocabSize)
		_ = s.Forward(context.Background(), []int{1, 2, 3}, 0, logits)
	})
}
