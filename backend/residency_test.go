package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/server"
)

// isBadRequest reports whether err was marked server.BadRequest (a 400).
func isBadRequest(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if fmt.Sprintf("%T", err) == "server.badRequestError" {
			return true
		}
	}
	return false
}

// running is the resident models' names, in the residency's order.
func running(t *testing.T, b *Backend) []string {
	t.Helper()
	rs, err := b.Running(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	return names
}

// TestResidencyShared: a model made from another over the same file (a
// copy, a create with a system message of its own) is held under its
// base's name: one copy of the weights, loaded once, unloaded by either
// name; a --model file of the same bytes is a model of its own.
func TestResidencyShared(t *testing.T) {
	src := shared.Path(t, "models/stories260K.gguf")
	st := tempStore(t)
	if _, err := st.Import(src, "story"); err != nil {
		t.Fatal(err)
	}
	b := newBackend(t, Config{Store: st, Models: []string{src}})
	ctx := context.Background()
	if err := b.Copy(ctx, "story", "story-copy"); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, &server.CreateRequest{Name: "story-pirate", ModelProfile: server.ModelProfile{From: "story-copy", System: "Talk like a pirate."}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"story", "story-copy", "story-pirate"} {
		path, err := b.resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := b.resident(name, path); got != "story" {
			t.Errorf("%s is resident as %q, want story", name, got)
		}
	}
	if got, _ := b.resident("stories260K", src); got != "stories260K" {
		t.Errorf("the --model file is resident as %q", got)
	}
	if err := b.Load(ctx, "story-pirate", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Load(ctx, "story-copy", nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(running(t, b), " "); got != "story" {
		t.Errorf("resident after loading two names of one file: %q, want story", got)
	}
	p, err := b.Profile(ctx, "story-pirate")
	if err != nil || p == nil || p.From != "story-copy" || p.System != "Talk like a pirate." {
		t.Errorf("profile %+v, %v", p, err)
	}
	if err := b.Unload(ctx, "story-copy"); err != nil {
		t.Fatal(err)
	}
	if got := running(t, b); len(got) != 0 {
		t.Errorf("resident after unloading by a copy's name: %v", got)
	}
	if err := b.Unload(ctx, "story"); err != nil {
		t.Errorf("unloading a model that is not loaded: %v, want no error", err)
	}
	if err := b.Create(ctx, &server.CreateRequest{Name: "stories260K", ModelProfile: server.ModelProfile{From: "story"}}); err == nil ||
		!strings.Contains(err.Error(), `model "stories260K" already exists (a file given to serve)`) {
		t.Errorf("a create over a --model name: %v", err)
	}
}

// TestResidencyBudget: under a budget that holds either of two models but
// not both, loading the second evicts the idle first; a budget below one
// model's plan refuses it at the plan stage, before it loads.
func TestResidencyBudget(t *testing.T) {
	src, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, c := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "c.gguf")
	for _, p := range []string{a, c} {
		if err := os.WriteFile(p, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// At 8192 positions the model's own memory (its KV cache mostly)
	// outweighs the process's share, which the budget counts once.
	cfg := Config{Models: []string{a, c}, Session: withCtx(8192)}
	probe := newBackend(t, cfg)
	p, err := probe.planFor(a, probe.session, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	one := p.Memory.ModelBytes()
	cfg.Budget = (p.Memory.TotalBytes + 2*one) / 2
	if p.Memory.TotalBytes > cfg.Budget || 2*one <= cfg.Budget {
		t.Fatalf("no budget holds one model (%d bytes with the process) but not two (%d)", p.Memory.TotalBytes, 2*one)
	}
	b := newBackend(t, cfg)
	ctx := context.Background()
	if err := b.Load(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Load(ctx, "c", nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(running(t, b), " "); got != "c" {
		t.Errorf("resident under a budget of one: %q, want c alone (a evicted)", got)
	}

	small := newBackend(t, Config{Models: []string{a}, Budget: p.Memory.TotalBytes / 2})
	_, err = small.Generate(ctx, &server.GenerateRequest{Model: "a", Prompt: "Once", Options: server.Options{NumPredict: 1}})
	if err == nil || !strings.Contains(err.Error(), "plan") || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a model over the budget: %v, want the plan stage's refusal naming the budget", err)
	}
	if got := running(t, small); len(got) != 0 {
		t.Errorf("a refused model is resident: %v", got)
	}
}

// TestKeepAlive: a request's keep-alive reaches the residency (a zero one
// unloads the model when its request ends), the server's applies
// otherwise.
func TestKeepAlive(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	b := newBackend(t, Config{Models: []string{m}})
	ctx := context.Background()
	keep := time.Hour
	if err := b.Load(ctx, "stories260K", &keep); err != nil {
		t.Fatal(err)
	}
	rs, _ := b.Running(ctx)
	if len(rs) != 1 || rs[0].KeepAlive != "1h0m0s" || rs[0].ModelInfo.Family != "llama" {
		t.Fatalf("running %+v, want stories260K kept for 1h", rs)
	}
	none := time.Duration(0)
	if _, err := b.Generate(ctx, &server.GenerateRequest{Model: "stories260K", Prompt: "Once", KeepAlive: &none,
		Options: server.Options{NumPredict: 1}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(running(t, b)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still resident after a request with keep-alive 0: %v", running(t, b))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestErrors: each refusal names its stage and cause: an unknown model
// (the server's 404), a token outside the vocabulary, a prompt scored
// while batching, a --model file deleted, a store the backend lacks.
func TestErrors(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	ctx := context.Background()
	b := newBackend(t, Config{Models: []string{m}})
	batched := newBackend(t, Config{Models: []string{m}, Parallel: 2})
	for _, tc := range []struct {
		name       string
		call       func() error
		want       string
		notFound   bool
		badRequest bool
	}{
		{"generate an unknown model", func() error {
			_, err := b.Generate(ctx, &server.GenerateRequest{Model: "nope", Prompt: "x"})
			return err
		}, `load: model "nope"`, true, false},
		{"embed an unknown model", func() error {
			_, err := b.Embed(ctx, &server.EmbedRequest{Model: "nope", Input: []string{"x"}})
			return err
		}, `load: model "nope"`, true, false},
		{"show an unknown model", func() error { _, err := b.Show(ctx, "nope"); return err }, `model "nope"`, true, false},
		{"tokenize with an unknown model", func() error { _, err := b.Tokenize(ctx, "nope", "x", true, false); return err }, `model "nope"`, true, false},
		{"unload an unknown model", func() error { return b.Unload(ctx, "nope") }, `model "nope"`, true, false},
		{"a token outside the vocabulary", func() error { _, err := b.Detokenize(ctx, "stories260K", []int{1, 512}); return err },
			"decode: token 512 (number 2) is outside the vocabulary of 512", false, true},
		{"a negative token", func() error { _, err := b.Detokenize(ctx, "stories260K", []int{-1}); return err },
			"token -1 (number 1) is outside the vocabulary of 512", false, true},
		{"scoring while batching", func() error {
			_, err := batched.Generate(ctx, &server.GenerateRequest{Model: "stories260K", Prompt: "Once upon a time",
				Options: server.Options{PromptLogprobs: true, NoGenerate: true}})
			return err
		}, "prefill: scoring a prompt (echo with logprobs, or max_tokens 0) is done one generation at a time; this server batches 2", false, true},
		{"delete a --model file", func() error { return b.Delete(ctx, "stories260K") }, `load: model "stories260K" is a file given to serve, not in the store`, false, false},
		{"pull without a store", func() error { _, err := b.Pull(ctx, "hf.co/a/b"); return err }, "load: this server has no model store to pull into", false, false},
		{"create without a store", func() error {
			return b.Create(ctx, &server.CreateRequest{Name: "x", ModelProfile: server.ModelProfile{From: "stories260K"}})
		}, "load: this server has no model store to create models in", false, false},
		{"upload without a store", func() error { return b.PutBlob(ctx, "sha256:00", strings.NewReader("x")) }, "load: this server has no model store to upload into", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
			if got := errors.Is(err, server.ErrModelNotFound); got != tc.notFound {
				t.Errorf("%v: model not found %v, want %v", err, got, tc.notFound)
			}
			if got := isBadRequest(err); got != tc.badRequest {
				t.Errorf("%v: a bad request %v, want %v", err, got, tc.badRequest)
			}
		})
	}
	if ok, err := b.HasBlob(ctx, "sha256:00"); ok || err != nil {
		t.Errorf("a backend without a store has blob: %v, %v", ok, err)
	}
	if _, ok := b.BlobFree(); ok {
		t.Error("a backend without a store has room for uploads")
	}
	if p, err := b.Profile(ctx, "stories260K"); p != nil || err != nil {
		t.Errorf("a --model file's profile: %+v, %v", p, err)
	}
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "plan:") {
		t.Errorf("New without a device: %v", err)
	}
	if _, err := tryBackend(Config{Models: []string{"/nonexistent/m.gguf"}}); err == nil || !strings.HasPrefix(err.Error(), "load: ") {
		t.Errorf("a missing --model file: %v", err)
	}
}
