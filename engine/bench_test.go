package engine

import (
	"context"
	"os"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

// BenchmarkDecode measures one decode step at position 128 of the model
// named by GLASSBOX_BENCH_MODEL (stories260K when unset).
func BenchmarkDecode(b *testing.B) {
	path := os.Getenv("GLASSBOX_BENCH_MODEL")
	if path == "" {
		b.Skip("set GLASSBOX_BENCH_MODEL to a GGUF file")
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m, err := model.Load(f)
	if err != nil {
		b.Fatal(err)
	}
	s, err := m.NewSession(model.SessionOptions{CtxLen: 512, Threads: 1})
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
	path := os.Getenv("GLASSBOX_BENCH_MODEL")
	if path == "" {
		b.Skip("set GLASSBOX_BENCH_MODEL to a GGUF file")
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m, err := model.Load(f)
	if err != nil {
		b.Fatal(err)
	}
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
