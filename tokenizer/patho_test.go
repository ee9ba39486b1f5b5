package tokenizer

import (
	"strings"
	"testing"
	"time"
)

// TestPathologicalInputs: long runs without word boundaries stay fast
// (no quadratic step in pre-tokenizing, merging or special-token search).
func TestPathologicalInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	inputs := map[string]string{
		"letters": strings.Repeat("a", 100000),
		"spaces":  strings.Repeat(" ", 100000),
		"digits":  strings.Repeat("7", 100000),
		"cjk":     strings.Repeat("漢字", 30000),
		"newline": strings.Repeat("\n", 100000),
		"punct":   strings.Repeat("!?", 50000),
		"bytes":   strings.Repeat("\xff", 100000),
	}
	for _, rel := range []string{"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-gpt-neox.gguf",
		"vocab/ggml-vocab-deepseek-llm.gguf", "vocab/ggml-vocab-bert-bge.gguf"} {
		tok := load(t, rel)
		for name, in := range inputs {
			start := time.Now()
			if _, err := tok.Encode(in, true, true); err != nil {
				t.Fatal(err)
			}
			// A quadratic tokenizer takes minutes on these inputs and a
			// linear one milliseconds; the bound between them is wide
			// enough for a machine loaded many times over.
			if d := time.Since(start); d > time.Minute {
				t.Errorf("%s %s: %v for %d bytes", rel, name, d, len(in))
			} else {
				t.Logf("%s %s: %v", rel, name, d)
			}
		}
	}
}
