package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

func createJob(t *testing.T, ts *testServer, body map[string]any) jobCreated {
	t.Helper()
	var jc jobCreated
	resp := ts.do("POST", "/v1/jobs", body)
	if loc := resp.Header.Get("Location"); resp.StatusCode == 202 && !strings.HasPrefix(loc, "/v1/jobs/j") {
		t.Errorf("Location %q", loc)
	}
	decode(t, resp, http.StatusAccepted, &jc)
	if jc.ID == "" || jc.EventsURL != "/v1/jobs/"+jc.ID+"/events" {
		t.Fatalf("created %+v", jc)
	}
	return jc
}

// events reads a job's whole event stream (after seq after) and returns the
// events and whether it ended with "event: end".
func events(t *testing.T, ts *testServer, id string, after int64) ([]api.Event, bool) {
	t.Helper()
	resp := ts.do("GET", "/v1/jobs/"+id+"/events", nil, "Last-Event-ID", strconv.FormatInt(after, 10))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []api.Event
	ended := false
	for _, se := range readSSE(t, resp.Body, 0) {
		if se.event == "end" {
			ended = true
			continue
		}
		var ev api.Event
		if err := json.Unmarshal([]byte(se.data), &ev); err != nil {
			t.Fatal(err)
		}
		if se.id != strconv.FormatInt(ev.Seq, 10) || se.event != ev.Type {
			t.Errorf("SSE id %q event %q for seq %d type %s", se.id, se.event, ev.Seq, ev.Type)
		}
		out = append(out, ev)
	}
	return out, ended
}

func tokensOf(evs []api.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == api.TypeToken {
			b.WriteString(ev.Token.Text)
		}
	}
	return b.String()
}

func TestNativeJob(t *testing.T) {
	ts := start(t, newFake(), nil)
	jc := createJob(t, ts, map[string]any{"model": "tiny", "prompt": "a b c", "options": map[string]any{"temperature": 0}})
	evs, ended := events(t, ts, jc.ID, 0)
	if !ended {
		t.Error("stream did not end with event: end")
	}
	var types []string
	for i, ev := range evs {
		if ev.Seq != int64(i+1) || ev.Job != jc.ID {
			t.Errorf("event %d: seq %d job %s", i, ev.Seq, ev.Job)
		}
		if ev.Type != api.TypeToken && ev.Type != api.TypeProgress {
			types = append(types, ev.Type+":"+ev.Stage+ev.State)
		}
	}
	want := "state:queued state:running stage_skipped:load stage_start:prefill stage_done:prefill " +
		"stage_start:generate stage_done:generate result: state:done"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if tokensOf(evs) != "Once upon a time, there was a cat." {
		t.Errorf("tokens %q", tokensOf(evs))
	}
	var res Result
	if err := json.Unmarshal(evs[len(evs)-2].Result, &res); err != nil || res.Tokens != 10 || res.PromptTokens != 3 {
		t.Errorf("result %s: %v", evs[len(evs)-2].Result, err)
	}

	var job api.Job
	decode(t, ts.do("GET", "/v1/jobs/"+jc.ID, nil), 200, &job)
	if job.State != api.StateDone || job.Kind != "text" || job.Model != "tiny" || job.LastSeq != int64(len(evs)) {
		t.Errorf("job %+v", job)
	}
	// Replay from the middle: exactly the rest.
	rest, _ := events(t, ts, jc.ID, 5)
	if len(rest) != len(evs)-5 || rest[0].Seq != 6 {
		t.Errorf("replay after 5: %d events from %d", len(rest), rest[0].Seq)
	}
	// ?after= works like Last-Event-ID.
	resp := ts.do("GET", "/v1/jobs/"+jc.ID+"/events?after="+strconv.Itoa(len(evs)), nil)
	if got := readSSE(t, resp.Body, 0); len(got) != 1 || got[0].event != "end" {
		t.Errorf("after the last event: %v", got)
	}
	resp.Body.Close()
}

