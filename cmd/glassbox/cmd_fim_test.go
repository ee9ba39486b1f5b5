package main

import (
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

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
