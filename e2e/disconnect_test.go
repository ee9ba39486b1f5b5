package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestDisconnectRealEngine closes the client socket while the real engine
// is in the middle of a long prompt's prefill, and in the middle of
// decoding, on each compatible API, and checks that the job stops in that
// stage within moments and the slot is free. The model is a small synthetic one (written by glassbox synth
// with stories260K's vocabulary) whose prefill takes long enough to catch.
func TestDisconnectRealEngine(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "prefill.gguf")
	out, err := exec.Command(binary(t), "synth", "-o", model, "--preset", "tiny", "--dim", "512", "--layers", "8",
		"--ffn", "1536", "--heads", "8", "--kv-heads", "8", "--ctx", "4096", "--type", "Q8_0",
		"--vocab", shared.Path(t, "models/stories260K.gguf"), "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("synth: %v\n%s", err, out)
	}
	for _, parallel := range []string{"1", "2"} { // 2: decoding goes through the batcher
		t.Run("parallel="+parallel, func(t *testing.T) {
			s := serveFile(t, model, "--ctx", "4096", "--batch", "16", "--threads", "1", "--parallel", parallel)
			disconnectEach(t, s)
		})
	}
}

// disconnectEach runs the disconnect cases against s.
func disconnectEach(t *testing.T, s *server) {
	long := strings.Repeat("the cat sat on the mat. ", 120) // ~1200 tokens: 75 chunks of 16
	for _, ep := range []struct{ name, stage, path, body string }{
		{"ollama mid-prefill", "prefill", "/api/generate", fmt.Sprintf(`{"model":"prefill","prompt":%q}`, long)},
		{"openai mid-prefill", "prefill", "/v1/chat/completions",
			fmt.Sprintf(`{"model":"prefill","stream":true,"messages":[{"role":"user","content":%q}]}`, long)},
		// Greedy, so the run is the same every time (it does not meet an
		// end-of-generation token within the first thousands of tokens).
		{"ollama mid-decode", "generate", "/api/chat",
			`{"model":"prefill","messages":[{"role":"user","content":"hi"}],"options":{"temperature":0,"num_predict":3000}}`},
		{"openai mid-decode", "generate", "/v1/completions",
			`{"model":"prefill","prompt":"Once","stream":true,"temperature":0,"max_tokens":3000}`},
	} {
		t.Run(ep.name, func(t *testing.T) {
			prev := s.lastJob(t).ID
			c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				ep.path, len(ep.body), ep.body)
			// The socket closes while the job runs in ep.stage. A poll that
			// comes late on a loaded machine (the prefill done before it
			// looked) closes it in the generate stage instead, which the
			// mid-decode cases cover: the case then checks that stage, and
			// says so, rather than fail on the machine's timing.
			var job api.Job
			deadline := time.Now().Add(2 * time.Minute) // a hang guard
			for {
				job = s.lastJob(t)
				if job.ID != prev && job.State == api.StateRunning && (job.Stage == ep.stage || job.Stage == "generate") {
					break
				}
				if time.Now().After(deadline) || (job.ID != prev && api.Terminal(job.State)) {
					t.Fatalf("job never seen running in %s: %s %s in %s", ep.stage, job.ID, job.State, job.Stage)
				}
				time.Sleep(5 * time.Millisecond)
			}
			stage := job.Stage
			if stage != ep.stage {
				t.Logf("the job had left %s when first seen: the disconnect lands in %s", ep.stage, stage)
			}
			closed := time.Now()
			c.Close()
			for !api.Terminal(job.State) {
				if time.Since(closed) > 2*time.Minute {
					t.Fatalf("job still %s 2 minutes after the disconnect", job.State)
				}
				time.Sleep(5 * time.Millisecond)
				job = s.job(job.ID)
			}
			t.Logf("cancelled %s after the socket closed (stop took %d µs inside the engine)",
				time.Since(closed).Round(time.Millisecond), job.Error.Numbers["stop_us"])
			if job.State != api.StateCancelled || job.Error.Stage != stage {
				t.Errorf("job ended %s in %+v, want cancelled in %s", job.State, job.Error, stage)
			}
			var h struct {
				Queue struct{ Running, Waiting int }
			}
			resp, err := http.Get(s.url + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if h.Queue.Running != 0 || h.Queue.Waiting != 0 {
				t.Errorf("queue after the disconnect: %+v", h.Queue)
			}
		})
	}
}

// lastJob returns the newest job.
func (s *server) lastJob(t *testing.T) api.Job {
	t.Helper()
	resp, err := http.Get(s.url + "/v1/jobs?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Jobs []api.Job }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Jobs) == 0 {
		return api.Job{}
	}
	return list.Jobs[0]
}
