// Package e2e starts the real glassbox binary on a loopback port and talks
// to it as clients do: the official OpenAI Go client, raw SSE for the
// native jobs API, and signals for shutdown. The official JavaScript
// clients (ollama, openai) are driven by the Node tests beside this file
// (npm ci --omit=optional && npm test).
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/glassbox once per test run ($GLASSBOX_BIN overrides).
func binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("GLASSBOX_BIN"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "glassbox-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "glassbox")
		cmd := exec.Command("go", "build", "-o", binPath, "../cmd/glassbox")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// server is one running glassbox serve.
type server struct {
	t    testing.TB
	cmd  *exec.Cmd
	url  string
	home string
	mu   sync.Mutex
	log  strings.Builder
	done chan error
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// serve starts glassbox serve with the stories260K model in home (a new
// temporary one when empty) and waits until it listens.
func serve(t *testing.T, home string, args ...string) *server {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	model := shared.Path(t, "models/stories260K.gguf")
	args = append([]string{"--home", home, "--threads", "1"}, args...)
	return serveFile(t, model, args...)
}

// serveFile starts glassbox serve with one model file.
func serveFile(t testing.TB, model string, args ...string) *server {
	t.Helper()
	home := t.TempDir()
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--home" {
			home = args[i+1]
		}
	}
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--home", home, "--model", model}, args...)
	s := &server{t: t, cmd: exec.Command(binary(t), args...), home: home, done: make(chan error, 1)}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		s.done <- s.cmd.Wait()
	}()
	select {
	case s.url = <-found:
	case <-time.After(2 * time.Minute):
		s.cmd.Process.Kill()
		t.Fatalf("server did not start:\n%s", s.stderr())
	}
	t.Cleanup(func() { s.stop(syscall.SIGKILL) })
	return s
}

func (s *server) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// stop sends sig and waits for the process; it returns the exit error.
func (s *server) stop(sig syscall.Signal) error {
	if s.cmd.ProcessState != nil {
		return nil
	}
	s.cmd.Process.Signal(sig)
	select {
	case err := <-s.done:
		return err
	case <-time.After(2 * time.Minute):
		s.cmd.Process.Kill()
		return errors.New("server did not stop within 2 minutes")
	}
}

func (s *server) postJSON(path, body string) map[string]any {
	s.t.Helper()
	resp, err := http.Post(s.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		s.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		s.t.Fatalf("POST %s: %s: %v", path, b, err)
	}
	return out
}

func (s *server) job(id string) api.Job {
	s.t.Helper()
	resp, err := http.Get(s.url + "/v1/jobs/" + id)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var j api.Job
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		s.t.Fatal(err)
	}
	return j
}

func golden(t *testing.T) string {
	b, err := os.ReadFile(shared.Path(t, "golden/stories260K.prompt1.greedy200.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(string(b), " Once upon a time")
}

// TestOpenAIGoClient drives the server with github.com/openai/openai-go.
func TestOpenAIGoClient(t *testing.T) {
	s := serve(t, "")
	ctx := context.Background()
	c := openai.NewClient(option.WithBaseURL(s.url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))

	page, err := c.Models.List(ctx)
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "stories260K" {
		t.Fatalf("models: %+v, %v", page, err)
	}
	comp, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "stories260K",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(40), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if text := comp.Choices[0].Text; len(text) < 100 || !strings.HasPrefix(golden(t), text) {
		t.Errorf("greedy completion %q is not a prefix of the reference", text)
	}
	if comp.Usage.PromptTokens != 5 || comp.Usage.CompletionTokens != 40 || comp.Choices[0].FinishReason != "length" {
		t.Errorf("usage %+v finish %q", comp.Usage, comp.Choices[0].FinishReason)
	}

	params := openai.ChatCompletionNewParams{Model: "stories260K", MaxTokens: openai.Int(16), Seed: openai.Int(3),
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story about a dog.")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	streamed := acc.Choices[0].Message.Content
	if acc.Usage.CompletionTokens != 16 || streamed == "" {
		t.Errorf("streamed %q usage %+v", streamed, acc.Usage)
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	whole, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Choices[0].Message.Content != streamed {
		t.Errorf("same seed: streamed %q, whole %q", streamed, whole.Choices[0].Message.Content)
	}

	// Embeddings: text and token ids give the same vector for the same
	// tokens (BOS and "Once upon a time" are ids 1 403 407 261 378).
	emb, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "stories260K",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"Once upon a time", "a dog"}}})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "stories260K",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{1, 403, 407, 261, 378}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Data) != 2 || len(emb.Data[0].Embedding) != 64 || emb.Usage.PromptTokens <= 5 || len(ids.Data) != 1 {
		t.Fatalf("embeddings %d of %d values, usage %+v", len(emb.Data), len(emb.Data[0].Embedding), emb.Usage)
	}
	for i, v := range ids.Data[0].Embedding {
		if math.Abs(v-emb.Data[0].Embedding[i]) > 1e-6 {
			t.Fatalf("value %d: %g from ids, %g from text", i, v, emb.Data[0].Embedding[i])
		}
	}

	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" ||
		!strings.HasPrefix(apiErr.Message, "load: ") {
		t.Errorf("unknown model: %v", err)
	}
}

