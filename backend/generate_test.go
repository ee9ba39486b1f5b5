package backend

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestPromptCache: a request that repeats an earlier one's prompt and
// reply evaluates only what follows them, with Parallel 1 (the kept
// session) and 2 (the batcher's), and both APIs say how many tokens came
// from the cache; the text is the one a fresh server gives.
func TestPromptCache(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	type reply struct {
		Response        string `json:"response"`
		PromptEvalCount int    `json:"prompt_eval_count"`
		Usage           struct {
			PromptTokens  int `json:"prompt_tokens"`
			PromptDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	start := func(parallel int) string {
		base, _ := serve(t, Config{Models: []string{model}, Parallel: parallel})
		return base
	}
	post := func(url, body string) reply {
		t.Helper()
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d %s", url, resp.StatusCode, b)
		}
		var r reply
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	const first = "Once upon a time"
	for _, parallel := range []int{1, 2} {
		base := start(parallel)
		r1 := post(base+"/api/generate", `{"model":"stories260K","prompt":"`+first+`","stream":false,"options":{"temperature":0,"num_predict":24}}`)
		second := first + r1.Response + " One day"
		body := `{"model":"stories260K","prompt":"` + second + `","max_tokens":16,"temperature":0}`
		r2 := post(base+"/v1/completions", body)
		r3 := post(base+"/api/generate", `{"model":"stories260K","prompt":"`+second+` she","stream":false,"options":{"temperature":0,"num_predict":8}}`)
		// A kept session of a longer context: the resident model's
		// memory counts it (with --parallel 2, beside the first one).
		before := resident(t, base)
		post(base+"/api/generate", `{"model":"stories260K","prompt":"Hi","stream":false,"options":{"num_predict":2,"num_ctx":1024}}`)
		if after := resident(t, base); after <= before {
			t.Errorf("parallel %d: resident memory %d after keeping a session of 1024 positions, %d before", parallel, after, before)
		}
		want := post(start(parallel)+"/v1/completions", body)
		if c := r2.Usage.PromptDetails.CachedTokens; c < 5 || c >= r2.Usage.PromptTokens {
			t.Errorf("parallel %d: %d of %d prompt tokens cached", parallel, c, r2.Usage.PromptTokens)
		}
		if want.Usage.PromptDetails.CachedTokens != 0 {
			t.Errorf("parallel %d: a fresh server says %d tokens were cached", parallel, want.Usage.PromptDetails.CachedTokens)
		}
		if len(r2.Choices) != 1 || len(want.Choices) != 1 || r2.Choices[0].Text != want.Choices[0].Text {
			t.Errorf("parallel %d: with the cache %+v, fresh %+v", parallel, r2.Choices, want.Choices)
		}
		if r3.PromptEvalCount <= 0 || r3.PromptEvalCount > 4 {
			t.Errorf("parallel %d: the third request evaluated %d prompt tokens, want 1 to 4 (the rest cached)", parallel, r3.PromptEvalCount)
		}
	}
}

// resident is the first resident model's size_resident in GET /v1/ps.
func resident(t *testing.T, base string) int64 {
	t.Helper()
	resp, err := http.Get(base + "/v1/ps")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ps struct {
		Models []struct {
			Bytes int64 `json:"size_resident"`
		} `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil || len(ps.Models) == 0 {
		t.Fatalf("/v1/ps: %v, %+v", err, ps)
	}
	return ps.Models[0].Bytes
}

// TestLlamaServer: llama-server's /completion gives stories260K's
// reference greedy text for a golden prompt, /tokenize the reference's
// ids, /detokenize the reference's continuation from its ids.
func TestLlamaServer(t *testing.T) {
	base, _ := serve(t, Config{Session: withCtx(256), Models: []string{shared.Path(t, "models/stories260K.gguf")}})
	dir := filepath.Dir(shared.Path(t, "golden/manifest.json"))
	prompt := readText(t, filepath.Join(dir, "stories260K.prompt1.txt"))
	golden := readText(t, filepath.Join(dir, "stories260K.prompt1.greedy200.txt"))
	var c struct {
		Content         string
		StopType        string `json:"stop_type"`
		TokensEvaluated int    `json:"tokens_evaluated"`
		TokensPredicted int    `json:"tokens_predicted"`
	}
	code, b := postBody(t, base+"/completion", `{"prompt": "`+prompt+`", "n_predict": 200, "temperature": 0}`)
	if err := json.Unmarshal(b, &c); code != 200 || err != nil || c.Content != strings.TrimPrefix(golden, " "+prompt) || c.TokensEvaluated != 5 {
		t.Errorf("/completion: %d %s", code, b)
	}
	var tok struct{ Tokens []int }
	code, b = postBody(t, base+"/tokenize", `{"content": "`+prompt+`", "add_special": true}`)
	if err := json.Unmarshal(b, &tok); code != 200 || err != nil || fmt.Sprint(tok.Tokens) != "["+readText(t, filepath.Join(dir, "stories260K.prompt1.ids"))+"]" {
		t.Errorf("/tokenize: %d %s", code, b)
	}
	ids := strings.Fields(readText(t, filepath.Join(dir, "stories260K.prompt1.greedy200.ids")))
	code, b = postBody(t, base+"/detokenize", `{"tokens": [`+strings.Join(ids, ",")+`]}`)
	var d struct{ Content string }
	if err := json.Unmarshal(b, &d); code != 200 || err != nil || d.Content != strings.TrimPrefix(golden, " "+prompt) {
		t.Errorf("/detokenize: %d %s", code, b)
	}
	// /embedding's vector is OpenAI's /v1/embeddings' for the same text.
	var le []struct{ Embedding [][]float32 }
	code, b = postBody(t, base+"/embedding", `{"content": "`+prompt+`"}`)
	if err := json.Unmarshal(b, &le); code != 200 || err != nil || len(le) != 1 || len(le[0].Embedding) != 1 {
		t.Fatalf("/embedding: %d %s", code, b)
	}
	var oe struct {
		Data []struct{ Embedding []float32 }
	}
	code, b = postBody(t, base+"/v1/embeddings", `{"model": "stories260K", "input": "`+prompt+`"}`)
	if err := json.Unmarshal(b, &oe); code != 200 || err != nil || len(oe.Data) != 1 || !slices.Equal(oe.Data[0].Embedding, le[0].Embedding[0]) {
		t.Errorf("/v1/embeddings %d %s, /embedding %v", code, b, le)
	}
}

// TestScoring: OpenAI's legacy completions with echo, logprobs and
// max_tokens 0 score a prompt of token ids through serve, as evaluation
// harnesses do (lm-evaluation-harness's loglikelihood): each token's
// logprob is the log-softmax of the reference's logits at the position
// before it (golden seq48).
func TestScoring(t *testing.T) {
	base, _ := serve(t, Config{Models: []string{shared.Path(t, "models/stories260K.gguf")}})
	dir := filepath.Dir(shared.Path(t, "golden/manifest.json"))
	ids := strings.Fields(readText(t, filepath.Join(dir, "seq48.ids")))
	raw, err := os.ReadFile(filepath.Join(dir, "stories260K.seq48.logits.f32"))
	if err != nil {
		t.Fatal(err)
	}
	code, b := postBody(t, base+"/v1/completions", `{"model": "stories260K", "prompt": [`+strings.Join(ids, ",")+`], "echo": true,
		"logprobs": 1, "max_tokens": 0, "temperature": 0}`)
	var c struct {
		Choices []struct {
			Logprobs struct {
				Tokens        []string
				TokenLogprobs []*float64 `json:"token_logprobs"`
			}
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal(b, &c); code != 200 || err != nil || len(c.Choices) != 1 || c.Usage.PromptTokens != len(ids) || c.Usage.CompletionTokens != 0 {
		t.Fatalf("%d %s", code, b)
	}
	lps := c.Choices[0].Logprobs.TokenLogprobs
	if len(lps) != len(ids) || lps[0] != nil {
		t.Fatalf("%d token logprobs, the first %v", len(lps), lps[0])
	}
	const vocab = 512
	for k := 1; k < len(ids); k++ {
		id, _ := strconv.Atoi(ids[k])
		var sum, sq float64
		for i := range vocab {
			v := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*((k-1)*vocab+i):])))
			sum += math.Exp(v)
			sq += v * v
		}
		ref := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*((k-1)*vocab+id):]))) - math.Log(sum)
		if lps[k] == nil || math.Abs(*lps[k]-ref) > 4*math.Sqrt(2e-6*sq/vocab) {
			t.Errorf("token %d: logprob %v, the reference's logits give %.6f", k, lps[k], ref)
		}
	}
}
