package all

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/synth"
)

// stepBudget is the allocations a decode step may make: none after
// warm-up, but for a rare miss of compute's sync.Pool scratch buffers (as
// engine's TestDecodeAllocs allows).
const stepBudget = 2

// TestDecodeAllocsEveryArch checks that a decode step of every
// architecture allocates nothing after warm-up, at 1 and 2 threads, and
// a step of three sequences together (model.Step) neither:
// they all run model.Transformer's forward pass, and each part one of
// them adds (biases, Q/K norms, soft-caps, multipliers, sinks, windows,
// experts) runs only in its own files.
func TestDecodeAllocsEveryArch(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	for _, tc := range []struct{ arch, preset string }{
		{"llama", "tiny"}, {"qwen2", "tiny"}, {"qwen3", "tiny"}, {"gemma2", "tiny"}, {"gemma3", "tiny"},
		{"granite", "tiny"}, {"phi3", "tiny"}, {"qwen2moe", "moe-tiny"}, {"qwen3moe", "moe-tiny"},
		{"granitemoe", "moe-tiny"}, {"gpt-oss", "moe-tiny"},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			c := synth.Presets[tc.preset]
			c.Arch = tc.arch
			path := filepath.Join(t.TempDir(), tc.arch+".gguf")
			if err := synth.WriteFile(context.Background(), path, synth.Options{Config: c, Format: "Q8_0", Seed: 1}); err != nil {
				t.Fatal(err)
			}
			m := openPath(t, path)
			cfg := m.Config()
			logits := make([]float32, 3*cfg.VocabSize)
			for _, threads := range []int{1, 2} {
				s := session(t, m, model.SessionOptions{CtxLen: 64, Threads: threads})
				pos := 0
				step := func() {
					if err := s.Forward(context.Background(), []int{(7 * pos) % cfg.VocabSize}, pos%64, logits[:cfg.VocabSize]); err != nil {
						t.Fatal(err)
					}
					pos++
				}
				for range 4 {
					step()
				}
				if a := testing.AllocsPerRun(40, step); a > stepBudget {
					t.Errorf("%d threads: %.1f allocations per decode step, budget %d", threads, a, stepBudget)
				}
			}
			// A step of three sequences with a reused Batch (as the engine's
			// Batcher runs it), on a work session of its own.
			work := session(t, m, model.SessionOptions{CtxLen: 16, Batch: 4, Threads: 2})
			var seqs [3]model.Session
			for i := range seqs {
				seqs[i] = session(t, m, model.SessionOptions{CtxLen: 64, Batch: 1, Threads: 1})
			}
			var b model.Batch
			pos := 0
			step := func() {
				b.Reset()
				for i, s := range seqs {
					b.Add(s, 1+i, pos%64, true)
				}
				if err := model.Step(context.Background(), &cfg, work, &b, logits); err != nil {
					t.Fatal(err)
				}
				pos++
			}
			for range 4 {
				step()
			}
			if a := testing.AllocsPerRun(40, step); a > stepBudget {
				t.Errorf("three sequences: %.1f allocations per decode step, budget %d", a, stepBudget)
			}
		})
	}
}
