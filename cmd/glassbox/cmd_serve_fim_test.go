package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestServeFIM: fill in the middle through the real backend, on
// stories260K with FIM tokens written over ids 505–507: llama-server's
// /infill and Ollama's suffix give the greedy text of /completion fed the
// FIM prompt as ids ([BOS] <PRE> prefix <SUF> suffix <MID>; Ollama with
// llama-server's repeat penalty, 1); a model
// without FIM tokens answers with the encode stage's error.
func TestServeFIM(t *testing.T) {
	path := fimModel(t)
	base := startServe(t, "--ctx", "256", "--model", path)
	prefix, suffix := "Once upon a time, there was a", " The cat was happy."
	tokens := func(s string) []int {
		var tok struct{ Tokens []int }
		code, b := postBody(t, base+"/tokenize", fmt.Sprintf(`{"content": %q}`, s))
		if err := json.Unmarshal(b, &tok); code != 200 || err != nil {
			t.Fatalf("/tokenize: %d %s", code, b)
		}
		return tok.Tokens
	}
	ids := slices.Concat([]int{1, 505}, tokens(prefix), []int{506}, tokens(suffix), []int{507})
	idsJSON, _ := json.Marshal(ids)
	var want, got struct{ Content string }
	code, b := postBody(t, base+"/completion", `{"prompt": `+string(idsJSON)+`, "n_predict": 12, "temperature": 0}`)
	if err := json.Unmarshal(b, &want); code != 200 || err != nil || want.Content == "" {
		t.Fatalf("/completion: %d %s", code, b)
	}
	code, b = postBody(t, base+"/infill", fmt.Sprintf(`{"input_prefix": %q, "input_suffix": %q, "n_predict": 12, "temperature": 0}`, prefix, suffix))
	if err := json.Unmarshal(b, &got); code != 200 || err != nil || got.Content != want.Content {
		t.Errorf("/infill: %d %s, want content %q", code, b, want.Content)
	}
	var gen struct{ Response string }
	code, b = postBody(t, base+"/api/generate", fmt.Sprintf(`{"model": "fim", "prompt": %q, "suffix": %q, "stream": false, "options": {"num_predict": 12, "temperature": 0, "repeat_penalty": 1}}`, prefix, suffix))
	if err := json.Unmarshal(b, &gen); code != 200 || err != nil || gen.Response != want.Content {
		t.Errorf("ollama suffix: %d %s, want %q", code, b, want.Content)
	}

	plain := startServe(t, "--ctx", "256", "--model", shared.Path(t, "models/stories260K.gguf"))
	code, b = postBody(t, plain+"/infill", `{"input_prefix": "a", "input_suffix": "b", "n_predict": 2}`)
	if code != 400 || !strings.Contains(string(b), "no fill-in-the-middle tokens") || !strings.Contains(string(b), `"stage":"encode"`) {
		t.Errorf("no FIM tokens: %d %s", code, b)
	}
}

// fimModel is stories260K with FIM tokens written over ids 505–507.
func fimModel(t *testing.T) string {
	t.Helper()
	return shared.WithTokens(t, shared.Path(t, "models/stories260K.gguf"), "fim", 505, "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")
}

// TestRunFIM: run --suffix generates what run --prompt-ids does for the
// FIM prompt spelled in ids; --suffix with --chat is refused.
func TestRunFIM(t *testing.T) {
	path := fimModel(t)
	out, errs, code := runCmd(t, "", "tokenize", "-m", path, "--no-bos", "Once upon a")
	if code != 0 {
		t.Fatalf("tokenize: %s", errs)
	}
	pre := strings.Fields(out)
	out, errs, code = runCmd(t, "", "tokenize", "-m", path, "--no-bos", " was happy.")
	if code != 0 {
		t.Fatalf("tokenize: %s", errs)
	}
	ids := "1 505 " + strings.Join(pre, " ") + " 506 " + strings.Join(strings.Fields(out), " ") + " 507"
	want, errs, code := runCmd(t, "", "run", "-m", path, "--temp", "0", "-n", "10", "--no-journal", "--prompt-ids", ids)
	if code != 0 {
		t.Fatalf("run --prompt-ids: %s", errs)
	}
	got, errs, code := runCmd(t, "", "run", "-m", path, "--temp", "0", "-n", "10", "--no-journal", "--suffix", " was happy.", "Once upon a")
	if code != 0 || got != want || got == "" {
		t.Errorf("run --suffix: %q (%s), want %q", got, errs, want)
	}
	if _, errs, code = runCmd(t, "", "run", "-m", path, "--chat", "--suffix", "b", "a"); code == 0 || !strings.Contains(errs, "without --chat") {
		t.Errorf("--suffix --chat: %d %s", code, errs)
	}
}
