package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

var (
	loadMu sync.Mutex
	loaded = map[string]*Tokenizer{}
)

// load builds the tokenizer of a shared GGUF file (relative to the shared
// folder), once per test binary: a Tokenizer is immutable and does not
// refer to the file after FromGGUF returns, which this also exercises.
func load(t testing.TB, rel string) *Tokenizer {
	t.Helper()
	loadMu.Lock()
	defer loadMu.Unlock()
	if tok, ok := loaded[rel]; ok {
		return tok
	}
	f, err := gguf.Open(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromGGUF(f)
	f.Close()
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	loaded[rel] = tok
	return tok
}

// readVectors reads llama.cpp's test-tokenizer-0 format: texts separated
// by "\n__ggml_vocab_test__\n", one line of " id id ..." per text.
func readVectors(t *testing.T, inp, out string) ([]string, [][]int) {
	t.Helper()
	ib, err := os.ReadFile(inp)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	texts := strings.Split(string(ib), sep)
	if texts[len(texts)-1] != "" {
		t.Fatalf("%s: does not end with the separator", inp)
	}
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(ob), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d texts but %d result lines", inp, len(texts), len(lines))
	}
	want := make([][]int, len(lines))
	for i, l := range lines {
		for _, f := range strings.Fields(l) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s line %d: %v", out, i+1, err)
			}
			want[i] = append(want[i], n)
		}
	}
	return texts, want
}

// TestVectors runs every .inp/.out pair in the shared vocab folder.
func TestVectors(t *testing.T) {
	dir := filepath.Dir(shared.Path(t, "vocab/README.md"))
	inps, _ := filepath.Glob(filepath.Join(dir, "*.gguf.inp"))
	inps = append(inps, filepath.Join(dir, "stories260K.gguf.inp"))
	seen := map[string]bool{}
	for _, inp := range inps {
		if seen[inp] {
			continue
		}
		seen[inp] = true
		name := strings.TrimSuffix(filepath.Base(inp), ".inp")
		model := "vocab/" + name
		if name == "stories260K.gguf" {
			model = "models/" + name
		}
		t.Run(name, func(t *testing.T) {
			tok := load(t, model)
			texts, want := readVectors(t, inp, strings.TrimSuffix(inp, ".inp")+".out")
			fails := 0
			for i, text := range texts {
				got, err := tok.Encode(text, false, false)
				if err != nil {
					t.Errorf("text %d %q: %v", i, text, err)
					continue
				}
				if fmt.Sprint(got) != fmt.Sprint(want[i]) {
					fails++
					t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want[i])
				}
			}
			if fails > 0 {
				t.Logf("%d of %d texts differ", fails, len(texts))
			}
		})
	}
}

func TestStoriesPrompt(t *testing.T) {
	tok := load(t, "models/stories260K.gguf")
	got, err := tok.Encode("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 403, 407, 261, 378}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if s := tok.Decode(got); s != "Once upon a time" {
		t.Fatalf("Decode = %q", s)
	}
}
