package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestServeRefuses checks the serve command's refusals before it listens.
func TestServeRefuses(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"beyond loopback without a key", []string{"--addr", "0.0.0.0:0"}, "refusing to listen on 0.0.0.0:0 without an API key"},
		{"bad address", []string{"--addr", "nonsense"}, `address "nonsense"`},
		{"bad budget", []string{"--addr", "127.0.0.1:0", "--mem-budget", "lots"}, "--mem-budget"},
		{"bad keep-alive", []string{"--addr", "127.0.0.1:0", "--keep-alive", "soon"}, "--keep-alive"},
		{"missing model file", []string{"--addr", "127.0.0.1:0", "--model", "/nonexistent/x.gguf"}, "load: "},
		{"origin without a scheme", []string{"--addr", "127.0.0.1:0", "--allow-origin", "https://ok.example,app.example"}, `--allow-origin: deliver: allowed origin "app.example": an origin is scheme://host[:port]`},
		{"bad blob limit", []string{"--addr", "127.0.0.1:0", "--max-blob", "huge"}, `--max-blob "huge"`},
	}
	t.Setenv("GLASSBOX_ORIGINS", "")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(home.Env, t.TempDir()) // serve sets it from --home; restore it after
			var out, errb bytes.Buffer
			env := &cmdEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
			args := append([]string{"serve", "--home", t.TempDir(), "--model", model}, tc.args...)
			if code := runMain(context.Background(), env, args); code != 1 {
				t.Fatalf("exit %d, stderr %s", code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr %q, want %q", errb.String(), tc.want)
			}
		})
	}
	t.Run("bad origins in the environment", func(t *testing.T) {
		t.Setenv(home.Env, t.TempDir())
		t.Setenv("GLASSBOX_ORIGINS", "https://a.example, example.com")
		var out, errb bytes.Buffer
		env := &cmdEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
		if code := runMain(context.Background(), env, []string{"serve", "--home", t.TempDir(), "--addr", "127.0.0.1:0"}); code != 1 ||
			!strings.Contains(errb.String(), `GLASSBOX_ORIGINS: deliver: allowed origin "example.com"`) {
			t.Errorf("exit %d, stderr %q", code, errb.String())
		}
	})
}

// TestServeRuns starts the command in-process, then stops it through its
// context, as SIGTERM does.
func TestServeRuns(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	t.Setenv(home.Env, t.TempDir())
	var errb serveLog
	env := &cmdEnv{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, env, []string{"serve", "--addr", "127.0.0.1:0", "--home", t.TempDir(), "--model", model})
	}()
	waitServeLog(t, &errb, "listening on http://127.0.0.1:")
	if !strings.Contains(errb.String(), "models: stories260K") {
		t.Errorf("stderr %q", errb.String())
	}
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(errb.String())
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/jobs/no-such-job"); code != http.StatusNotFound {
		t.Errorf("unknown job: HTTP %d %s, want 404", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "glassbox_journal_events_written_total") {
		t.Errorf("/metrics: HTTP %d, journal counters missing", code)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "glassbox serve: stopped") {
		t.Errorf("stderr %q", errb.String())
	}
}

