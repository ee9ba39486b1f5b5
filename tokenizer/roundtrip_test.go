package tokenizer

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// roundTripTexts is a broad set: scripts, code, whitespace runs, emoji,
// control characters.
var roundTripTexts = []string{
	"", " ", "   ", "\t", "\n", "\n\n\n", " \n \n", "\r\n", "Hello world", " Hello world", "Hello  world   ",
	"  leading and trailing  ", "I'm here, you're there; we'll see. DON'T!", "can't won't shouldn't've",
	"0 12 345 6789 1234567890 3.14159 -42 1e10 0xFF", "нещо на Български", "Ελληνικά κείμενα",
	"日本語のテキスト、漢字とかな。", "我想在apple工作1314151天～", "한국어 텍스트", "ภาษาไทย", "العربية نص",
	"हिन्दी पाठ", "e\u0301 cafe\u0301 naïve façade", "🦙 🚀 😶\u200d🌫️ ✅ 👍🏽 🇫🇷", "ＡＢＣ ｘｙｚ",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "    indented\n        more\n\treturn x+y*3;",
	"if (a <= b && c != d) { return; } // comment", "<html><body class=\"x\">&amp;</body></html>",
	"$100 + 5% = ^_^ ~~ || `cmd`", "!!!!!! ??? ...", "a\u00a0b\u3000c\u2003d\u2028e", "tab\tsep\tvalues\t\t",
	"bell\a nul\x00 esc\x1b del\x7f ctl\x01\x02\x1f", "mixed \r\n\t \r\r\n\n end",
	strings.Repeat(" ", 100) + "x" + strings.Repeat("\n", 50), strings.Repeat("ab", 300),
	"email@example.com https://example.com/a/b?q=1&r=2#frag", "CamelCase snake_case kebab-case",
}

// lossless says which texts a vocabulary reproduces exactly.
func lossless(name, text string) bool {
	switch name {
	case "ggml-vocab-bert-bge.gguf":
		return false // WordPiece lowercases and drops spacing
	case "ggml-vocab-deepseek-coder.gguf", "ggml-vocab-deepseek-llm.gguf":
		// Their byte-level tokens for bytes 0x80..0xFF are user-defined
		// tokens, which decode as their text (as in llama.cpp).
		for i := 0; i < len(text); i++ {
			if text[i] >= 0x80 {
				return false
			}
		}
	}
	return true
}

func vocabFiles(t *testing.T) []string {
	dir := filepath.Dir(shared.Path(t, "vocab/README.md"))
	files, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if len(files) < 12 {
		t.Fatalf("found %d vocab files in %s, want 12", len(files), dir)
	}
	rel := []string{"models/stories260K.gguf"}
	for _, f := range files {
		rel = append(rel, "vocab/"+filepath.Base(f))
	}
	return rel
}

func TestRoundTrip(t *testing.T) {
	for _, rel := range vocabFiles(t) {
		name := filepath.Base(rel)
		t.Run(name, func(t *testing.T) {
			tok := load(t, rel)
			for _, text := range roundTripTexts {
				for _, addSpecial := range []bool{false, true} {
					ids, err := tok.Encode(text, addSpecial, false)
					if err != nil {
						t.Fatalf("%q: %v", text, err)
					}
					for _, id := range ids {
						if id < 0 || id >= tok.VocabSize() {
							t.Fatalf("%q: id %d outside vocabulary of %d", text, id, tok.VocabSize())
						}
					}
					if !lossless(name, text) {
						continue
					}
					if got := tok.Decode(ids); got != text {
						t.Errorf("addSpecial=%v %q -> %v -> %q", addSpecial, text, ids, got)
					}
					var sb strings.Builder
					d := tok.NewStreamDecoder()
					for _, id := range ids {
						sb.WriteString(d.Add(id))
					}
					sb.WriteString(d.Flush())
					if sb.String() != text {
						t.Errorf("stream %q -> %q", text, sb.String())
					}
				}
			}
		})
	}
}

// TestInvalidUTF8 pins the documented behaviour: SentencePiece keeps the
// bytes (byte fallback); byte-level BPE sees each invalid byte as U+FFFD;
// WordPiece drops it.
func TestInvalidUTF8(t *testing.T) {
	in := "a\xffb\xe2\x82 c\xc3"
	for _, c := range []struct{ rel, want string }{
		{"models/stories260K.gguf", in},
		{"vocab/ggml-vocab-llama-spm.gguf", in},
		{"vocab/ggml-vocab-gpt-2.gguf", "a\uFFFDb\uFFFD\uFFFD c\uFFFD"},
		{"vocab/ggml-vocab-falcon.gguf", "a\uFFFDb\uFFFD\uFFFD c\uFFFD"},
	} {
		tok := load(t, c.rel)
		ids, err := tok.Encode(in, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Decode(ids); got != c.want {
			t.Errorf("%s: decode(encode(%q)) = %q, want %q", c.rel, in, got, c.want)
		}
	}
	tok := load(t, "vocab/ggml-vocab-bert-bge.gguf")
	a, _ := tok.Encode("a\xffb", false, false)
	b, _ := tok.Encode("ab", false, false)
	if tok.Decode(a) != tok.Decode(b) {
		t.Errorf("bert: invalid byte not dropped: %v vs %v", a, b)
	}
}

// TestModelsLoad: every shared model carries stories260K's vocabulary
// (models/README.md), so each must tokenize the prompt the same way.
func TestModelsLoad(t *testing.T) {
	dir := filepath.Dir(shared.Path(t, "models/stories260K.gguf"))
	files, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if len(files) < 2 {
		t.Fatalf("found %d models in %s", len(files), dir)
	}
	for _, f := range files {
		tok := load(t, "models/"+filepath.Base(f))
		ids, err := tok.Encode("Once upon a time", true, false)
		if err != nil || fmt.Sprint(ids) != "[1 403 407 261 378]" {
			t.Errorf("%s: %v %v", filepath.Base(f), ids, err)
		}
	}
}