// sse reads events from an event stream until n have arrived (n <= 0:
// until it ends), returning them and the last id.
func sse(t *testing.T, r io.Reader, n int) (evs []api.Event, ended bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var id, event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case line == "" && data != "":
			if event == "end" {
				return evs, true
			}
			var ev api.Event
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatal(err)
			}
			if strconv.FormatInt(ev.Seq, 10) != id {
				t.Fatalf("SSE id %s for seq %d", id, ev.Seq)
			}
			evs = append(evs, ev)
			if n > 0 && len(evs) == n {
				return evs, false
			}
			id, event, data = "", "", ""
		}
	}
	return evs, false
}

// TestNativeReconnect disconnects from a running native job, reconnects
// with Last-Event-ID, and checks that every event arrives exactly once and
// the text equals the job's output in the journal.
func TestNativeReconnect(t *testing.T) {
	s := serve(t, "")
	created := s.postJSON("/v1/jobs", `{"model":"stories260K","prompt":"Once upon a time",
		"options":{"temperature":0,"num_predict":400,"num_ctx":512}}`)
	id := created["id"].(string)
	resp, err := http.Get(s.url + "/v1/jobs/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := sse(t, resp.Body, 20)
	resp.Body.Close() // the client goes away; the job must not
	last := first[len(first)-1].Seq

	req, _ := http.NewRequest("GET", s.url+"/v1/jobs/"+id+"/events", nil)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rest, ended := sse(t, resp.Body, 0)
	resp.Body.Close()
	if !ended {
		t.Error("the stream did not end with event: end")
	}
	all := append(first, rest...)
	var text strings.Builder
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: lost or duplicated", i+1, ev.Seq)
		}
		if ev.Type == api.TypeToken {
			text.WriteString(ev.Token.Text)
		}
	}
	if st := all[len(all)-1]; st.Type != api.TypeState || st.State != api.StateDone {
		t.Fatalf("last event %+v", st)
	}
	job := s.job(id)
	var res struct {
		Text   string `json:"text"`
		Tokens int    `json:"tokens"`
	}
	if err := json.Unmarshal(job.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.Text != text.String() || res.Tokens != 400 || job.LastSeq != int64(len(all)) {
		t.Errorf("journal text %q (%d tokens, last seq %d), streamed %q (%d events)", res.Text, res.Tokens, job.LastSeq, text.String(), len(all))
	}
	if !strings.HasPrefix(golden(t), text.String()[:200]) {
		t.Errorf("greedy text %q is not the reference", text.String()[:200])
	}
}