// serveLog is a bytes.Buffer safe for a writer and a reader goroutine.
type serveLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *serveLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *serveLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitServeLog(t *testing.T, b *serveLog, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr never said %q: %s", want, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeShapeCache: a model file's plan shape is read once, and read
// again when the file changes.
func TestServeShapeCache(t *testing.T) {
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

// TestServePromptCache: a request that repeats an earlier one's prompt and
// reply evaluates only what follows them, with --parallel 1 (the kept
// session) and 2 (the batcher's), and both APIs say how many tokens came
// from the cache; the text is the one a fresh server gives.
func TestServePromptCache(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	t.Setenv(home.Env, t.TempDir())
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
	serve := func(parallel string) (base string, stop func()) {
		var errb serveLog
		env := &cmdEnv{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- runMain(ctx, env, []string{"serve", "--addr", "127.0.0.1:0", "--home", t.TempDir(), "--model", model, "--parallel", parallel})
		}()
		waitServeLog(t, &errb, "listening on http://127.0.0.1:")
		return regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(errb.String()), func() { cancel(); <-done }
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
	for _, parallel := range []string{"1", "2"} {
		base, stop := serve(parallel)
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
			t.Errorf("parallel %s: resident memory %d after keeping a session of 1024 positions, %d before", parallel, after, before)
		}
		stop()
		fresh, stopFresh := serve(parallel)
		want := post(fresh+"/v1/completions", body)
		stopFresh()
		if c := r2.Usage.PromptDetails.CachedTokens; c < 5 || c >= r2.Usage.PromptTokens {
			t.Errorf("parallel %s: %d of %d prompt tokens cached", parallel, c, r2.Usage.PromptTokens)
		}
		if want.Usage.PromptDetails.CachedTokens != 0 {
			t.Errorf("parallel %s: a fresh server says %d tokens were cached", parallel, want.Usage.PromptDetails.CachedTokens)
		}
		if len(r2.Choices) != 1 || len(want.Choices) != 1 || r2.Choices[0].Text != want.Choices[0].Text {
			t.Errorf("parallel %s: with the cache %+v, fresh %+v", parallel, r2.Choices, want.Choices)
		}
		if r3.PromptEvalCount <= 0 || r3.PromptEvalCount > 4 {
			t.Errorf("parallel %s: the third request evaluated %d prompt tokens, want 1 to 4 (the rest cached)", parallel, r3.PromptEvalCount)
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

// TestServeLlamaServer: llama-server's /completion gives stories260K's
// reference greedy text for a golden prompt, /tokenize the reference's
// ids, /detokenize the reference's continuation from its ids.
func TestServeLlamaServer(t *testing.T) {
	base := startServe(t, "--ctx", "256", "--model", shared.Path(t, "models/stories260K.gguf"))
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

// TestServeDraft: serve --draft decodes a model speculatively: a greedy
// generation through Ollama's API is run's text for the prompt, and the
// job's generate stage says how the speculation went; pairs that cannot
// work are refused before the server starts.
func TestServeDraft(t *testing.T) {
	m, d := shared.Path(t, "models/tiny-llama-Q8_0.gguf"), shared.Path(t, "models/tiny-llama-Q4_0.gguf")
	want, errs, code := runCmd(t, "", "run", "-m", m, "--temp", "0", "-n", "40", "--no-journal", "Once upon a time")
	if code != 0 {
		t.Fatal(errs)
	}
	base := startServe(t, "--model", m, "--draft", "tiny-llama-Q8_0="+d)
	code, b := postBody(t, base+"/api/generate", `{"model": "tiny-llama-Q8_0", "prompt": "Once upon a time", "raw": true, "stream": false,
		"options": {"temperature": 0, "repeat_penalty": 1, "num_predict": 40}}`)
	var gen struct{ Response string }
	if err := json.Unmarshal(b, &gen); code != 200 || err != nil || gen.Response != want {
		t.Fatalf("/api/generate with a draft: %d %s, want %q", code, b, want)
	}
	resp, err := http.Get(base + "/v1/jobs?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	var jobs struct{ Jobs []struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&jobs)
	resp.Body.Close()
	if len(jobs.Jobs) != 1 {
		t.Fatalf("jobs %+v", jobs)
	}
	resp, err = http.Get(base + "/v1/jobs/" + jobs.Jobs[0].ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	events, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(events), "drafted tokens kept") || !strings.Contains(string(events), "draft model: llama") {
		t.Errorf("the job's events do not tell of the draft:\n%s", events)
	}
	// The next request continues the text: the draft's kept session holds
	// its start, as the model's does.
	next, _ := json.Marshal("Once upon a time" + gen.Response)
	code, b = postBody(t, base+"/api/generate", `{"model": "tiny-llama-Q8_0", "prompt": `+string(next)+`, "raw": true, "stream": false,
		"options": {"temperature": 0, "repeat_penalty": 1, "num_predict": 8}}`)
	if code != 200 {
		t.Fatalf("the next request: %d %s", code, b)
	}
	resp, err = http.Get(base + "/v1/jobs?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&jobs)
	resp.Body.Close()
	resp, err = http.Get(base + "/v1/jobs/" + jobs.Jobs[0].ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	events, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(events), "prompt tokens from its cache") {
		t.Errorf("the next request's draft did not start from its kept session:\n%s", events)
	}
	other := shared.WithToken(t, d, "other", 9, "<glass>")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--draft", "tiny-llama-Q8_0=" + d, "--parallel", "2"}, "speculative decoding runs one generation at a time (--parallel 1)"},
		{[]string{"--draft", "nope=" + d}, `--draft nope=`},
		{[]string{"--draft", "tiny-llama-Q8_0=" + other}, "the draft model's token 9 is"},
		{[]string{"--draft", "tiny-llama-Q8_0"}, "want MODEL=DRAFT"},
	} {
		_, errs, code := runCmd(t, "", append([]string{"serve", "--addr", "127.0.0.1:0", "--home", t.TempDir(), "--model", m}, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("serve %v: exit %d, %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestServeScoring: OpenAI's legacy completions with echo, logprobs and
// max_tokens 0 score a prompt of token ids through serve, as evaluation
// harnesses do (lm-evaluation-harness's loglikelihood): each token's
// logprob is the log-softmax of the reference's logits at the position
// before it (golden seq48).
func TestServeScoring(t *testing.T) {
	base := startServe(t, "--model", shared.Path(t, "models/stories260K.gguf"))
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
