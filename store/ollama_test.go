package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

func TestIsOllamaName(t *testing.T) {
	for _, tc := range []struct {
		ref                     string
		ok                      bool
		base, ns, model, tag, n string
	}{
		{"llama3.2", true, "R", "library", "llama3.2", "latest", "llama3.2:latest"},
		{"llama3.2:1b", true, "R", "library", "llama3.2", "1b", "llama3.2:1b"},
		{"qwen3:30b-a3b-q4_K_M", true, "R", "library", "qwen3", "30b-a3b-q4_K_M", "qwen3:30b-a3b-q4_K_M"},
		{"user/model:v2", true, "R", "user", "model", "v2", "user-model:v2"},
		{"registry.example.com:5000/team/model:tag", true, "https://registry.example.com:5000", "team", "model", "tag", "team-model:tag"},
		{"hf.co/owner/repo:Q4_K_M", false, "", "", "", "", ""},
		{"https://example.com/m.gguf", false, "", "", "", "", ""},
		{"Stories260K", false, "", "", "", "", ""},
		{"a/b/c/d", false, "", "", "", "", ""},
	} {
		if got := IsOllamaName(tc.ref); got != tc.ok {
			t.Errorf("IsOllamaName(%q) = %v, want %v", tc.ref, got, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		r, err := parseOllamaName(tc.ref, "R")
		if err != nil || r.base != tc.base || r.namespace != tc.ns || r.model != tc.model || r.tag != tc.tag || r.storeName() != tc.n {
			t.Errorf("parseOllamaName(%q) = %+v (%s), %v", tc.ref, r, r.storeName(), err)
		}
	}
}

// registryLayers are a model's layers in Ollama's registry: the GGUF
// file (its digest another's when bad), a Go template, a system message,
// parameters with one glassbox does not set, a license.
func registryLayers(model []byte, bad bool) []shared.Layer {
	params, _ := json.Marshal(map[string]any{"temperature": 0.3, "stop": []string{"END"}, "mirostat": 1})
	m := shared.Layer{MediaType: layerModel, Data: model}
	if bad {
		m.Digest = "sha256:" + strings.Repeat("0", 64)
	}
	return []shared.Layer{m, {MediaType: layerTemplate, Data: []byte("{{ .Prompt }}")}, {MediaType: layerSystem, Data: []byte("Be brief.")},
		{MediaType: layerParams, Data: params}, {MediaType: layerLicense, Data: []byte("MIT")}}
}

func TestPullOllama(t *testing.T) {
	data, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	srv := shared.OllamaRegistry(t, map[string][]shared.Layer{"library/tiny:latest": registryLayers(data, false), "user/tiny:q8": registryLayers(data, false)})
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	o := PullOptions{OllamaRegistry: srv.URL, Logf: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }}
	e, err := s.Pull(context.Background(), "tiny", o)
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "tiny:latest" || e.Ref != "tiny" || e.SHA256 != HashString(data) || e.System != "Be brief." || e.License != "MIT" ||
		e.Parameters["temperature"] != 0.3 || fmt.Sprint(e.Parameters["stop"]) != "[END]" || !e.HasProfile() {
		t.Fatalf("entry %+v", e)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "Go template") {
		t.Errorf("notes %q: want one about the template", notes)
	}
	for _, name := range []string{"tiny", "tiny:latest"} {
		if f, err := s.Find(name); err != nil || f.Name != "tiny:latest" {
			t.Errorf("Find(%q) = %+v, %v", name, f, err)
		}
	}
	if e, err := s.Pull(context.Background(), "user/tiny:q8", o); err != nil || e.Name != "user-tiny:q8" {
		t.Errorf("user/tiny:q8: %+v, %v", e, err)
	}
	if _, err := s.Pull(context.Background(), "nope", o); err == nil || !strings.Contains(err.Error(), "no model library/nope:latest in the registry") {
		t.Errorf("nope: %v", err)
	}
	if _, err := s.Pull(context.Background(), "tiny", o); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second pull: %v", err)
	}
	bad := shared.OllamaRegistry(t, map[string][]shared.Layer{"library/tiny:latest": registryLayers(data, true)})
	o.OllamaRegistry = bad.URL
	o.Name = "corrupt"
	if _, err := s.Pull(context.Background(), "tiny", o); err == nil || !strings.Contains(err.Error(), "SHA-256 mismatch") {
		t.Errorf("bad digest: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, ".partial", "corrupt.gguf.part")); !os.IsNotExist(err) {
		t.Errorf("the mismatched download was kept: %v", err)
	}
}
