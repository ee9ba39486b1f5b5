package backend

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
)

// TestDraft: a model with a draft is decoded speculatively: a greedy
// generation through Ollama's API is the engine's text for the prompt
// without a draft, and the job's generate stage says how the speculation
// went; the next request's draft starts from its kept session.
func TestDraft(t *testing.T) {
	m, d := shared.Path(t, "models/tiny-llama-Q8_0.gguf"), shared.Path(t, "models/tiny-llama-Q4_0.gguf")
	text, err := engine.LoadText(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := text.Generate(context.Background(), engine.TextRequest{Prompt: "Once upon a time", MaxTokens: 40,
		Session: model.SessionOptions{Threads: 1}})
	text.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := res.Text
	base, _ := serve(t, Config{Models: []string{m}, Drafts: []string{"tiny-llama-Q8_0=" + d}})
	code, b := postBody(t, base+"/api/generate", `{"model": "tiny-llama-Q8_0", "prompt": "Once upon a time", "raw": true, "stream": false,
		"options": {"temperature": 0, "repeat_penalty": 1, "num_predict": 40}}`)
	var gen struct{ Response string }
	if err := json.Unmarshal(b, &gen); code != 200 || err != nil || gen.Response != want {
		t.Fatalf("/api/generate with a draft: %d %s, want %q", code, b, want)
	}
	resp, err := http.Get(base + "/v1/jobs?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	var jobs struct{ Jobs []struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&jobs)
	resp.Body.Close()
	if len(jobs.Jobs) != 1 {
		t.Fatalf("jobs %+v", jobs)
	}
	resp, err = http.Get(base + "/v1/jobs/" + jobs.Jobs[0].ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	events, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(events), "drafted tokens kept") || !strings.Contains(string(events), "draft model: llama") {
		t.Errorf("the job's events do not tell of the draft:\n%s", events)
	}
	// The next request continues the text: the draft's kept session holds
	// its start, as the model's does.
	next, _ := json.Marshal("Once upon a time" + gen.Response)
	code, b = postBody(t, base+"/api/generate", `{"model": "tiny-llama-Q8_0", "prompt": `+string(next)+`, "raw": true, "stream": false,
		"options": {"temperature": 0, "repeat_penalty": 1, "num_predict": 8}}`)
	if code != 200 {
		t.Fatalf("the next request: %d %s", code, b)
	}
	resp, err = http.Get(base + "/v1/jobs?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&jobs)
	resp.Body.Close()
	resp, err = http.Get(base + "/v1/jobs/" + jobs.Jobs[0].ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	events, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(events), "prompt tokens from its cache") {
		t.Errorf("the next request's draft did not start from its kept session:\n%s", events)
	}
}

// TestDraftRefused: pairs that cannot work are refused before anything
// loads, each naming the pair and why.
func TestDraftRefused(t *testing.T) {
	m, d := shared.Path(t, "models/tiny-llama-Q8_0.gguf"), shared.Path(t, "models/tiny-llama-Q4_0.gguf")
	other := shared.WithToken(t, d, "other", 9, "<glass>")
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"batched", Config{Drafts: []string{"tiny-llama-Q8_0=" + d}, Parallel: 2}, "load: --draft: speculative decoding runs one generation at a time (--parallel 1)"},
		{"unknown model", Config{Drafts: []string{"nope=" + d}}, `load: --draft nope=` + d + `: load: model "nope"`},
		{"missing draft", Config{Drafts: []string{"tiny-llama-Q8_0=/nonexistent/d.gguf"}}, `load: --draft tiny-llama-Q8_0=/nonexistent/d.gguf: load: model "/nonexistent/d.gguf": no such file`},
		{"another vocabulary", Config{Drafts: []string{"tiny-llama-Q8_0=" + other}}, "the draft model's token 9 is"},
		{"no draft", Config{Drafts: []string{"tiny-llama-Q8_0"}}, `load: --draft "tiny-llama-Q8_0": want MODEL=DRAFT`},
		{"empty model", Config{Drafts: []string{"=" + d}}, "want MODEL=DRAFT"},
		{"too many proposals", Config{DraftMax: 65}, "--draft-max: generate: 65 proposals per step is out of range (1 to 64)"},
		{"no proposals", Config{DraftMax: -1}, "--draft-max: generate: -1 proposals per step is out of range (1 to 64)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Models = []string{m}
			b, err := tryBackend(tc.cfg)
			if err == nil {
				b.Close()
				t.Fatalf("accepted, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}
