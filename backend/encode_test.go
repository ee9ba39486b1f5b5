package backend

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
)

// TestFIM: fill in the middle through the real backend, on
// stories260K with FIM tokens written over ids 505–507: llama-server's
// /infill and Ollama's suffix give the greedy text of /completion fed the
// FIM prompt as ids ([BOS] <PRE> prefix <SUF> suffix <MID>; Ollama with
// llama-server's repeat penalty, 1); a model
// without FIM tokens answers with the encode stage's error.
func TestFIM(t *testing.T) {
	path := fimModel(t)
	base, _ := serve(t, Config{Session: withCtx(256), Models: []string{path}})
	prefix, suffix := "Once upon a time, there was a", " The cat was happy."
	tokens := func(s string) []int {
		var tok struct{ Tokens []int }
		code, b := postBody(t, base+"/tokenize", fmt.Sprintf(`{"content": %q}`, s))
		if err := json.Unmarshal(b, &tok); code != 200 || err != nil {
			t.Fatalf("/tokenize: %d %s", code, b)
		}
		return tok.Tokens
	}
	ids := slices.Concat([]int{1, 505}, tokens(prefix), []int{506}, tokens(suffix), []int{507})
	idsJSON, _ := json.Marshal(ids)
	var want, got struct{ Content string }
	code, b := postBody(t, base+"/completion", `{"prompt": `+string(idsJSON)+`, "n_predict": 12, "temperature": 0}`)
	if err := json.Unmarshal(b, &want); code != 200 || err != nil || want.Content == "" {
		t.Fatalf("/completion: %d %s", code, b)
	}
	code, b = postBody(t, base+"/infill", fmt.Sprintf(`{"input_prefix": %q, "input_suffix": %q, "n_predict": 12, "temperature": 0}`, prefix, suffix))
	if err := json.Unmarshal(b, &got); code != 200 || err != nil || got.Content != want.Content {
		t.Errorf("/infill: %d %s, want content %q", code, b, want.Content)
	}
	var gen struct{ Response string }
	code, b = postBody(t, base+"/api/generate", fmt.Sprintf(`{"model": "fim", "prompt": %q, "suffix": %q, "stream": false, "options": {"num_predict": 12, "temperature": 0, "repeat_penalty": 1}}`, prefix, suffix))
	if err := json.Unmarshal(b, &gen); code != 200 || err != nil || gen.Response != want.Content {
		t.Errorf("ollama suffix: %d %s, want %q", code, b, want.Content)
	}

	plain, _ := serve(t, Config{Session: withCtx(256), Models: []string{shared.Path(t, "models/stories260K.gguf")}})
	code, b = postBody(t, plain+"/infill", `{"input_prefix": "a", "input_suffix": "b", "n_predict": 2}`)
	if code != 400 || !strings.Contains(string(b), "no fill-in-the-middle tokens") || !strings.Contains(string(b), `"stage":"encode"`) {
		t.Errorf("no FIM tokens: %d %s", code, b)
	}
}

// fimModel is stories260K with FIM tokens written over ids 505–507.
func fimModel(t *testing.T) string {
	t.Helper()
	return shared.WithTokens(t, shared.Path(t, "models/stories260K.gguf"), "fim", 505, "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")
}

// TestEmbed: the server's embeddings endpoints give the vectors the
// engine gives (as the embed command does), normalized.
func TestEmbed(t *testing.T) {
	m := shared.Path(t, "models/tiny-llama-F32.gguf")
	text, err := engine.LoadText(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := text.Embed(context.Background(), engine.EmbedRequest{Inputs: []string{"Once upon a time", "a fox"}, Normalize: true,
		Session: model.SessionOptions{Threads: compute.PhysicalCores()}})
	text.Close()
	if err != nil || len(res.Embeddings) != 2 {
		t.Fatalf("the engine's embeddings: %v, %v", res, err)
	}
	want := res.Embeddings
	base, _ := serve(t, Config{Models: []string{m}})
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
