package engine

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

// BenchmarkDecode measures one decode step at position 128 of the model
// named by GLASSBOX_BENCH_MODEL, on GLASSBOX_BENCH_THREADS threads (1 when
// unset).
func BenchmarkDecode(b *testing.B) {
	m := benchModel(b)
	threads := 1
	if v := os.Getenv("GLASSBOX_BENCH_THREADS"); v != "" {
		var err error
		if threads, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	s, err := m.NewSession(model.SessionOptions{CtxLen: 512, Threads: threads})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	logits := make([]float32, m.Config().VocabSize)
	b.SetBytes(m.WeightBytes())
	b.ResetTimer()
	for i := range b.N {
		if err := s.Forward(context.Background(), []int{1}, 128+i%256, logits); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrefill measures a 128-token prompt evaluated in one batch on
// the model named by GLASSBOX_BENCH_MODEL.
func BenchmarkPrefill(b *testing.B) {
	m := benchModel(b)
	s, err := m.NewSession(model.SessionOptions{CtxLen: 128, Batch: 128, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tokens := make([]int, 128)
	for i := range tokens {
		tokens[i] = (i * 7919) % m.Config().VocabSize
	}
	logits := make([]float32, m.Config().VocabSize)
	b.ResetTimer()
	for range b.N {
		if err := s.Forward(context.Background(), tokens, 0, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(128*b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkDecodeStep measures aggregate decode speed for 1 and 4
// sequences, stepping them one at a time (Forward per session) or
// together (model.DecodeStep: weights read once per step), on the model
// named by GLASSBOX_BENCH_MODEL, at 2 threads.
func BenchmarkDecodeStep(b *testing.B) {
	m := benchModel(b)
	c := m.Config()
	for _, n := range []int{1, 4} {
		for _, together := range []bool{false, true} {
			if n == 1 && together {
				continue
			}
			name := fmt.Sprintf("seqs=%d/separate", n)
			if together {
				name = fmt.Sprintf("seqs=%d/together", n)
			}
			b.Run(name, func(b *testing.B) {
				ss := make([]model.Session, n)
				var err error
				for i := range ss {
					if ss[i], err = m.NewSession(model.SessionOptions{CtxLen: 256, Batch: 8, Threads: 2}); err != nil {
						b.Fatal(err)
					}
					defer ss[i].Close()
				}
				tokens, positions := make([]int, n), make([]int, n)
				logits := make([]float32, n*c.VocabSize)
				b.ResetTimer()
				for k := range b.N {
					for i := range positions {
						tokens[i], positions[i] = (k*31+i)%c.VocabSize, k%256
					}
					if together {
						err = model.DecodeStep(context.Background(), &c, ss, tokens, positions, logits)
					} else {
						for i, s := range ss {
							if err = s.Forward(context.Background(), tokens[i:i+1], positions[i], logits[i*c.VocabSize:(i+1)*c.VocabSize]); err != nil {
								break
							}
						}
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

// BenchmarkDecodeStepRatio interleaves decode steps of 1, 2 and 4
// sequences (model.DecodeStep, 2 threads) on the model named by
// GLASSBOX_BENCH_MODEL — one of each per iteration, so the ratios compare
// the same moments of a machine whose speed varies with other work — and
// reports each case's tokens/s and the 2- and 4-sequence ratios over one.
func BenchmarkDecodeStepRatio(b *testing.B) {
	m := benchModel(b)
	c := m.Config()
	counts := []int{1, 2, 4}
	sets := make([][]model.Session, len(counts))
	for k, n := range counts {
		for range n {
			s, err := m.NewSession(model.SessionOptions{CtxLen: 256, Batch: 8, Threads: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			sets[k] = append(sets[k], s)
		}
	}
	logits := make([]float32, 4*c.VocabSize)
	tokens, positions := make([]int, 4), make([]int, 4)
	step := func(k, it int) time.Duration {
		n := counts[k]
		for i := range n {
			tokens[i], positions[i] = (it*31+i)%c.VocabSize, it%256
		}
		t0 := time.Now()
		if err := model.DecodeStep(context.Background(), &c, sets[k], tokens[:n], positions[:n], logits[:n*c.VocabSize]); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for k := range counts { // first use: weight layout, caches
		step(k, 0)
	}
	spent := make([]time.Duration, len(counts))
	b.ResetTimer()
	for it := range b.N {
		for k := range counts {
			spent[k] += step(k, it+1)
		}
	}
	rate := func(k int) float64 { return float64(counts[k]*b.N) / spent[k].Seconds() }
	for k, n := range counts {
		b.ReportMetric(rate(k), fmt.Sprintf("seqs%d-tok/s", n))
		if k > 0 {
			b.ReportMetric(rate(k)/rate(0), fmt.Sprintf("x%d", n))
		}
	}
}

// benchModel loads the model named by GLASSBOX_BENCH_MODEL (skipping the
// benchmark when it is unset); the file is closed when b ends.
func benchModel(b *testing.B) model.Model {
	b.Helper()
	path := os.Getenv("GLASSBOX_BENCH_MODEL")
	if path == "" {
		b.Skip("set GLASSBOX_BENCH_MODEL to a GGUF file")
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	m, err := model.Load(f)
	if err != nil {
		b.Fatal(err)
	}
	return m
}
