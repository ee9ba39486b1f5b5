package synth

import (
	"fmt"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
)

// SentencePiece token types (tokenizer.ggml.token_type), as llama.cpp
// defines them (enum llama_token_type).
const (
	tokNormal  = 1
	tokUnknown = 2
	tokControl = 3
	tokByte    = 6
)

// SyntheticVocab builds a valid SentencePiece vocabulary of n tokens
// (n ≥ 259 + 95), laid out like Llama 2's: 0 <unk>, 1 <s>, 2 </s>, 3..258
// the byte-fallback tokens <0x00>..<0xFF>, then pieces in descending
// score: "▁" and the 94 printable ASCII characters, then "▁" + letter,
// two-letter and "▁"+two-letter pieces, and so on, each piece the
// concatenation of two shorter ones already present, so the score-based
// SentencePiece merge can reach every piece. Any text encodes (unknown
// characters fall back to bytes).
func SyntheticVocab(n int) (tokens []string, scores []float32, types []int32, err error) {
	const fixed = 3 + 256
	if n < fixed+95 {
		return nil, nil, nil, fmt.Errorf("synth: a synthetic vocabulary needs at least %d tokens, got %d", fixed+95, n)
	}
	tokens = make([]string, 0, n)
	types = make([]int32, 0, n)
	tokens = append(tokens, "<unk>", "<s>", "</s>")
	types = append(types, tokUnknown, tokControl, tokControl)
	for b := 0; b < 256; b++ {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, tokByte)
	}
	seen := map[string]bool{}
	add := func(p string) bool {
		if len(tokens) == n || seen[p] {
			return len(tokens) < n
		}
		seen[p] = true
		tokens = append(tokens, p)
		types = append(types, tokNormal)
		return len(tokens) < n
	}
	const space = "\u2581" // SentencePiece's visible space
	add(space)
	for c := byte('!'); c <= '~'; c++ {
		add(string(c))
	}
	// Grow pieces letter by letter: level k holds lowercase strings of
	// length k, each with and without the leading space.
	const letters = "etaoinshrdlcumwfgypbvkjxqz" // English frequency order
	level := []string{""}
	for len(tokens) < n {
		var next []string
		for _, p := range level {
			for _, c := range letters {
				next = append(next, p+string(c))
			}
		}
		for _, p := range next {
			if !add(space+p) || !add(p) {
				break
			}
		}
		level = next
	}
	scores = make([]float32, n)
	for i := fixed; i < n; i++ {
		scores[i] = -float32(i - fixed) // higher score merges first
	}
	return tokens, scores, types, nil
}

// setSyntheticTokenizer writes the tokenizer keys of a synthetic vocab.
func setSyntheticTokenizer(m *gguf.Metadata, n int) error {
	tokens, scores, types, err := SyntheticVocab(n)
	if err != nil {
		return err
	}
	kv := []struct {
		k string
		v any
	}{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.pre", "default"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
	}
	for _, e := range kv {
		if err := m.Set(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// copyTokenizer copies every tokenizer.* key of src (tokens, scores,
// merges, special ids, pre-tokenizer, chat template) and returns the
// vocabulary size.
func copyTokenizer(m *gguf.Metadata, src *gguf.File) (int, error) {
	toks, err := src.Meta.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return 0, fmt.Errorf("synth: vocabulary file %s: %w", src.Path, err)
	}
	for _, kv := range src.Meta.KVs {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		if err := m.Set(kv.Key, kv.Value.Any()); err != nil {
			return 0, fmt.Errorf("synth: vocabulary file %s: key %s: %w", src.Path, kv.Key, err)
		}
	}
	return len(toks), nil
}
