package chat

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// memGGUF builds a weightless GGUF in memory with the given metadata.
func memGGUF(t *testing.T, kv map[string]any) *gguf.File {
	t.Helper()
	var meta gguf.Metadata
	for _, k := range []string{"general.architecture", keyTokens, keyBOS, keyEOS, KeyTemplate, KeyTemplate + ".tool_use", KeyTemplate + ".rag"} {
		if v, ok := kv[k]; ok {
			if err := meta.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, &meta, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFromGGUF(t *testing.T) {
	toks := []string{"<unk>", "<s>", "</s>", "a"}
	hello := []Message{{Role: "user", Content: "Hello"}}
	tests := []struct {
		name    string
		kv      map[string]any
		want    string // rendered hello with generation prompt
		wantErr string
		origin  string
	}{
		{"no template: ChatML fallback", map[string]any{keyTokens: toks, keyBOS: uint32(1), keyEOS: uint32(2)},
			"<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "", "fallback"},
		{"empty template: fallback", map[string]any{KeyTemplate: "", keyTokens: toks},
			"<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "", "fallback"},
		{"template with token texts", map[string]any{KeyTemplate: "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}", keyTokens: toks, keyBOS: uint32(1), keyEOS: uint32(2)},
			"<s>Hello</s>", "", "gguf"},
		{"BOS id none (0xFFFFFFFF) and EOS out of range", map[string]any{KeyTemplate: "[{{ bos_token }}|{{ eos_token }}]", keyTokens: toks, keyBOS: uint32(0xFFFFFFFF), keyEOS: int32(99)},
			"[|]", "", "gguf"},
		{"no token list", map[string]any{KeyTemplate: "[{{ bos_token }}]", keyBOS: uint32(1)},
			"[]", "", "gguf"},
		{"template of the wrong type", map[string]any{KeyTemplate: uint32(7)}, "", "wrong type", ""},
		{"template that does not compile", map[string]any{KeyTemplate: "{% if %}"}, "", "compile", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := FromGGUF(memGGUF(t, tt.kv))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "encode: ") {
					t.Fatalf("err = %v, want an encode error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tmpl.Origin, tt.origin) {
				t.Errorf("origin %q, want prefix %q", tmpl.Origin, tt.origin)
			}
			got, err := tmpl.Render(hello, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSharedModels loads the template (or the fallback) of every shared
// model and vocabulary file and renders a conversation with it.
func TestSharedModels(t *testing.T) {
	tests := []struct {
		file     string
		bos, eos string
		fallback bool
		contains string
	}{
		{"models/stories260K.gguf", "<s>", "</s>", true, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"},
		{"vocab/ggml-vocab-llama-spm.gguf", "<s>", "</s>", true, "<|im_start|>assistant\n"},
		{"vocab/ggml-vocab-phi-3.gguf", "<s>", "<|endoftext|>", false, "<|user|>\nHello<|end|>\n<|assistant|>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := gguf.Open(shared.Path(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tmpl, err := FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			if tmpl.BOS != tt.bos || tmpl.EOS != tt.eos {
				t.Errorf("BOS, EOS = %q, %q; want %q, %q", tmpl.BOS, tmpl.EOS, tt.bos, tt.eos)
			}
			if isFallback := tmpl.Source == FallbackSource; isFallback != tt.fallback {
				t.Errorf("fallback = %v, want %v", isFallback, tt.fallback)
			}
			got, err := tmpl.Render([]Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello"}}, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, tt.contains) {
				t.Errorf("rendered %q, want it to contain %q", got, tt.contains)
			}
		})
	}
}

func TestErrorIs(t *testing.T) {
	_, err := New("", "x", "", "")
	if !errors.Is(err, ErrEmpty) {
		t.Errorf("errors.Is(%v, ErrEmpty) = false", err)
	}
}

func TestNamed(t *testing.T) {
	f := memGGUF(t, map[string]any{KeyTemplate: "default", KeyTemplate + ".tool_use": "{{ bos_token }}tools", KeyTemplate + ".rag": "rag",
		keyTokens: []string{"<unk>", "<s>"}, keyBOS: uint32(1)})
	if got := Names(f); len(got) != 2 || got[0] != "rag" || got[1] != "tool_use" {
		t.Errorf("Names = %v, want [rag tool_use]", got)
	}
	tmpl, err := FromGGUFNamed(f, "tool_use")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tmpl.Render(nil, false, nil); err != nil || out != "<s>tools" {
		t.Errorf("tool_use renders %q, %v", out, err)
	}
	if _, err := FromGGUFNamed(f, "nope"); err == nil || !strings.Contains(err.Error(), "named templates in this model: rag, tool_use") {
		t.Errorf("missing variant: err = %v", err)
	}
	if tmpl, err := FromGGUFNamed(f, ""); err != nil || tmpl.Source != "default" {
		t.Errorf("empty name: %q, %v", tmpl.Source, err)
	}
}

// TestEveryVocab: every shared vocabulary file yields a template (its own
// or the fallback) that renders a conversation.
func TestEveryVocab(t *testing.T) {
	dir := filepath.Dir(shared.Path(t, "vocab/ggml-vocab-llama-spm.gguf"))
	files, err := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if err != nil || len(files) < 8 {
		t.Fatalf("found %d vocab files: %v", len(files), err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tmpl, err := FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tmpl.Render([]Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"}, {Role: "user", Content: "Bye"}}, true, nil)
			if err != nil || !strings.Contains(out, "Bye") {
				t.Errorf("render: %q, %v", out, err)
			}
		})
	}
}
