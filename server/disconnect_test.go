package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// TestDisconnectCancels closes the client socket mid-prefill and
// mid-decode on every compatible endpoint, and checks that the generation
// is cancelled, its job ends cancelled and the slot is free for the next
// request. The generation is held at its next step until its context
// ends, so it can only stop through the disconnect (a time bound on the
// stop would measure the machine's load, not the server).
func TestDisconnectCancels(t *testing.T) {
	endpoints := []struct{ name, path, body string }{
		{"ollama generate", "/api/generate", `{"model":"tiny","prompt":"hi"}`},
		{"ollama chat", "/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"hi"}]}`},
		{"ollama generate no stream", "/api/generate", `{"model":"tiny","prompt":"hi","stream":false}`},
		{"openai chat", "/v1/chat/completions", `{"model":"tiny","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"openai completions", "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":100000,"stream":true}`},
		{"openai chat no stream", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}]}`},
	}
	for _, phase := range []string{"prefill", "decode"} {
		for _, ep := range endpoints {
			t.Run(phase+"/"+ep.name, func(t *testing.T) {
				f := newFake()
				f.prefill, f.maxTokens = 1, 100000
				f.inPrefill = make(chan struct{}, 1)
				f.inDecode = make(chan struct{}, 1)
				f.hold, f.holdAt = make(chan struct{}), 0 // prefill's first step
				if phase == "decode" {
					f.holdAt = f.prefill + 1 // the second token
				}
				ts := start(t, f, nil)
				c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
					ep.path, len(ep.body), ep.body)
				sig := f.inPrefill
				if phase == "decode" {
					sig = f.inDecode
				}
				select {
				case <-sig:
				case <-time.After(patience):
					t.Fatal("generation did not reach " + phase)
				}
				if phase == "decode" && !strings.Contains(ep.name, "no stream") {
					// Make sure streaming began: read the status line.
					line, err := bufio.NewReader(c).ReadString('\n')
					if err != nil || !strings.Contains(line, "200") {
						t.Fatalf("status line %q: %v", line, err)
					}
				}
				c.Close()
				waitFor(t, "the generation to stop", func() bool { r, _, _ := f.stats(); return r == 0 })
				f.mu.Lock()
				endErr := f.ended[0]
				f.mu.Unlock()
				if !errors.Is(endErr, context.Canceled) {
					t.Errorf("generation ended with %v", endErr)
				}
				jobs := ts.m.Jobs()
				waitFor(t, "the job to end", func() bool { return api.Terminal(jobs[0].Info().State) })
				if info := jobs[0].Info(); info.State != api.StateCancelled || info.Error == nil || info.Error.Stage != phaseStage(phase) {
					t.Errorf("job ended %s, error %+v", info.State, info.Error)
				}
				waitFor(t, "a free slot", func() bool { r, w, _, _ := ts.s.queue.stats(); return r == 0 && w == 0 })
				// The slot serves the next request at once.
				f.mu.Lock()
				f.prefill, f.maxTokens = 1, 2
				f.inPrefill, f.inDecode, f.hold = nil, nil, nil
				f.mu.Unlock()
				var out map[string]any
				decode(t, ts.do("POST", "/api/generate", `{"model":"tiny","prompt":"next","stream":false}`), 200, &out)
				if out["response"] != "Once upon" {
					t.Errorf("next request got %v", out)
				}
			})
		}
	}
}

func phaseStage(phase string) string {
	if phase == "prefill" {
		return "prefill"
	}
	return "generate"
}
