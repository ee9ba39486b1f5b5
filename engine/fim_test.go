package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// fimText loads stories260K with tags written over its last tokens: the
// FIM prefix, suffix and middle tokens, and (repo) the repository and
// file-separator ones.
func fimText(t *testing.T, repo bool) *Text {
	t.Helper()
	tags := []string{"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"}
	if repo {
		tags = append(tags, "<|repo_name|>", "<|file_sep|>")
	}
	path := shared.WithTokens(t, shared.Path(t, "models/stories260K.gguf"), "fim", 505, tags...)
	tx, err := LoadText(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return tx
}

// TestFIM: a fill-in-the-middle prompt is laid out as llama.cpp's server
// lays it out — context files (repository-level with the repo and file
// tokens, else after snippet lines), BOS, prefix, suffix, middle — and
// runs; a vocabulary without the tokens is an encode-stage error.
func TestFIM(t *testing.T) {
	const pre, suf, mid, rep, sep = 505, 506, 507, 508, 509
	prefix, suffix := "Once upon a", " was a cat."
	files := []FIMFile{{Name: "a.txt", Text: "Lily and Ben"}, {Text: "The dog"}}
	for _, tc := range []struct {
		name  string
		repo  bool
		files []FIMFile
		want  func(enc func(string) []int) []int
	}{
		{"plain", false, nil, func(enc func(string) []int) []int {
			return slices.Concat([]int{1, pre}, enc(prefix), []int{suf}, enc(suffix), []int{mid})
		}},
		{"snippets", false, files, func(enc func(string) []int) []int {
			return slices.Concat(enc(fimSnippet), enc("Lily and Ben"), enc(fimSnippet), enc("The dog"),
				[]int{1, pre}, enc(prefix), []int{suf}, enc(suffix), []int{mid})
		}},
		{"repository", true, files, func(enc func(string) []int) []int {
			return slices.Concat([]int{rep}, enc("myproject\n"), []int{sep}, enc("a.txt\n"), enc("Lily and Ben"),
				[]int{sep}, enc("tmp\n"), enc("The dog"), []int{sep}, enc("filename\n"),
				[]int{1, pre}, enc(prefix), []int{suf}, enc(suffix), []int{mid})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := fimText(t, tc.repo)
			tok, err := tx.Tokenizer()
			if err != nil {
				t.Fatal(err)
			}
			enc := func(s string) []int {
				ids, err := tok.Encode(s, false, false)
				if err != nil {
					t.Fatal(err)
				}
				return ids
			}
			treq := TextRequest{Prompt: prefix, FIM: &FIM{Suffix: suffix, Files: tc.files}, MaxTokens: 8}
			req, err := tx.Prepare(context.Background(), treq)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want(enc); !slices.Equal(req.Prompt, want) {
				t.Errorf("prompt %v\nwant   %v", req.Prompt, want)
			}
			res, err := tx.Generate(context.Background(), treq)
			if err != nil || len(res.Tokens) == 0 {
				t.Fatalf("generate: %v, %d tokens", err, len(res.Tokens))
			}
		})
	}
	plain, err := LoadText(context.Background(), shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	_, err = plain.Prepare(context.Background(), TextRequest{Prompt: "a", FIM: &FIM{Suffix: "b"}})
	if err == nil || !strings.Contains(err.Error(), "no fill-in-the-middle tokens") || !strings.Contains(err.Error(), "encode") {
		t.Errorf("stories260K: %v", err)
	}
}
