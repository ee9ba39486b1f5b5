package engine

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/model"
)

// TestDecodeAllocs checks that a decode step (one token through the
// model over the KV cache) allocates nothing after warm-up, at 1 and 2
// threads, but for a rare miss of compute's sync.Pool scratch buffers
// (stepBudget).
const stepBudget = 2

func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	m := stories(t)
	for _, threads := range []int{1, 2} {
		s := newSession(t, m, model.SessionOptions{CtxLen: 512, Threads: threads})
		logits := make([]float32, m.Config().VocabSize)
		tok := []int{1}
		pos := 0
		step := func() {
			if err := s.Forward(context.Background(), tok, pos, logits); err != nil {
				t.Fatal(err)
			}
			pos++
		}
		for range 4 {
			step()
		}
		budget := float64(stepBudget)
		a := testing.AllocsPerRun(100, step)
		t.Logf("%d threads: %.1f allocations per decode step (budget %.0f)", threads, a, budget)
		if a > budget {
			t.Errorf("%d threads: %.1f allocations per decode step, budget %.0f", threads, a, budget)
		}
	}
}

// TestStepAllocs checks that a batched step of three sequences — what
// the Batcher runs per token — allocates nothing after warm-up with a
// reused model.Batch, but for compute's rare pool misses (stepBudget).
func TestStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	m := stories(t)
	c := m.Config()
	work := newSession(t, m, model.SessionOptions{CtxLen: 16, Batch: 16, Threads: 2})
	seqs := make([]model.Session, 3)
	for i := range seqs {
		seqs[i] = newSession(t, m, model.SessionOptions{CtxLen: 512, Batch: 1, Threads: 1})
	}
	logits := make([]float32, len(seqs)*c.VocabSize)
	var b model.Batch
	pos := 0
	step := func() {
		b.Reset()
		for i, s := range seqs {
			b.Add(s, 1+i, pos, true)
		}
		if err := model.Step(context.Background(), &c, work, &b, logits); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	for range 4 {
		step()
	}
	if a := testing.AllocsPerRun(100, step); a > stepBudget {
		t.Errorf("%.1f allocations per batched step, budget %d", a, stepBudget)
	}
}

// TestLongGenerationMemory generates 2,000 tokens and checks that the
// live heap does not grow beyond what the result itself holds (ids and
// text): the KV cache and buffers are allocated up front.
func TestLongGenerationMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000-token generation")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory grows the RSS")
	}
	m := stories(t)
	s := newSession(t, m, model.SessionOptions{CtxLen: 2048})
	var at500 uint64
	var rss500 int64
	var ms runtime.MemStats
	n := 0
	res, err := Generate(context.Background(), s, m.Config().VocabSize, Request{
		Prompt: []int{1}, MaxTokens: 2000, Decoder: &idText{},
		OnToken: func(int, string) error {
			n++
			if n == 500 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				at500 = ms.HeapAlloc
				rss500 = rss(t)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	growth := int64(ms.HeapAlloc) - int64(at500)
	// The result holds 1,500 more ids (8 B each) and ~6 B of text per id;
	// allow that twice over (slice doubling) plus 64 KiB of noise.
	limit := int64(2*1500*(8+6) + 64<<10)
	t.Logf("heap growth from token 500 to %d: %d bytes (limit %d)", len(res.Tokens), growth, limit)
	if len(res.Tokens) != 2000 || growth > limit {
		t.Errorf("%d tokens, heap grew by %d bytes, limit %d", len(res.Tokens), growth, limit)
	}
	// Resident memory may grow by the KV cache pages first written after
	// token 500 (the cache is allocated whole but touched as it fills).
	if rss500 > 0 {
		rssGrowth := rss(t) - rss500
		rssLimit := s.KVBytes() + 8<<20
		t.Logf("RSS growth from token 500 to 2000: %d bytes (KV cache %d, limit %d)", rssGrowth, s.KVBytes(), rssLimit)
		if rssGrowth > rssLimit {
			t.Errorf("RSS grew by %d bytes over 1,500 tokens, limit %d", rssGrowth, rssLimit)
		}
	}
}

// rss returns the resident set size from /proc/self/status, or 0 where
// there is none.
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	return 0
}
