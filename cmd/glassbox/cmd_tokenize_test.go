package main

import (
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

func TestTokenizeCommands(t *testing.T) {
	stories := shared.Path(t, "models/stories260K.gguf")
	gpt2 := shared.Path(t, "vocab/ggml-vocab-gpt-2.gguf")
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{"stories prompt with BOS", "", []string{"tokenize", "-m", stories, "Once upon a time"}, "1 403 407 261 378\n", "", 0},
		{"flags after text", "", []string{"tokenize", "Once upon a time", "-m", stories, "--no-bos"}, "403 407 261 378\n", "", 0},
		{"stdin byte for byte", "Once upon a time\n", []string{"tokenize", "-m", stories, "--no-bos"}, "403 407 261 378 13\n", "", 0},
		{"json", "", []string{"tokenize", "-m", stories, "--json", "Once"}, `[{"id":1,"piece":"<s>"},{"id":403,"piece":" Once"}]` + "\n", "", 0},
		{"json byte pieces", "", []string{"tokenize", "-m", stories, "--json", "--no-bos", "x🦙"},
			`[{"id":410,"piece":" "},{"id":444,"piece":"x"},{"id":243,"piece":"\ufffd","bytes":[240]},{"id":162,"piece":"\ufffd","bytes":[159]},{"id":169,"piece":"\ufffd","bytes":[166]},{"id":156,"piece":"\ufffd","bytes":[153]}]` + "\n", "", 0},
		{"special text as plain text", "", []string{"tokenize", "-m", gpt2, "<|endoftext|>"}, "27 91 437 1659 5239 91 29\n", "", 0},
		{"special text parsed", "", []string{"tokenize", "-m", gpt2, "--special", "<|endoftext|>"}, "50256\n", "", 0},
		{"two texts", "", []string{"tokenize", "-m", stories, "a", "b"}, "", "one argument", 2},
		{"no model", "", []string{"tokenize", "x"}, "", "load: no model", 1},
		{"detokenize", "", []string{"detokenize", "-m", stories, "1", "403", "407", "261", "378"}, "Once upon a time", "", 0},
		{"detokenize special", "", []string{"detokenize", "-m", stories, "--special", "1", "403"}, "<s> Once", "", 0},
		{"detokenize from stdin", "403 407\n261 378\n", []string{"detokenize", "-m", stories}, "Once upon a time", "", 0},
		{"detokenize bad id", "", []string{"detokenize", "-m", stories, "512"}, "", "decode: argument 1: id 512 is outside the vocabulary (0..511)", 1},
		{"detokenize not a number", "", []string{"detokenize", "-m", stories, "x"}, "", `decode: argument 1: "x" is not a token id`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCmd(t, tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if out != tt.wantOut {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			if tt.wantErr != "" && !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.wantErr)
			}
		})
	}
}