// TestNativeReconnect disconnects from a running job mid-generation,
// reconnects with Last-Event-ID and checks every event arrives exactly once
// and the job ran on meanwhile.
func TestNativeReconnect(t *testing.T) {
	f := newFake()
	f.step = 10 * time.Millisecond
	f.maxTokens = 30
	ts := start(t, f, nil)
	jc := createJob(t, ts, map[string]any{"model": "tiny", "prompt": "go"})

	resp := ts.do("GET", jc.EventsURL, nil)
	first := readSSE(t, resp.Body, 8) // some tokens in
	resp.Body.Close()                 // the client goes away mid-generation
	last := first[len(first)-1].id
	waitFor(t, "the job to end without a client", func() bool {
		j := ts.m.Job(jc.ID)
		return j != nil && api.Terminal(j.Info().State)
	})
	n, _ := strconv.ParseInt(last, 10, 64)
	rest, ended := events(t, ts, jc.ID, n)
	if !ended {
		t.Error("no end event")
	}
	var all []api.Event
	for _, se := range first {
		var ev api.Event
		json.Unmarshal([]byte(se.data), &ev)
		all = append(all, ev)
	}
	all = append(all, rest...)
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: lost or duplicated", i, ev.Seq)
		}
	}
	full, _ := events(t, ts, jc.ID, 0)
	if len(all) != len(full) || tokensOf(all) != tokensOf(full) || all[len(all)-1].State != api.StateDone {
		t.Errorf("reconnected %d events, job has %d; text %q vs %q", len(all), len(full), tokensOf(all), tokensOf(full))
	}
}

func TestNativeCancelAndList(t *testing.T) {
	f := newFake()
	f.hold = make(chan struct{}) // the jobs run until cancelled
	ts := start(t, f, func(c *Config) { c.MaxQueue = 10 })
	var ids []string
	for i := range 3 {
		ids = append(ids, createJob(t, ts, map[string]any{"model": "tiny", "prompt": fmt.Sprint("job ", i)}).ID)
	}
	// The second and third jobs wait: their events say where they are.
	waitFor(t, "queue positions", func() bool {
		evs := ts.m.Job(ids[2]).Events(0)
		for _, ev := range evs {
			if ev.Type == api.TypeProgress && ev.Stage == "queued" && ev.Progress.Done == 1 && ev.Progress.Total == 2 {
				return true
			}
		}
		return false
	})
	for _, id := range ids {
		var j api.Job
		decode(t, ts.do("POST", "/v1/jobs/"+id+"/cancel", nil), http.StatusAccepted, &j)
	}
	for _, id := range ids {
		evs, _ := events(t, ts, id, 0)
		last := evs[len(evs)-1]
		if last.State != api.StateCancelled || evs[len(evs)-2].Error == nil {
			t.Errorf("job %s ended %+v", id, last)
		}
	}
	// The third job moved to position 0 when the first was cancelled, or
	// was cancelled while waiting.
	var list jobList
	decode(t, ts.do("GET", "/v1/jobs?limit=2", nil), 200, &list)
	if len(list.Jobs) != 2 || list.Jobs[0].ID != ids[2] || list.Jobs[1].ID != ids[1] || list.Next != ids[1] {
		t.Fatalf("page 1: %+v", list)
	}
	var page2 jobList
	decode(t, ts.do("GET", "/v1/jobs?limit=2&before="+list.Next, nil), 200, &page2)
	if len(page2.Jobs) != 1 || page2.Jobs[0].ID != ids[0] || page2.Next != "" {
		t.Errorf("page 2: %+v", page2)
	}
	var e nativeError
	decode(t, ts.do("GET", "/v1/jobs/jnope", nil), http.StatusNotFound, &e)
	if e.Error.Code != "job_not_found" {
		t.Errorf("%+v", e)
	}
	decode(t, ts.do("POST", "/v1/jobs/jnope/cancel", nil), http.StatusNotFound, &e)
	if running, _, _ := f.stats(); running != 0 {
		t.Errorf("%d generations still running", running)
	}
}

