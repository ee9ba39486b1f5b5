package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// embedLines parses embed's output: one JSON array per line.
func embedLines(t *testing.T, out string) [][]float32 {
	t.Helper()
	var vs [][]float32
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v []float32
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		vs = append(vs, v)
	}
	return vs
}

func squaredLength(v []float32) float64 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	return ss
}

func TestEmbedCommand(t *testing.T) {
	m := shared.Path(t, "models/tiny-llama-F32.gguf")
	homeDir := t.TempDir()
	out, errs, code := runCmd(t, "", "embed", "-m", m, "--home", homeDir, "Once upon a time", "a fox")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	vs := embedLines(t, out)
	if len(vs) != 2 || len(vs[0]) != 256 || math.Abs(squaredLength(vs[0])-1) > 1e-5 {
		t.Fatalf("%d vectors of %d values, squared length %g", len(vs), len(vs[0]), squaredLength(vs[0]))
	}
	// Inputs from a file; --raw gives the same direction, not normalized.
	out, errs, code = runCmd(t, "Once upon a time\n\na fox\n", "embed", "-m", m, "--no-journal", "-f", "-", "--raw")
	raw := embedLines(t, out)
	if code != 0 || len(raw) != 2 {
		t.Fatalf("code %d, %d vectors: %s", code, len(raw), errs)
	}
	n := math.Sqrt(squaredLength(raw[1]))
	for i := range raw[1] {
		if math.Abs(float64(raw[1][i])/n-float64(vs[1][i])) > 1e-5 {
			t.Fatalf("raw value %d: %g / %g, normalized %g", i, raw[1][i], n, vs[1][i])
		}
	}
	// --json: the job's events, the vectors in its result.
	out, errs, code = runCmd(t, "", "embed", "-m", m, "--no-journal", "--json", "--dimensions", "8", "--pooling", "last", "a fox")
	var res struct {
		Embeddings [][]float32
		Pooling    string
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev api.Event
		json.Unmarshal([]byte(l), &ev)
		if ev.Type == api.TypeResult {
			json.Unmarshal(ev.Result, &res)
		}
	}
	if code != 0 || len(res.Embeddings) != 1 || len(res.Embeddings[0]) != 8 || res.Pooling != "last" {
		t.Fatalf("code %d, result %+v: %s", code, res, errs)
	}
	// The journal has the job.
	out, _, _ = runCmd(t, "", "jobs", "--home", homeDir)
	if !strings.Contains(out, "embed") {
		t.Errorf("jobs: %s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"embed", "-m", m, "--no-journal"}, "no inputs to embed"},
		{[]string{"embed", "-m", m, "--no-journal", "--ctx", "3", "Once upon a time"}, "tokens but the context holds 3"},
		{[]string{"embed", "-m", m, "--no-journal", "--pooling", "max", "a"}, `pooling "max" is not supported`},
	} {
		_, errs, code := runCmd(t, "", tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestServeEmbed: the server's embeddings endpoints give the vectors the
// embed command gives, through the real engine.
func TestServeEmbed(t *testing.T) {
	m := shared.Path(t, "models/tiny-llama-F32.gguf")
	out, errs, code := runCmd(t, "", "embed", "-m", m, "--no-journal", "Once upon a time", "a fox")
	if code != 0 {
		t.Fatalf("embed: %s", errs)
	}
	want := embedLines(t, out)
	base := startServe(t, "--model", m)
	post := func(path, body string, v any) {
		t.Helper()
		code, b := postBody(t, base+path, body)
		if code != 200 {
			t.Fatalf("%s: HTTP %d %s", path, code, b)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	same := func(what string, got, want []float32) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
		}
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 1e-6 {
				t.Fatalf("%s: value %d is %g, the command's %g", what, i, got[i], want[i])
			}
		}
	}
	var ollama struct {
		Embeddings [][]float32 `json:"embeddings"`
		Count      int         `json:"prompt_eval_count"`
	}
	post("/api/embed", `{"model": "tiny-llama-F32", "input": ["Once upon a time", "a fox"]}`, &ollama)
	if len(ollama.Embeddings) != 2 || ollama.Count == 0 {
		t.Fatalf("%+v", ollama)
	}
	same("/api/embed 0", ollama.Embeddings[0], want[0])
	same("/api/embed 1", ollama.Embeddings[1], want[1])
	var openai struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	post("/v1/embeddings", `{"model": "tiny-llama-F32", "input": "a fox", "encoding_format": "base64"}`, &openai)
	raw, err := base64.StdEncoding.DecodeString(openai.Data[0].Embedding)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	same("/v1/embeddings", v, want[1])
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
