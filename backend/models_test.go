package backend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestShapeCache: a model file's plan shape is read once, and read
// again when the file changes.
func TestShapeCache(t *testing.T) {
	src, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := shape(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := shape(path); err != nil || b != a {
		t.Errorf("second read of an unchanged file: %p, %v (first %p)", b, err, a)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if c, err := shape(path); err != nil || c == a {
		t.Errorf("a changed file gave the cached shape (%v)", err)
	}
	if _, err := shape(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("a missing file gave a shape")
	}
}

// TestCapabilities: /api/show's capabilities follow Ollama's rules.
func TestCapabilities(t *testing.T) {
	for _, tc := range []struct {
		path string
		want string
	}{
		{shared.Path(t, "models/stories260K.gguf"), "completion"},
		{shared.WithChatTemplate(t, "models/stories260K.gguf", shared.R1Template, "r1"), "completion thinking"},
		{shared.WithChatTemplate(t, "models/stories260K.gguf", "{% if tools %}{{ tools }}{% endif %}{{ messages }}", "tools"), "completion tools"},
		{shared.WithChatTemplate(t, "models/stories260K.gguf", "{% if tools %}{{ tools }}{% endif %}{{ messages }}<|start|>assistant<|channel|>", "harmony"), "completion tools thinking"},
		{shared.WithMeta(t, "models/tiny-llama-F32.gguf", "embedder", map[string]any{"llama.pooling_type": uint32(3)}), "embedding"},
	} {
		f, err := gguf.Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, _ := f.Meta.String(chat.KeyTemplate)
		if got := strings.Join(capabilities(f, tmpl), " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.path, got, tc.want)
		}
		f.Close()
	}
}