// TestGracefulShutdown stops the server with SIGTERM while a native job
// runs: the process exits cleanly within the grace period and the journal,
// read by a new server on the same home, holds the job as cancelled with
// its stage.
func TestGracefulShutdown(t *testing.T) {
	s := serve(t, "", "--shutdown-grace", "300ms")
	created := s.postJSON("/v1/jobs", `{"model":"stories260K","prompt":"Once upon a time",
		"options":{"num_predict":1000000,"num_ctx":65536}}`)
	id := created["id"].(string)
	deadline := time.Now().Add(2 * time.Minute)
	for s.job(id).Stage != "generate" {
		if time.Now().After(deadline) {
			t.Fatal("job did not reach generate")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit: %v\n%s", err, s.stderr())
	}
	// The job would take hours: a shutdown that waited for it would not
	// end within a minute, however loaded the machine.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("shutdown took %s with a 300ms grace", d)
	}
	if !strings.Contains(s.stderr(), "glassbox serve: stopped") {
		t.Errorf("stderr:\n%s", s.stderr())
	}
	s2 := serve(t, s.home)
	job := s2.job(id)
	if job.State != api.StateCancelled || job.Error == nil || job.Error.Stage != "generate" {
		t.Errorf("after restart the job is %s, error %+v", job.State, job.Error)
	}
	// Its events replay from the journal, from any point, and end.
	req, _ := http.NewRequest("GET", s2.url+"/v1/jobs/"+id+"/events", nil)
	req.Header.Set("Last-Event-ID", "3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	evs, ended := sse(t, resp.Body, 0)
	resp.Body.Close()
	if !ended || len(evs) == 0 || evs[0].Seq != 4 || evs[len(evs)-1].Seq != job.LastSeq || evs[len(evs)-1].State != api.StateCancelled {
		t.Errorf("replay from the journal: %d events, ended %v, last %+v (job's last seq %d)", len(evs), ended, evs[len(evs)-1], job.LastSeq)
	}
}

// TestBadInput checks refusals that need the real engine and limits.
func TestBadInput(t *testing.T) {
	s := serve(t, "")
	long := strings.Repeat("the cat sat on the mat. ", 40)
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"prompt longer than the context", "/api/generate", `{"model":"stories260K","stream":false,"prompt":"` + long + `"}`,
			400, "but the context holds 128"},
		{"prompt longer than the context, streaming", "/v1/completions", `{"model":"stories260K","stream":true,"prompt":"` + long + `"}`,
			400, "but the context holds 128"},
		{"body over 8 MiB", "/api/generate", `{"model":"stories260K","prompt":"` + strings.Repeat("x", 9<<20) + `"}`,
			413, "deliver: request body exceeds the limit of 8388608 bytes"},
		{"absurd option", "/api/chat", `{"model":"stories260K","messages":[{"role":"user","content":"hi"}],"options":{"num_ctx":-3}}`,
			400, "deliver: options.num_ctx is -3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(s.url+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("%d %s", resp.StatusCode, b)
			}
		})
	}
	var h struct{ Queue struct{ Running int } }
	resp, err := http.Get(s.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if h.Queue.Running != 0 {
		t.Errorf("%d slots still busy", h.Queue.Running)
	}
}

// TestParallelBatched runs several greedy generations of two prompts at
// once with --parallel 4 (one batched decode step for all streams) and
// checks that each equals the reference text for its prompt: sequences in
// one batch must not disturb each other.
func TestParallelBatched(t *testing.T) {
	s := serve(t, "", "--parallel", "4", "--ctx", "256")
	want := map[string]string{}
	for _, n := range []string{"1", "2"} {
		p, err := os.ReadFile(shared.Path(t, "golden/stories260K.prompt"+n+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		g, err := os.ReadFile(shared.Path(t, "golden/stories260K.prompt"+n+".greedy200.txt"))
		if err != nil {
			t.Fatal(err)
		}
		prompt := strings.TrimSpace(string(p))
		want[prompt] = strings.TrimPrefix(string(g), " "+prompt)
	}
	type answer struct {
		prompt, text string
		err          error
	}
	answers := make(chan answer, 8)
	for i := range 8 {
		prompt := "Once upon a time"
		if i%2 == 1 {
			prompt = "Lily and Ben went to the park."
		}
		go func() {
			body := fmt.Sprintf(`{"model":"stories260K","prompt":%q,"stream":false,
				"options":{"temperature":0,"repeat_penalty":1,"num_predict":%d}}`, prompt, 60+i)
			resp, err := http.Post(s.url+"/api/generate", "application/json", strings.NewReader(body))
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			var out struct {
				Response  string `json:"response"`
				EvalCount int    `json:"eval_count"`
			}
			err = json.NewDecoder(resp.Body).Decode(&out)
			if err == nil && out.EvalCount != 60+i {
				err = fmt.Errorf("eval_count %d, want %d", out.EvalCount, 60+i)
			}
			answers <- answer{prompt, out.Response, err}
		}()
	}
	for range 8 {
		a := <-answers
		if a.err != nil {
			t.Error(a.err)
			continue
		}
		if len(a.text) < 150 || !strings.HasPrefix(want[a.prompt], a.text) {
			t.Errorf("%q: got %q, not a prefix of the reference", a.prompt, a.text)
		}
	}
}
