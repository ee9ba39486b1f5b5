package shared

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
)

// WithChatTemplate writes a copy of the shared model rel whose
// tokenizer.chat_template is template, as name.gguf in a temporary folder
// of t, and returns its path: the tiny shared models have no template, and
// tests of what templates do (tools, thinking) need real ones.
func WithChatTemplate(t testing.TB, rel, template, name string) string {
	t.Helper()
	return WithMeta(t, rel, name, map[string]any{"tokenizer.chat_template": template})
}

// WithMeta writes a copy of the shared model rel with the metadata keys
// of set added or replaced, as name.gguf in a temporary folder of t, and
// returns its path.
func WithMeta(t testing.TB, rel, name string, set map[string]any) string {
	t.Helper()
	return Rewrite(t, Path(t, rel), name, nil, set, nil)
}

// WithToken writes a copy of the GGUF file at src whose vocabulary has
// text in place of token id (a vocabulary that differs in one token), as
// name.gguf in a temporary folder of t, and returns its path.
func WithToken(t testing.TB, src, name string, id int, text string) string {
	t.Helper()
	return WithTokens(t, src, name, id, text)
}

// WithTokens is WithToken for texts in place of the tokens from id on
// (tags a test needs, such as FIM or harmony tokens).
func WithTokens(t testing.TB, src, name string, id int, texts ...string) string {
	t.Helper()
	return WithTokensSet(t, src, name, nil, id, texts...)
}

// WithTokensSet is WithTokens with the metadata keys of set added or
// replaced.
func WithTokensSet(t testing.TB, src, name string, set map[string]any, id int, texts ...string) string {
	t.Helper()
	return Rewrite(t, src, name, func(k string, v any) (string, any) {
		if toks, ok := v.([]string); ok && k == "tokenizer.ggml.tokens" {
			toks = slices.Clone(toks)
			copy(toks[id:], texts)
			return k, toks
		}
		return k, v
	}, set, nil)
}

// Rewrite writes a copy of the GGUF file at src as name.gguf in a
// temporary folder of t and returns its path: each metadata key and value
// through key (nil: kept as they are), then the keys of set added or
// replaced, and the tensors through tensors (nil: kept).
func Rewrite(t testing.TB, src, name string, key func(k string, v any) (string, any), set map[string]any,
	tensors func([]gguf.WriteTensor) []gguf.WriteTensor) string {
	t.Helper()
	in, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var meta gguf.Metadata
	for _, kv := range in.Meta.KVs {
		k, v := kv.Key, kv.Value.Any()
		if key != nil {
			k, v = key(k, v)
		}
		if err := meta.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range set {
		if err := meta.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	var ts []gguf.WriteTensor
	for i := range in.Tensors {
		ti := &in.Tensors[i]
		ts = append(ts, gguf.WriteTensor{Name: ti.Name, Shape: ti.Shape, Type: ti.Type, Data: in.Data(ti)})
	}
	if tensors != nil {
		ts = tensors(ts)
	}
	path := filepath.Join(t.TempDir(), name+".gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gguf.Write(f, &meta, ts); err != nil {
		t.Fatal(err)
	}
	return path
}

// R1Template is a chat template in DeepSeek-R1's manner: its generation
// prompt opens a <think> block, so a reply thinks until </think>.
const R1Template = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|><think>\n{% endif %}"
