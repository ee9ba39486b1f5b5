package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// proc is one glassbox process of a cluster test, its stderr kept.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
	done chan error
	// lines gets every stderr line, for waits on what a process says.
	lines chan string
}

// startProc runs glassbox with args in home and waits (2-minute hang
// guard) until a line of its stderr matches want, returning the match.
func startProc(t *testing.T, name, home string, want *regexp.Regexp, args ...string) (*proc, []string) {
	t.Helper()
	p := &proc{t: t, name: name, cmd: exec.Command(binary(t), args...), done: make(chan error, 1), lines: make(chan string, 4096)}
	p.cmd.Env = append(os.Environ(), "GLASSBOX_HOME="+home)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default: // nobody waits on this process's lines now
			}
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p, p.waitLine(want)
}

// waitLine waits for a stderr line matching re.
func (p *proc) waitLine(re *regexp.Regexp) []string {
	p.t.Helper()
	guard := time.After(2 * time.Minute)
	for {
		select {
		case l := <-p.lines:
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case err := <-p.done:
			p.done <- err
			p.t.Fatalf("%s exited (%v) before saying %q:\n%s", p.name, err, re, p.stderr())
		case <-guard:
			p.t.Fatalf("%s did not say %q within 2 minutes:\n%s", p.name, re, p.stderr())
		}
	}
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// cluster is a front and its workers.
type cluster struct {
	front   *proc
	url     string // the front's HTTP address
	nats    string
	workers map[string]*proc
}

var (
	clusterOn    = regexp.MustCompile(`cluster on (nats://\S+)`)
	workerJoined = regexp.MustCompile(`glassbox worker (\S+): joined .* taking jobs for: (.*)$`)
)

// startCluster starts a front with no model of its own and n workers,
// each with stories260K imported in its own home, and waits until the
// front lists the model (it has it from the workers' entries only).
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	model := shared.Path(t, "models/stories260K.gguf")
	fhome := t.TempDir()
	front, _ := startProc(t, "front", fhome, clusterOn, "serve", "--addr", "127.0.0.1:0", "--cluster-listen", "127.0.0.1:0")
	m := front.waitLine(listening)
	c := &cluster{front: front, url: m[1], workers: map[string]*proc{}}
	c.nats = clusterOn.FindStringSubmatch(front.stderr())[1]
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("w%d", i)
		home := t.TempDir()
		imp := exec.Command(binary(t), "import", model)
		imp.Env = append(os.Environ(), "GLASSBOX_HOME="+home)
		if out, err := imp.CombinedOutput(); err != nil {
			t.Fatalf("import into %s's home: %v\n%s", name, err, out)
		}
		w, got := startProc(t, name, home, workerJoined, "worker", "--nats", c.nats, "--name", name, "--threads", "1")
		if got[1] != name || got[2] != "stories260K" {
			t.Fatalf("worker says %q", got[0])
		}
		c.workers[name] = w
	}
	// The front learns of the workers from the bucket: poll its model
	// list (a 2-minute hang guard, no timing assert).
	guard := time.Now().Add(2 * time.Minute)
	for {
		var tags struct {
			Models []struct{ Name string } `json:"models"`
		}
		c.get(t, "/api/tags", &tags)
		if len(tags.Models) == 1 && tags.Models[0].Name == "stories260K" {
			break
		}
		if time.Now().After(guard) {
			t.Fatalf("the front does not list the workers' model: %+v\n%s", tags, front.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

func (c *cluster) get(t *testing.T, path string, out any) {
	t.Helper()
	resp, err := http.Get(c.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("GET %s: %s: %v", path, b, err)
	}
}

func (c *cluster) post(t *testing.T, path, body string) []byte {
	t.Helper()
	resp, err := http.Post(c.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d %s\nfront:\n%s", path, resp.StatusCode, b, c.front.stderr())
	}
	return b
}

// job is a job's record with its result's worker.
func (c *cluster) job(t *testing.T, id string) (api.Job, string, string) {
	t.Helper()
	var j api.Job
	c.get(t, "/v1/jobs/"+id, &j)
	var res struct {
		Text   string `json:"text"`
		Worker string `json:"worker"`
	}
	if len(j.Result) > 0 {
		if err := json.Unmarshal(j.Result, &res); err != nil {
			t.Fatal(err)
		}
	}
	return j, res.Worker, res.Text
}

// TestClusterJobs runs text jobs through a front and two workers, as
// separate processes on loopback, over the Ollama and OpenAI APIs, and
// checks each is done on a named worker, its events and record as for a
// local job.
func TestClusterJobs(t *testing.T) {
	c := startCluster(t, 2)
	ran := map[string]int{}
	check := func(id, text string) {
		t.Helper()
		j, worker, rtext := c.job(t, id)
		if j.State != api.StateDone || c.workers[worker] == nil || rtext != text || text == "" {
			t.Fatalf("job %s: %s on worker %q, text %q (reply %q)\nfront:\n%s", id, j.State, worker, rtext, text, c.front.stderr())
		}
		ran[worker]++
	}

	// Ollama, whole reply: greedy, so the text is the reference's.
	var gen struct {
		Response string `json:"response"`
		JobID    string `json:"job_id"`
		Done     bool   `json:"done"`
		Count    int    `json:"eval_count"`
	}
	b := c.post(t, "/api/generate", `{"model":"stories260K","prompt":"Once upon a time","stream":false,"options":{"temperature":0,"repeat_penalty":1,"num_predict":40}}`)
	if err := json.Unmarshal(b, &gen); err != nil || !gen.Done || gen.Count != 40 {
		t.Fatalf("/api/generate: %s (%v)", b, err)
	}
	if !strings.HasPrefix(strings.TrimPrefix(golden(t), " Once upon a time"), gen.Response) {
		t.Errorf("greedy text through a worker %q is not a prefix of the reference", gen.Response)
	}
	check(gen.JobID, gen.Response)

	// Ollama, streamed NDJSON: the chunks add up to the record's text.
	resp, err := http.Post(c.url+"/api/generate", "application/json",
		strings.NewReader(`{"model":"stories260K","prompt":"The cat","options":{"seed":5,"num_predict":30}}`))
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	id := ""
	dec := json.NewDecoder(resp.Body)
	for {
		var ch struct {
			Response string `json:"response"`
			Done     bool   `json:"done"`
			JobID    string `json:"job_id"`
		}
		if err := dec.Decode(&ch); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		streamed.WriteString(ch.Response)
		if ch.Done {
			id = ch.JobID
		}
	}
	resp.Body.Close()
	check(id, streamed.String())

	// OpenAI chat completions: the completion's id is the job's.
	var chat struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	b = c.post(t, "/v1/chat/completions", `{"model":"stories260K","messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":20,"seed":1}`)
	if err := json.Unmarshal(b, &chat); err != nil || len(chat.Choices) != 1 {
		t.Fatalf("/v1/chat/completions: %s (%v)", b, err)
	}
	check(strings.TrimPrefix(chat.ID, "chatcmpl-"), chat.Choices[0].Message.Content)

	// The timeline says which worker took the job.
	evs := c.events(t, gen.JobID)
	i := slices.IndexFunc(evs, func(ev api.Event) bool {
		return ev.Type == api.TypePart && ev.Stage == "queued" && strings.HasPrefix(ev.Part, "taken by worker w")
	})
	if i < 0 || slices.IndexFunc(evs, func(ev api.Event) bool { return ev.Type == api.TypeStageStart && ev.Stage == "generate" }) < i {
		t.Errorf("no 'taken by worker' part before generate in the events: %+v", evs)
	}
	t.Logf("jobs per worker: %v", ran)

	// The front's ps lists show the model resident on the worker(s) that
	// ran the jobs, each naming its worker (from the next heartbeat on:
	// polled with a 2-minute hang guard), and /v1/cluster/workers lists
	// both workers live with the model on their disks.
	guard := time.Now().Add(2 * time.Minute)
	for {
		var ps struct {
			Models []struct{ Name, Model, Worker string } `json:"models"`
		}
		c.get(t, "/api/ps", &ps)
		on := map[string]bool{}
		for _, m := range ps.Models {
			if m.Name == "stories260K" && m.Model == "stories260K" && c.workers[m.Worker] != nil {
				on[m.Worker] = true
			}
		}
		all := len(on) > 0
		for w := range ran {
			all = all && on[w]
		}
		if all {
			break
		}
		if time.Now().After(guard) {
			t.Fatalf("/api/ps does not show stories260K resident on the workers that ran jobs (%v): %+v", ran, ps)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var cw struct {
		Cluster bool `json:"cluster"`
		Workers []struct {
			Name     string                  `json:"name"`
			Live     bool                    `json:"live"`
			Cores    int                     `json:"cores"`
			RAMTotal int64                   `json:"ram_total_bytes"`
			Models   []struct{ Name string } `json:"models"`
		} `json:"workers"`
	}
	c.get(t, "/v1/cluster/workers", &cw)
	if !cw.Cluster || len(cw.Workers) != 2 || cw.Workers[0].Name != "w1" || cw.Workers[1].Name != "w2" {
		t.Fatalf("/v1/cluster/workers: %+v", cw)
	}
	for _, w := range cw.Workers {
		if !w.Live || w.Cores < 1 || w.RAMTotal <= 0 || len(w.Models) != 1 || w.Models[0].Name != "stories260K" {
			t.Errorf("/v1/cluster/workers: worker %+v", w)
		}
	}
}

// events reads a job's whole event log over SSE.
func (c *cluster) events(t *testing.T, id string) []api.Event {
	t.Helper()
	resp, err := http.Get(c.url + "/v1/jobs/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs, _ := sse(t, resp.Body, 0)
	return evs
}

// follow streams a job's events into a channel (closed at the end).
func (c *cluster) follow(t *testing.T, id string) <-chan api.Event {
	t.Helper()
	resp, err := http.Get(c.url + "/v1/jobs/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan api.Event, 1<<16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "data: ") {
				continue
			}
			var ev api.Event
			if json.Unmarshal([]byte(line[6:]), &ev) == nil && ev.Type != "" {
				out <- ev
			}
		}
	}()
	return out
}

var takenBy = regexp.MustCompile(`^taken by worker (\S+) \(attempt (\d+)`)

// TestClusterWorkerKilled kills -9 the worker running a long generation:
// JetStream delivers the job again, to the other worker; the front checks
// the tokens already streamed and continues the stream, and a cancel then
// stops the job on the second worker, in generate.
func TestClusterWorkerKilled(t *testing.T) { clusterWorkerLost(t, syscall.SIGKILL) }

// TestClusterWorkerStopped is the same with SIGTERM: the worker hands the
// job back (Nak) as it stops, and exits cleanly.
func TestClusterWorkerStopped(t *testing.T) { clusterWorkerLost(t, syscall.SIGTERM) }

func clusterWorkerLost(t *testing.T, sig syscall.Signal) {
	c := startCluster(t, 2)
	var created struct{ ID string }
	if err := json.Unmarshal(c.post(t, "/v1/jobs", `{"model":"stories260K","prompt":"Once upon a time",
		"options":{"num_predict":1000000,"num_ctx":65536}}`), &created); err != nil {
		t.Fatal(err)
	}
	evs := c.follow(t, created.ID)
	guard := time.After(2 * time.Minute)
	next := func(what string) api.Event {
		t.Helper()
		select {
		case ev, ok := <-evs:
			if !ok {
				j, _, _ := c.job(t, created.ID)
				t.Fatalf("the stream ended while waiting for %s: job %s, error %+v\nfront:\n%s", what, j.State, j.Error, c.front.stderr())
			}
			return ev
		case <-guard:
			t.Fatalf("no %s within 2 minutes\nfront:\n%s", what, c.front.stderr())
		}
		return api.Event{}
	}
	first := ""
	for {
		ev := next("the first worker's first token")
		if m := takenBy.FindStringSubmatch(ev.Part); ev.Type == api.TypePart && m != nil {
			first = m[1]
		}
		if ev.Type == api.TypeToken && first != "" {
			break
		}
	}
	victim := c.workers[first]
	if victim == nil {
		t.Fatalf("taken by unknown worker %q", first)
	}
	if err := victim.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if sig == syscall.SIGTERM {
		victim.waitLine(regexp.MustCompile(`glassbox worker \S+: stopped`))
		if err := <-victim.done; err != nil {
			t.Fatalf("%s exited with %v after SIGTERM:\n%s", first, err, victim.stderr())
		}
	} else {
		<-victim.done
	}

	// JetStream gives the job to the other worker once the lease lapses.
	second, warned := "", false
	guard = time.After(2 * time.Minute)
	for second == "" {
		ev := next("the redelivery")
		if ev.Type == api.TypeWarning && ev.Warning != nil && ev.Warning.Code == "cluster_redelivered" {
			warned = true
		}
		if m := takenBy.FindStringSubmatch(ev.Part); ev.Type == api.TypePart && m != nil && m[2] != "1" {
			second = m[1]
		}
		if ev.Type == api.TypeError {
			t.Fatalf("the job failed instead of being redelivered: %+v", ev.Error)
		}
	}
	if second == first || c.workers[second] == nil || !warned {
		t.Fatalf("redelivered to %q (first %q), warned %v", second, first, warned)
	}
	// The second attempt samples the tokens already sent again (checked
	// by the front, not sent twice), then new ones stream on — unless it
	// sampled another token, which fails the job in generate.
	guard = time.After(2 * time.Minute)
	for {
		ev := next("a token of the second attempt")
		if ev.Type == api.TypeToken {
			break
		}
		if ev.Type == api.TypeError {
			if ev.Stage != "generate" || !strings.Contains(ev.Error.Message, "cannot be replaced") {
				t.Fatalf("the redelivered job failed: %+v", ev.Error)
			}
			t.Logf("the second attempt sampled differently and failed in generate: %s", ev.Error.Message)
			return
		}
	}
	c.post(t, "/v1/jobs/"+created.ID+"/cancel", `{}`)
	guard = time.After(2 * time.Minute)
	for {
		ev := next("the cancelled state")
		if ev.Type == api.TypeState && api.Terminal(ev.State) {
			if ev.State != api.StateCancelled {
				t.Fatalf("the job ended %s", ev.State)
			}
			break
		}
	}
	j, _, _ := c.job(t, created.ID)
	if j.State != api.StateCancelled || j.Error == nil || j.Error.Stage != "generate" {
		t.Fatalf("job %s, error %+v", j.State, j.Error)
	}
	t.Logf("%s sent to %s mid-job; redelivered to %s, which continued the stream and stopped on cancel", sig, first, second)
	// The cancel reached the second worker, which stopped its generation.
	c.workers[second].waitLine(regexp.MustCompile(`cluster: job ended.*cancelled=true`))
}
