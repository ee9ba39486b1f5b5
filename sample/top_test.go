package sample

import (
	"math"
	"testing"
)

func TestTop(t *testing.T) {
	logits := []float32{1, 3, 2, 3, -1}
	p1 := softmax64(logits, 1)
	tests := []struct {
		name  string
		p     Params
		n     int
		ids   []int
		probs []float64
	}{
		{"greedy shows the T=1 distribution", Params{}, 3, []int{1, 3, 2}, []float64{p1[1], p1[3], p1[2]}},
		{"top-k 2 at T=0.5", Params{Temperature: 0.5, TopK: 2}, 5, []int{1, 3}, []float64{0.5, 0.5}},
		{"min-p keeps three", Params{Temperature: 1, MinP: 0.3}, 4, []int{1, 3, 2},
			func() []float64 { q := softmax64([]float32{3, 3, 2}, 1); return q }()},
		{"n = 0", Params{}, 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.p)
			if got := s.Top(nil, 3); len(got) != 0 {
				t.Fatalf("before Sample: %v", got)
			}
			s.Sample(logits, nil)
			got := s.Top(nil, tt.n)
			if len(got) != len(tt.ids) {
				t.Fatalf("got %v, want ids %v", got, tt.ids)
			}
			for i, c := range got {
				if c.ID != tt.ids[i] || math.Abs(c.P-tt.probs[i]) > 1e-12 {
					t.Errorf("#%d: %+v, want id %d p %.6f", i, c, tt.ids[i], tt.probs[i])
				}
			}
		})
	}
}

func TestTopDoesNotChangeSampling(t *testing.T) {
	logits := make([]float32, 500)
	for i := range logits {
		logits[i] = float32(i%37) * 0.1
	}
	a, b := New(Params{Temperature: 1, TopP: 0.9, Seed: 4}), New(Params{Temperature: 1, TopP: 0.9, Seed: 4})
	for i := 0; i < 50; i++ {
		x, y := a.Sample(logits, nil), b.Sample(logits, nil)
		b.Top(nil, 10)
		if x != y {
			t.Fatalf("step %d: Top changed the next draw (%d vs %d)", i, x, y)
		}
	}
}
