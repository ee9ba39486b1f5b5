package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/server"
)

// TestTextRequest: how a server request becomes the engine's: a prompt
// goes through the template only on a model that has one and without raw;
// a base model's system message is written before its prompt; messages
// (with their calls) always go through the template and split thinking;
// fill-in-the-middle takes the prompt as the code before the cursor.
func TestTextRequest(t *testing.T) {
	seed := uint64(7)
	opts := model.SessionOptions{CtxLen: 128, Threads: 2}
	for _, tc := range []struct {
		name     string
		req      server.GenerateRequest
		template bool
		want     string // chat, split, prompt, messages, fim, max tokens
	}{
		{"base model", server.GenerateRequest{Prompt: "Once", System: "Be brief.", Options: server.Options{NumPredict: 5}}, false,
			`chat false split false prompt "Be brief.\n\nOnce" messages [] fim <nil> max 5`},
		{"templated", server.GenerateRequest{Prompt: "Once", System: "Be brief.", Options: server.Options{NumPredict: -1}}, true,
			`chat true split true prompt "Once" messages [] fim <nil> max 0`},
		{"raw", server.GenerateRequest{Prompt: "Once", Raw: true}, true,
			`chat false split false prompt "Once" messages [] fim <nil> max 0`},
		{"messages on a base model", server.GenerateRequest{Messages: []server.Message{{Role: "user", Content: "hi"},
			{Role: "assistant", ToolCalls: []server.ToolCall{{ID: "call_0", Name: "f", Arguments: []byte(`{"a":1}`)}}},
			{Role: "tool", ToolCallID: "call_0", Content: "2"}}}, false,
			`chat false split true prompt "" messages [user:hi assistant:[call_0 function f {"a":1}] tool:2<call_0>] fim <nil> max 0`},
		{"fill in the middle", server.GenerateRequest{Prompt: "def f(", System: "ignored", FIM: &server.FIM{Suffix: "):",
			Files: []server.FIMFile{{Name: "a.py", Text: "x = 1"}}}}, true,
			`chat false split false prompt "def f(" messages [] fim "):" a.py="x = 1" max 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Options.Seed = &seed
			r := textRequest(&tc.req, &served{template: tc.template}, opts)
			var msgs []string
			for _, m := range r.Messages {
				s := m.Role + ":" + m.Content
				for _, c := range m.ToolCalls {
					s += fmt.Sprintf("[%s %s %s %s]", c.ID, c.Type, c.Function.Name, c.Function.Arguments)
				}
				if m.ToolCallID != "" {
					s += "<" + m.ToolCallID + ">"
				}
				msgs = append(msgs, s)
			}
			fim := "<nil>"
			if r.FIM != nil {
				fim = fmt.Sprintf("%q", r.FIM.Suffix)
				for _, f := range r.FIM.Files {
					fim += fmt.Sprintf(" %s=%q", f.Name, f.Text)
				}
			}
			got := fmt.Sprintf("chat %v split %v prompt %q messages [%s] fim %s max %d", r.Chat, r.SplitThinking, r.Prompt,
				strings.Join(msgs, " "), fim, r.MaxTokens)
			if got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
			if r.Session != opts || r.Sampling.Seed != seed {
				t.Errorf("session %+v, seed %d", r.Session, r.Sampling.Seed)
			}
		})
	}
}

// TestSampling: a request's sampling options reach the sampler as they
// are; without a seed each request draws its own, within int63.
func TestSampling(t *testing.T) {
	seed := uint64(42)
	o := server.Options{Temperature: 0.7, TopK: 20, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1, FrequencyPenalty: 0.2,
		PresencePenalty: 0.3, RepeatLastN: 32, Seed: &seed, LogitBias: map[int]float32{5: -100}}
	p := sampling(o)
	if got := fmt.Sprintf("%v %v %v %v %v %v %v %v %v %v", p.Temperature, p.TopK, p.TopP, p.MinP, p.RepeatPenalty, p.FreqPenalty,
		p.PresencePenalty, p.PenaltyLastN, p.Seed, p.LogitBias); got != "0.7 20 0.9 0.05 1.1 0.2 0.3 32 42 map[5:-100]" {
		t.Errorf("sampling %s", got)
	}
	o.Seed = nil
	a, b := sampling(o).Seed, sampling(o).Seed
	if a == b || a > math.MaxInt64 || b > math.MaxInt64 {
		t.Errorf("fresh seeds %d and %d: want two different int63 values", a, b)
	}
}

// TestMetaValue: /api/show keeps scalar metadata and short arrays, and
// leaves out what would not fit 256 bytes of JSON (vocabularies).
func TestMetaValue(t *testing.T) {
	long := make([]string, 100)
	for i := range long {
		long[i] = "token"
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"llama", `"llama"`},
		{uint32(4096), `4096`},
		{[]int{1, 2, 3}, `[1,2,3]`},
		{long, `<nil>`},
		{math.Inf(1), `<nil>`}, // not JSON
	} {
		got := "<nil>"
		if v := metaValue(tc.v); v != nil {
			got = string(v.(json.RawMessage))
		}
		if got != tc.want {
			t.Errorf("%T: %s, want %s", tc.v, got, tc.want)
		}
	}
}

// TestEmbedPaths: the backend's embeddings follow the request: the pooling
// it names (mean and last differ), dimensions cut and renormalized, raw
// vectors not normalized, a context too short for an input refused unless
// truncated.
func TestEmbedPaths(t *testing.T) {
	b := newBackend(t, Config{Models: []string{shared.Path(t, "models/tiny-llama-F32.gguf")}})
	ctx := context.Background()
	embed := func(req server.EmbedRequest) (*server.EmbedResult, error) {
		req.Model = "tiny-llama-F32"
		if req.Input == nil {
			req.Input = []string{"Once upon a time there was a fox"}
		}
		return b.Embed(ctx, &req)
	}
	length := func(v []float32) float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	mean, err := embed(server.EmbedRequest{Pooling: "mean", Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	last, err := embed(server.EmbedRequest{Pooling: "last", Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if mean.Pooling != "mean" || last.Pooling != "last" || fmt.Sprint(mean.Embeddings) == fmt.Sprint(last.Embeddings) {
		t.Errorf("pooling %s and %s gave the same vector", mean.Pooling, last.Pooling)
	}
	if l := length(mean.Embeddings[0]); math.Abs(l-1) > 1e-5 || mean.PromptTokens == 0 {
		t.Errorf("normalized length %g, %d prompt tokens", l, mean.PromptTokens)
	}
	cut, err := embed(server.EmbedRequest{Pooling: "mean", Normalize: true, Dimensions: 4})
	if err != nil || len(cut.Embeddings[0]) != 4 || math.Abs(length(cut.Embeddings[0])-1) > 1e-5 {
		t.Fatalf("4 dimensions: %v, %v", cut, err)
	}
	raw, err := embed(server.EmbedRequest{Pooling: "mean"})
	if err != nil || math.Abs(length(raw.Embeddings[0])-1) < 1e-3 {
		t.Errorf("a raw vector of length %g (%v): want the model's own length", length(raw.Embeddings[0]), err)
	}
	long := []string{strings.Repeat("once upon a time ", 40)}
	if _, err := embed(server.EmbedRequest{Input: long, NumCtx: 32}); err == nil || !strings.Contains(err.Error(), "encode") {
		t.Errorf("an input over the context: %v, want the encode stage's refusal", err)
	}
	tr, err := embed(server.EmbedRequest{Input: long, NumCtx: 32, Truncate: true, Normalize: true})
	if err != nil || fmt.Sprint(tr.Truncated) != "[0]" || tr.PromptTokens > 32 {
		t.Errorf("truncated: %+v, %v", tr, err)
	}
}
