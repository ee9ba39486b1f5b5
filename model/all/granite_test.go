package all

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
)

// relabel writes a copy of the llama file src as architecture arch (its
// llama.* keys renamed) with the keys of set added or replaced.
func relabel(t *testing.T, src, arch string, set map[string]any) string {
	t.Helper()
	return shared.Rewrite(t, src, arch, func(k string, v any) (string, any) {
		if rest, ok := strings.CutPrefix(k, "llama."); ok {
			k = arch + "." + rest
		}
		if k == "general.architecture" {
			v = arch
		}
		return k, v
	}, set, nil)
}

// TestGraniteAsLlama: Granite's multipliers where they are neutral give
// Llama's logits. Embedding and residual multipliers equal to each other
// scale the whole residual stream, which every RMSNorm undoes (with eps
// made negligible in both files), so a multiplier missing from the
// embeddings or from either residual add would show; the logit scale
// divides the logits; another attention scale changes them.
func TestGraniteAsLlama(t *testing.T) {
	man, dir := readManifest(t)
	seq := man.Sequence.IDs[:20]
	src := filepath.Join(dir, man.Models["tiny-llama-F32"].Model)
	tinyEps := map[string]any{"llama.attention.layer_norm_rms_epsilon": float32(1e-12)}
	ref := openPath(t, relabel(t, src, "llama", tinyEps))
	vocab := ref.Config().VocabSize
	opts := model.SessionOptions{CtxLen: 64, Batch: 32, Threads: 2, KVF32: true}
	want := batchLogits(t, session(t, ref, opts), seq, vocab)
	att := float32(1 / math.Sqrt(float64(ref.Config().HeadDim)))
	for _, tc := range []struct {
		name   string
		set    map[string]any
		divide float32 // want = llama's ÷ divide; 0: want them to differ
	}{
		{"defaults", map[string]any{}, 1},
		{"stream ×3", map[string]any{"granite.embedding_scale": float32(3), "granite.residual_scale": float32(3)}, 1},
		{"stream ×0.25", map[string]any{"granite.embedding_scale": float32(0.25), "granite.residual_scale": float32(0.25), "granite.attention.scale": att}, 1},
		{"logits ÷4", map[string]any{"granite.logit_scale": float32(4)}, 4},
		{"residual alone", map[string]any{"granite.residual_scale": float32(0.25)}, 0},
		{"attention scale", map[string]any{"granite.attention.scale": 2 * att}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := map[string]any{"granite.attention.layer_norm_rms_epsilon": float32(1e-12)}
			for k, v := range tc.set {
				set[k] = v
			}
			g := openPath(t, relabel(t, src, "granite", set))
			got := batchLogits(t, session(t, g, opts), seq, vocab)
			var d, m float64
			for i := range want {
				w := float64(want[i])
				if tc.divide != 0 {
					w /= float64(tc.divide)
				}
				d = max(d, math.Abs(float64(got[i])-w))
				m = max(m, math.Abs(w))
			}
			switch {
			case tc.divide != 0 && d > 1e-4*m:
				t.Errorf("max |Δ| %g of max |logit| %g", d, m)
			case tc.divide == 0 && d < 1e-2*m:
				t.Errorf("the multiplier changed the logits by only %g of %g", d, m)
			}
		})
	}
}

// TestGraniteMoE: granitemoe whose experts are all granite's network
// gives granite's logits; the loader refuses what it cannot run.
func TestGraniteMoE(t *testing.T) {
	man, dir := readManifest(t)
	seq := man.Sequence.IDs[:20]
	for _, name := range []string{"tiny-llama-F32", "tiny-llama-Q4_0"} {
		src := filepath.Join(dir, man.Models[name].Model)
		set := map[string]any{"granite.embedding_scale": float32(2), "granite.residual_scale": float32(0.5), "granite.logit_scale": float32(3)}
		dense := openPath(t, relabel(t, src, "granite", set))
		moeSet := map[string]any{}
		for k, v := range set {
			moeSet[strings.Replace(k, "granite.", "granitemoe.", 1)] = v
		}
		moe := openPath(t, relabel(t, moeOfDense(t, src, 4, 1), "granitemoe", moeSet))
		if c := moe.Config(); c.Experts != 4 || c.ExpertsUsed != 1 {
			t.Fatalf("%s: config %+v", name, c)
		}
		vocab := dense.Config().VocabSize
		opts := model.SessionOptions{CtxLen: 64, Batch: 32, Threads: 2}
		want := batchLogits(t, session(t, dense, opts), seq, vocab)
		got := batchLogits(t, session(t, moe, opts), seq, vocab)
		for i := range seq {
			closeRows(t, name, i, got[i*vocab:(i+1)*vocab], want[i*vocab:(i+1)*vocab])
		}
	}
	src := filepath.Join(dir, man.Models["tiny-llama-F32"].Model)
	for _, tc := range []struct {
		arch string
		set  map[string]any
		want string
	}{
		{"granite", map[string]any{"granite.residual_scale": float32(-1)}, "granite.residual_scale = -1 must be a positive number"},
		{"granitemoe", map[string]any{}, "granitemoe.expert_count is missing"},
		{"granite", map[string]any{"granite.expert_count": uint32(4), "granite.expert_used_count": uint32(1)}, "not supported for this architecture"},
	} {
		f, err := gguf.Open(relabel(t, src, tc.arch, tc.set))
		if err != nil {
			t.Fatal(err)
		}
		_, err = model.Load(f)
		f.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.arch, tc.set, err, tc.want)
		}
	}
}
