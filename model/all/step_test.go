package all

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/model"
)

// TestStep checks a mixed step — a decode row of one session, the rest of
// a second session's prompt and the start of a third's, with a separate
// work session doing the computation — against each session's own
// Forward, then a decode step for all three from the caches it left.
func TestStep(t *testing.T) {
	man, dir := readManifest(t)
	seq := man.Sequence.IDs
	for _, name := range []string{"stories260K", "tiny-llama-Q4_0", "tiny-qwen2-F32", "tiny-phi3-F32"} {
		t.Run(name, func(t *testing.T) {
			m := open(t, dir, man.Models[name].Model)
			c := m.Config()
			vocab := c.VocabSize
			opts := model.SessionOptions{CtxLen: 64, Batch: 16, Threads: 2}
			p0, p1, p2 := seq[:5], seq[10:19], seq[20:23]
			var multi, single [3]model.Session
			for i := range multi {
				multi[i], single[i] = session(t, m, opts), session(t, m, opts)
			}
			// Work at 4 threads: the mixed step's 9 rows are one loop over
			// rows; the decode step (3 rows on multi[0]'s 2 threads) takes
			// a loop over heads per row.
			work := session(t, m, model.SessionOptions{CtxLen: 64, Batch: 16, Threads: 4})
			last := make([]float32, vocab)
			forward(t, multi[0], p0, 0, last)
			forward(t, multi[1], p1[:4], 0, last)

			// References: session 0 decodes seq[40] at 5; session 1's
			// prompt ends at 8; session 2's row at position 1.
			ref0, ref1 := make([]float32, vocab), make([]float32, vocab)
			forward(t, single[0], p0, 0, last)
			forward(t, single[0], seq[40:41], 5, ref0)
			forward(t, single[1], p1, 0, ref1)
			ref2 := batchLogits(t, single[2], p2, vocab)[vocab : 2*vocab]

			var b model.Batch
			b.Add(multi[0], seq[40], 5, true)
			for k := 4; k < len(p1); k++ {
				b.Add(multi[1], p1[k], k, k == len(p1)-1)
			}
			for k := range p2 {
				b.Add(multi[2], p2[k], k, k == 1)
			}
			got := make([]float32, 3*vocab)
			if err := model.Step(context.Background(), &c, work, &b, got); err != nil {
				t.Fatal(err)
			}
			for i, ref := range [][]float32{ref0, ref1, ref2} {
				closeRows(t, "mixed step", i, got[i*vocab:(i+1)*vocab], ref)
			}

			// A decode step for all three from the caches the mixed step left.
			tokens, positions := []int{seq[41], seq[42], seq[43]}, []int{6, 9, 3}
			if err := model.DecodeStep(context.Background(), &c, multi[:], tokens, positions, got); err != nil {
				t.Fatal(err)
			}
			for i, s := range single {
				forward(t, s, tokens[i:i+1], positions[i], last)
				closeRows(t, "decode step", i, got[i*vocab:(i+1)*vocab], last)
			}
		})
	}
}

// TestStepErrors checks that rows Step cannot run are refused with the
// numbers.
func TestStepErrors(t *testing.T) {
	man, dir := readManifest(t)
	m := open(t, dir, man.Models["stories260K"].Model)
	c := m.Config()
	a := session(t, m, model.SessionOptions{CtxLen: 8})
	b := session(t, m, model.SessionOptions{CtxLen: 8})
	type row struct {
		s        model.Session
		tok, pos int
		want     bool
	}
	tests := []struct {
		name string
		rows []row
		want string
	}{
		{"gap", []row{{a, 1, 0, false}, {a, 1, 2, true}}, "row 1 is position 2 of the session whose previous row is position 0"},
		{"not adjacent", []row{{a, 1, 0, false}, {b, 1, 0, true}, {a, 1, 1, true}}, "rows 0 and 2 are of one session but not adjacent"},
		{"past context", []row{{a, 1, 8, true}}, "position 8 does not fit its context of 8"},
		{"bad token", []row{{a, -1, 0, true}}, "token -1 is outside the vocabulary"},
		{"no rows", nil, "step of no rows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var bt model.Batch
			n := 0
			for _, r := range tc.rows {
				bt.Add(r.s, r.tok, r.pos, r.want)
				if r.want {
					n++
				}
			}
			err := model.Step(context.Background(), &c, a, &bt, make([]float32, n*c.VocabSize))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	t.Run("logits size", func(t *testing.T) {
		var bt model.Batch
		bt.Add(a, 1, 0, true)
		err := model.Step(context.Background(), &c, a, &bt, make([]float32, 2*c.VocabSize))
		if err == nil || !strings.Contains(err.Error(), "want 512 (1 rows") {
			t.Errorf("got %v", err)
		}
	})
}

func forward(t *testing.T, s model.Session, ids []int, pos int, logits []float32) {
	t.Helper()
	if err := s.Forward(context.Background(), ids, pos, logits); err != nil {
		t.Fatal(err)
	}
}

// closeRows fails when got differs from ref by more than 1e-4 of ref's
// largest magnitude (the tolerance of TestDecodeStep).
func closeRows(t *testing.T, what string, i int, got, ref []float32) {
	t.Helper()
	var d, m float64
	for j := range ref {
		d = max(d, math.Abs(float64(got[j]-ref[j])))
		m = max(m, math.Abs(float64(ref[j])))
	}
	if d > 1e-4*m {
		t.Errorf("%s, session %d: max |Δ| %g (max |logit| %g)", what, i, d, m)
	}
}
