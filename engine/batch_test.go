package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
)

// TestBatcher runs the four stories260K prompts at once through one
// batcher: every stream must get exactly its reference greedy ids, as if
// it ran alone, and a cancelled fifth request must leave without
// disturbing them.
func TestBatcher(t *testing.T) {
	m := stories(t)
	b := NewBatcher(m, model.SessionOptions{CtxLen: 256, Batch: 4, Threads: 1}, 4)
	defer b.Close()
	ps := prompts(t)
	var wg sync.WaitGroup
	results := make([]*Result, len(ps))
	errs := make([]error, len(ps))
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.Generate(context.Background(), Request{Prompt: p.IDs, MaxTokens: 60}, 0)
		}()
	}
	// A fifth request, cancelled after its third token.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	wg.Add(1)
	var cancelErr error
	go func() {
		defer wg.Done()
		_, cancelErr = b.Generate(ctx, Request{Prompt: ps[0].IDs, MaxTokens: 100,
			OnToken: func(int, string) error {
				if n++; n == 3 {
					cancel()
				}
				return nil
			}}, 0)
	}()
	wg.Wait()
	for i, p := range ps {
		if errs[i] != nil {
			t.Fatalf("prompt %d: %v", i+1, errs[i])
		}
		got := results[i].Tokens
		if len(got) != 60 || results[i].StopReason != StopLength {
			t.Fatalf("prompt %d: %d tokens, stop %q", i+1, len(got), results[i].StopReason)
		}
		for k := range got {
			if got[k] != p.Greedy200[k] {
				t.Fatalf("prompt %d: token %d is %d, want %d", i+1, k, got[k], p.Greedy200[k])
			}
		}
	}
	if !errors.Is(cancelErr, context.Canceled) {
		t.Errorf("cancelled request: got %v, want context.Canceled", cancelErr)
	}
}

func TestBatcherClosed(t *testing.T) {
	b := NewBatcher(stories(t), model.SessionOptions{CtxLen: 32}, 2)
	b.Close()
	if _, err := b.Generate(context.Background(), Request{Prompt: []int{1}}, 0); !errors.Is(err, ErrBatcherClosed) {
		t.Errorf("after Close: got %v, want ErrBatcherClosed", err)
	}
}

// TestBatcherText runs two text requests through Text.Prepare and a
// batcher.
func TestBatcherText(t *testing.T) {
	tx, err := LoadText(context.Background(), shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	b := NewBatcher(tx.Model, model.SessionOptions{CtxLen: 64}, 2)
	defer b.Close()
	var wg sync.WaitGroup
	texts := make([]string, 2)
	for i, p := range []string{"Once upon a time", "Lily and Ben went to the park."} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := tx.Prepare(context.Background(), TextRequest{Prompt: p, MaxTokens: 6})
			if err != nil {
				t.Error(err)
				return
			}
			res, err := b.Generate(context.Background(), r, 0)
			if err != nil {
				t.Error(err)
				return
			}
			texts[i] = res.Text
		}()
	}
	wg.Wait()
	if !strings.HasPrefix(texts[0], ", there was a little") || !strings.HasPrefix(texts[1], " They saw a big") {
		t.Errorf("texts %q", texts)
	}
}
