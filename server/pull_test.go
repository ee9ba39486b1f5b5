package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

func TestOllamaPull(t *testing.T) {
	ts := start(t, newFake(), nil)
	resp := ts.do("POST", "/api/pull", map[string]any{"model": "hf.co/owner/repo:Q4_K_M"})
	job := ts.m.Job(resp.Header.Get("X-Glassbox-Job"))
	lines := ndjson(t, resp)
	var status []string
	last := int64(0)
	for _, l := range lines {
		status = append(status, l["status"].(string))
		if c, ok := l["completed"].(float64); ok {
			if int64(c) <= last || l["total"] != 300.0 {
				t.Errorf("progress %v after %d", l, last)
			}
			last = int64(c)
		}
	}
	want := "pulling manifest|pulling hf.co/owner/repo:Q4_K_M|pulling hf.co/owner/repo:Q4_K_M|pulling hf.co/owner/repo:Q4_K_M|verifying sha256 digest|writing manifest|success"
	if got := strings.Join(status, "|"); got != want || last != 300 || lines[len(lines)-1]["model"] != "pulled" {
		t.Errorf("statuses %s, last %d: %v", got, last, lines)
	}
	if job == nil || job.Info().Kind != "pull" {
		t.Errorf("job %v", job)
	}

	var out map[string]any
	decode(t, ts.do("POST", "/api/pull", map[string]any{"name": "hf.co/owner/repo", "stream": false}), 200, &out)
	if out["status"] != "success" {
		t.Errorf("not streamed: %v", out)
	}
	// A failure after the first chunk arrives as a final error line.
	lines = ndjson(t, ts.do("POST", "/api/pull", map[string]any{"model": "bad/ref"}))
	if e, _ := lines[len(lines)-1]["error"].(string); !strings.HasPrefix(e, "load: pull bad/ref: HTTP 404") {
		t.Errorf("failed pull: %v", lines)
	}
	decode(t, ts.do("POST", "/api/pull", map[string]any{"model": "bad/ref", "stream": false}), 502, &out)
	decode(t, ts.do("POST", "/api/pull", map[string]any{}), 400, &out)
}

// A pull through the jobs API belongs to the server: it runs on when the
// client that started it leaves, and its events say how far it got and
// what the model is named.
func TestNativePull(t *testing.T) {
	f := newFake()
	f.step = 20 * time.Millisecond
	ts := start(t, f, nil)
	jc := createJob(t, ts, map[string]any{"kind": "pull", "model": "hf.co/owner/repo"})
	if jc.Kind != "pull" || jc.Model != "hf.co/owner/repo" {
		t.Errorf("created %+v", jc)
	}
	// Nobody follows it until it has ended.
	deadline := time.Now().Add(patience)
	for ts.m.Job(jc.ID).Info().State != api.StateDone {
		if time.Now().After(deadline) {
			t.Fatalf("pull job still %s", ts.m.Job(jc.ID).Info().State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	evs, ended := events(t, ts, jc.ID, 0)
	var done []int64
	var result string
	for _, ev := range evs {
		switch ev.Type {
		case api.TypeProgress:
			done = append(done, ev.Progress.Done)
		case api.TypeResult:
			result = string(ev.Result)
		}
	}
	if !ended || len(done) != 3 || done[2] != 300 || result != `{"name":"pulled"}` {
		t.Errorf("ended %v, progress %v, result %s", ended, done, result)
	}

	jc = createJob(t, ts, map[string]any{"kind": "pull", "model": "bad/ref"})
	evs, _ = events(t, ts, jc.ID, 0)
	failed := slices.ContainsFunc(evs, func(ev api.Event) bool {
		return ev.Type == api.TypeError && ev.Error.Stage == "load" && strings.Contains(ev.Error.Message, "HTTP 404")
	})
	if last := evs[len(evs)-1]; !failed || last.State != api.StateFailed {
		t.Errorf("failed pull: %+v", evs)
	}

	var e map[string]map[string]any
	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"kind": "pull"}, "model is required"},
		{map[string]any{"kind": "push", "model": "x"}, `kind "push" is not one of text, chat, embed, image, video, pull`},
		{map[string]any{"kind": "embed", "model": "tiny", "prompt": "a"}, "a job of kind embed takes input"},
		{map[string]any{"kind": "text", "model": "tiny", "input": "a"}, "a job of kind text takes a prompt or messages, not input"},
	} {
		decode(t, ts.do("POST", "/v1/jobs", tc.body), http.StatusBadRequest, &e)
		if msg, _ := e["error"]["message"].(string); !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %v, want %q", tc.body, e, tc.want)
		}
	}
}

func TestOllamaCopy(t *testing.T) {
	ts := start(t, newFake(), nil)
	resp := ts.do("POST", "/api/copy", map[string]any{"source": "tiny", "destination": "tiny-2"})
	resp.Body.Close()
	if resp.StatusCode != 200 || len(ts.f.copied) != 1 || ts.f.copied[0] != "tiny>tiny-2" {
		t.Errorf("HTTP %d, copied %v", resp.StatusCode, ts.f.copied)
	}
	decode(t, ts.do("POST", "/api/copy", map[string]any{"source": "nope", "destination": "x"}), 404, nil)
	decode(t, ts.do("POST", "/api/copy", map[string]any{"source": "tiny"}), 400, nil)
	var out map[string]any
	decode(t, ts.do("POST", "/api/copy", map[string]any{"source": "other", "destination": "tiny"}), 400, &out)
	if out["error"] != `load: model "tiny" already exists` {
		t.Errorf("taken name: %v", out)
	}
}

func TestOllamaDelete(t *testing.T) {
	ts := start(t, newFake(), nil)
	resp := ts.do("DELETE", "/api/delete", map[string]any{"model": "tiny"})
	resp.Body.Close()
	if resp.StatusCode != 200 || len(ts.f.deleted) != 1 || ts.f.deleted[0] != "tiny" {
		t.Errorf("HTTP %d, deleted %v", resp.StatusCode, ts.f.deleted)
	}
	decode(t, ts.do("DELETE", "/api/delete", map[string]any{"model": "nope"}), 404, nil)
	decode(t, ts.do("DELETE", "/api/delete", map[string]any{}), 400, nil)
}
