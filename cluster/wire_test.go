package cluster

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/server"
)

func TestTokenRoundTrip(t *testing.T) {
	for _, name := range []string{"stories260K", "llama3.2:1b", "hf.co/org/model:Q4_K_M", "a_b", "a b*>", "", "ünï"} {
		tok := Token(name)
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Fatalf("Token(%q) = %q: byte %q is not subject- and consumer-safe", name, tok, c)
			}
		}
		back, err := Untoken(tok)
		if err != nil || back != name {
			t.Fatalf("Untoken(Token(%q)) = %q, %v", name, back, err)
		}
	}
	if Token("a.b") == Token("a_b") {
		t.Fatal("distinct names share a token")
	}
	if got := JobSubject("llama3.2:1b"); got != "jobs.llama3_2e2_3a1b" {
		t.Fatalf("JobSubject = %q", got)
	}
	for _, bad := range []string{"a_", "a_4", "a_zz"} {
		if _, err := Untoken(bad); err == nil {
			t.Fatalf("Untoken(%q): no error", bad)
		}
	}
}

func TestJobRoundTrip(t *testing.T) {
	seed := uint64(7)
	j := Job{ID: "c1", Kind: "text", Queued: time.Unix(5, 0).UTC(), Request: &server.GenerateRequest{Model: "m",
		Messages: []server.Message{{Role: "user", Content: "hi"}}, Options: server.Options{NumPredict: 3, Seed: &seed, Stop: []string{"\n"}}}}
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeJob(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "c1" || got.Request.Messages[0].Content != "hi" || *got.Request.Options.Seed != 7 || got.Request.Options.Stop[0] != "\n" || !got.Queued.Equal(j.Queued) {
		t.Fatalf("round trip: %+v", got)
	}
	for _, bad := range []string{`{`, `{"kind":"text","request":{"model":"m"}}`, `{"id":"x","kind":"image","request":{"model":"m"}}`, `{"id":"x","kind":"text"}`} {
		if _, err := DecodeJob([]byte(bad)); err == nil {
			t.Fatalf("DecodeJob(%s): no error", bad)
		}
	}
}

func TestEventChecks(t *testing.T) {
	good := []Event{
		{Seq: 1, Attempt: 1, Type: EvTaken, Worker: "w"},
		{Seq: 2, Attempt: 1, Type: EvStageStart, Stage: "prefill"},
		{Seq: 3, Attempt: 1, Type: EvToken, Token: &api.Token{ID: 5, Text: "a"}},
		{Seq: 4, Attempt: 2, Type: EvResult, Result: &server.Result{Text: "a"}},
		{Seq: 5, Attempt: 1, Type: EvError, Error: &api.Error{Stage: "load", Cause: "x"}},
	}
	for _, ev := range good {
		data, _ := json.Marshal(ev)
		if _, err := DecodeEvent(data); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
	}
	bad := []Event{
		{Seq: 1, Attempt: 1, Type: "nope"},
		{Seq: 1, Attempt: 1, Type: EvToken},
		{Seq: 1, Attempt: 1, Type: EvResult},
		{Seq: 1, Attempt: 1, Type: EvError},
		{Seq: 1, Attempt: 1, Type: EvStageStart, Stage: "bake"},
		{Seq: 0, Attempt: 1, Type: EvTaken},
		{Seq: 1, Attempt: 0, Type: EvTaken},
	}
	for _, ev := range bad {
		data, _ := json.Marshal(ev)
		if _, err := DecodeEvent(data); err == nil {
			t.Fatalf("%s: no error", data)
		}
	}
	if _, err := DecodeWorker([]byte(`{"models":[]}`)); err == nil {
		t.Fatal("a worker entry without a name was accepted")
	}
	w, err := DecodeWorker([]byte(`{"name":"w1","models":[{"name":"m"}]}`))
	if err != nil || !w.Holds("m") || w.Holds("n") {
		t.Fatalf("DecodeWorker: %+v, %v", w, err)
	}
}

func TestStageError(t *testing.T) {
	err := stageError(&api.Error{Stage: "encode", Message: "encode: too long", Cause: "too long", Hint: "shorter", Numbers: map[string]int64{"tokens": 9}}, "w1")
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Stage != pipeline.StageEncode || pe.Hint != "shorter" || pe.Numbers["tokens"] != 9 || !strings.Contains(err.Error(), "on worker w1: too long") {
		t.Fatalf("stageError: %v", err)
	}
	if s, _ := pipeline.StageOf(stageError(&api.Error{Stage: "bogus", Message: "x"}, "w")); s != pipeline.StagePlan {
		t.Fatalf("unknown stage → %q, want plan", s)
	}
}

// recorder is a pipeline.Trace that notes what it is told.
type recorder struct{ got []string }

func (r *recorder) trace() *pipeline.Trace {
	return &pipeline.Trace{
		StageStart: func(s pipeline.Stage) { r.got = append(r.got, "start "+string(s)) },
		Token:      func(tok api.Token) { r.got = append(r.got, "token "+tok.Text) },
		Warning:    func(code, _ string) { r.got = append(r.got, "warn "+code) },
		PartDone: func(s pipeline.Stage, part string, _ time.Duration, _ pipeline.StageStats) {
			r.got = append(r.got, "part "+string(s))
		},
	}
}

func TestRelayRedelivery(t *testing.T) {
	var rec recorder
	r := &relay{tr: rec.trace(), id: "c1"}
	tok := func(a int, seq int64, id int, text string) *Event {
		return &Event{Attempt: a, Seq: seq, Worker: map[int]string{1: "w1", 2: "w2"}[a], Type: EvToken, Token: &api.Token{ID: id, Text: text}}
	}
	steps := []*Event{
		{Attempt: 1, Seq: 1, Worker: "w1", Type: EvTaken},
		{Attempt: 1, Seq: 2, Worker: "w1", Type: EvStageStart, Stage: "generate"},
		tok(1, 3, 10, "a"), tok(1, 4, 11, "b"),
		// w1 dies; w2 takes attempt 2, samples the same two tokens, then a third.
		{Attempt: 2, Seq: 1, Worker: "w2", Type: EvTaken},
		{Attempt: 2, Seq: 2, Worker: "w2", Type: EvStageStart, Stage: "generate"},
		tok(2, 3, 10, "a"), tok(2, 4, 11, "b"), tok(2, 5, 12, "c"),
		tok(1, 5, 99, "late"),  // attempt 1's straggler: ignored
		tok(2, 5, 12, "again"), // a repeat: ignored
	}
	for _, ev := range steps {
		if _, err, done := r.apply(ev); done {
			t.Fatalf("ended early: %v", err)
		}
	}
	res, err, done := r.apply(&Event{Attempt: 2, Seq: 6, Worker: "w2", Type: EvResult, Result: &server.Result{Text: "abc"}})
	if !done || err != nil || res.Worker != "w2" {
		t.Fatalf("result: %+v, %v, %v", res, err, done)
	}
	want := "part queued,start generate,token a,token b,warn cluster_redelivered,part queued,start generate,token c"
	if got := strings.Join(rec.got, ","); got != want {
		t.Fatalf("replayed:\n%s\nwant:\n%s", got, want)
	}

	// A redelivery that samples another token cannot be continued.
	r = &relay{tr: (&recorder{}).trace()}
	r.apply(tok(1, 1, 10, "a"))
	_, err, done = r.apply(tok(2, 1, 11, "x"))
	if s, _ := pipeline.StageOf(err); !done || s != pipeline.StageGenerate || !strings.Contains(err.Error(), "id 11 where the attempt before streamed id 10") {
		t.Fatalf("diverging redelivery: %v, %v", err, done)
	}
}

func TestCheckListen(t *testing.T) {
	for _, ok := range [][2]string{{"127.0.0.1:4222", ""}, {"localhost:0", ""}, {"[::1]:4222", ""}, {"0.0.0.0:4222", "secret"}} {
		if err := CheckListen(ok[0], ok[1]); err != nil {
			t.Fatalf("CheckListen(%q, %q): %v", ok[0], ok[1], err)
		}
	}
	for _, bad := range []string{"0.0.0.0:4222", ":4222", "192.168.1.5:4222", "nope"} {
		if err := CheckListen(bad, ""); err == nil {
			t.Fatalf("CheckListen(%q) without a token: no error", bad)
		}
	}
	if err := CheckListen(":4222", ""); !strings.Contains(err.Error(), "--cluster-token") {
		t.Fatalf("the error does not say what to do: %v", err)
	}
}
