package all

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/model"
)

// TestDecodeStep checks that one decode step for several sessions (the
// weights read once for all) gives each session the logits its own
// Forward gives, and leaves each session's cache as Forward would.
func TestDecodeStep(t *testing.T) {
	man, dir := readManifest(t)
	seq := man.Sequence.IDs
	for _, name := range []string{"stories260K", "tiny-llama-Q4_0", "tiny-qwen2-F32", "tiny-phi3-F32"} {
		t.Run(name, func(t *testing.T) {
			m := open(t, dir, man.Models[name].Model)
			c := m.Config()
			vocab := c.VocabSize
			// Three sequences with prompts of 5, 9 and 14 tokens.
			prompts := [][]int{seq[:5], seq[10:19], seq[20:34]}
			var multi, single []model.Session
			for range prompts {
				multi = append(multi, session(t, m, model.SessionOptions{CtxLen: 64, Batch: 16}))
				single = append(single, session(t, m, model.SessionOptions{CtxLen: 64, Batch: 16}))
			}
			last := make([]float32, vocab)
			for i, p := range prompts {
				for _, s := range []model.Session{multi[i], single[i]} {
					if err := s.Forward(context.Background(), p, 0, last); err != nil {
						t.Fatal(err)
					}
				}
			}
			tokens := []int{seq[40], seq[41], seq[42]}
			positions := []int{5, 9, 14}
			got := make([]float32, 3*vocab)
			for step := range 3 {
				if err := model.DecodeStep(context.Background(), &c, multi, tokens, positions, got); err != nil {
					t.Fatal(err)
				}
				for i, s := range single {
					if err := s.Forward(context.Background(), tokens[i:i+1], positions[i], last); err != nil {
						t.Fatal(err)
					}
					row := got[i*vocab : (i+1)*vocab]
					var d, ref float64
					for j := range last {
						d = max(d, math.Abs(float64(row[j]-last[j])))
						ref = max(ref, math.Abs(float64(last[j])))
					}
					if d > 1e-4*ref {
						t.Errorf("step %d, session %d: max |Δ| %g (max |logit| %g)", step, i, d, ref)
					}
					tokens[i] = argmax(row)
					positions[i]++
				}
			}
		})
	}
}

func TestDecodeStepErrors(t *testing.T) {
	man, dir := readManifest(t)
	a := open(t, dir, man.Models["stories260K"].Model)
	b := open(t, dir, man.Models["tiny-llama-F32"].Model)
	c := a.Config()
	sa := session(t, a, model.SessionOptions{CtxLen: 8})
	sb := session(t, b, model.SessionOptions{CtxLen: 8})
	out := make([]float32, 2*c.VocabSize)
	tests := []struct {
		name      string
		ss        []model.Session
		tokens    []int
		positions []int
		want      string
	}{
		{"other model", []model.Session{sa, sb}, []int{1, 1}, []int{0, 0}, "not of session 0's model"},
		{"past context", []model.Session{sa, sa}, []int{1, 1}, []int{0, 8}, "position 8 does not fit its context of 8"},
		{"bad token", []model.Session{sa, sa}, []int{1, 512}, []int{0, 1}, "token 512 is outside the vocabulary"},
		{"lengths", []model.Session{sa, sa}, []int{1}, []int{0, 1}, "2 sessions with 1 tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := model.DecodeStep(context.Background(), &c, tc.ss, tc.tokens, tc.positions, out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