func TestNativeInfo(t *testing.T) {
	ts := start(t, newFake(), func(c *Config) {
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("glassbox_up 1\n")) })
	})
	var h health
	decode(t, ts.do("GET", "/healthz", nil), 200, &h)
	if h.Status != "ok" || h.Queue.Parallel != 1 || h.Queue.MaxQueue != 4 {
		t.Errorf("%+v", h)
	}
	var plan map[string]any
	decode(t, ts.do("POST", "/v1/plan", map[string]any{"model": "tiny", "ctx": 256}), 200, &plan)
	if plan["verdict"] != "fits, ~9000 tok/s" || plan["ctx"] != 256.0 {
		t.Errorf("plan %v", plan)
	}
	var e nativeError
	decode(t, ts.do("POST", "/v1/plan", map[string]any{"model": "nope"}), 404, &e)
	decode(t, ts.do("POST", "/v1/plan", map[string]any{"model": "tiny", "ctx": -1}), 400, &e)
	var ps psResponse
	decode(t, ts.do("GET", "/v1/ps", nil), 200, &ps)
	if ps.Models == nil || len(ps.Models) != 0 || ps.Queue.Parallel != 1 {
		t.Errorf("%+v", ps)
	}
	var rr residentReply
	decode(t, ts.do("POST", "/v1/ps/tiny/load", `{"keep_alive":"1h"}`), 200, &rr)
	decode(t, ts.do("GET", "/v1/ps", nil), 200, &ps)
	if rr.Action != "loaded" || len(ps.Models) != 1 || ps.Models[0].KeepAlive != "1h0m0s" || ps.Models[0].ExpiresAt == nil {
		t.Errorf("after load: %+v %+v", rr, ps.Models)
	}
	decode(t, ts.do("POST", "/v1/ps/tiny/unload", nil), 200, &rr)
	decode(t, ts.do("GET", "/v1/ps", nil), 200, &ps)
	if rr.Action != "unloaded" || len(ps.Models) != 0 {
		t.Errorf("after unload: %+v %+v", rr, ps.Models)
	}
	decode(t, ts.do("POST", "/v1/ps/nope/unload", nil), 404, &e)
	decode(t, ts.do("POST", "/v1/ps/tiny/load", `{"keep_alive":"soon"}`), 400, &e)
	resp := ts.do("GET", "/metrics", nil)
	decode(t, resp, 200, nil)
}

// TestNativeJobTools: a chat job with tools returns the calls in its
// result; tools need messages.
func TestNativeJobTools(t *testing.T) {
	ts := start(t, newFake(), nil)
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	jc := createJob(t, ts, map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "weather?"}},
		"tools": tools, "tool_choice": "required"})
	evs, _ := events(t, ts, jc.ID, 0)
	var res Result
	for _, ev := range evs {
		if ev.Type == api.TypeResult {
			json.Unmarshal(ev.Result, &res)
		}
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "weather" || string(res.ToolCalls[0].Arguments) != `{"city":"Paris"}` {
		t.Fatalf("result %+v", res)
	}
	if r := ts.f.requests[0]; r.ToolChoice != "required" || len(r.ToolNames) != 1 || r.Options.Format == "" {
		t.Errorf("request reached the backend as %+v", r)
	}
	for _, body := range []map[string]any{
		{"model": "tiny", "prompt": "x", "tools": tools},
		{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "x"}}, "tools": "f"},
		{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "x"}}, "tool_choice": "required"},
	} {
		decode(t, ts.do("POST", "/v1/jobs", body), 400, nil)
	}
}

// TestNativeDefaults: GET /v1/defaults gives exactly the options a native
// job that sets none runs with (the web UI shows them as placeholders).
func TestNativeDefaults(t *testing.T) {
	ts := start(t, newFake(), nil)
	var d defaultsResponse
	decode(t, ts.do("GET", "/v1/defaults", nil), 200, &d)
	jc := createJob(t, ts, map[string]any{"model": "tiny", "prompt": "a b c"})
	if _, ended := events(t, ts, jc.ID, 0); !ended {
		t.Fatal("the job's stream did not end")
	}
	ran := ts.last().Options
	o := d.Options
	if o.NumPredict != ran.NumPredict || o.Temperature != ran.Temperature || o.TopK != ran.TopK || o.TopP != ran.TopP ||
		o.MinP != ran.MinP || o.RepeatPenalty != ran.RepeatPenalty || o.RepeatLastN != ran.RepeatLastN {
		t.Errorf("GET /v1/defaults says %+v; a job with no options ran with %+v", o, ran)
	}
	if o.TopP != 0.95 || o.MinP != 0.05 || o.RepeatPenalty != 1 {
		t.Errorf("defaults %+v, want glassbox run's top-p 0.95, min-p 0.05, repeat penalty 1", o)
	}
}
