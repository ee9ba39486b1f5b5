package api

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// The JSON names are a contract with clients (docs/API.md): pin them.
func TestEventJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"state", Event{Seq: 1, Time: t0, Job: "j", Type: TypeState, State: StateQueued},
			`{"seq":1,"time":"2026-11-29T21:00:00Z","job":"j","type":"state","state":"queued"}`},
		{"cancelled", Event{Seq: 9, Time: t0, Job: "j", Type: TypeState, State: StateCancelled, DurationMS: 12.5, StopMS: 0.25, Reason: "client left"},
			`{"seq":9,"time":"2026-11-29T21:00:00Z","job":"j","type":"state","state":"cancelled","duration_ms":12.5,"stop_ms":0.25,"reason":"client left"}`},
		{"stage_done", Event{Seq: 2, Time: t0, Job: "j", Type: TypeStageDone, Stage: "load", DurationMS: 3,
			Stats: &StageStats{Bytes: 10, Items: 2, Unit: "tokens", PeakRSS: 5, Placement: "cpu", Note: "n", Roofline: 100, Limiter: "memory bandwidth"}},
			`{"seq":2,"time":"2026-11-29T21:00:00Z","job":"j","type":"stage_done","stage":"load","duration_ms":3,"stats":{"bytes":10,"items":2,"unit":"tokens","peak_rss":5,"placement":"cpu","note":"n","roofline":100,"limiter":"memory bandwidth"}}`},
		{"progress at zero", Event{Seq: 3, Time: t0, Job: "j", Type: TypeProgress, Stage: "queued", Progress: &Progress{Done: 0, Total: 4, Unit: "position"}},
			`{"seq":3,"time":"2026-11-29T21:00:00Z","job":"j","type":"progress","stage":"queued","progress":{"done":0,"total":4,"unit":"position"}}`},
		{"token", Event{Seq: 4, Time: t0, Job: "j", Type: TypeToken, Stage: "generate", Token: &Token{ID: 0, Text: ""}},
			`{"seq":4,"time":"2026-11-29T21:00:00Z","job":"j","type":"token","stage":"generate","token":{"id":0,"text":""}}`},
		{"warning", Event{Seq: 5, Time: t0, Job: "j", Type: TypeWarning, Warning: &Warning{Code: "c", Message: "m"}},
			`{"seq":5,"time":"2026-11-29T21:00:00Z","job":"j","type":"warning","warning":{"code":"c","message":"m"}}`},
		{"result", Event{Seq: 6, Time: t0, Job: "j", Type: TypeResult, Result: json.RawMessage(`{"text":"hi"}`)},
			`{"seq":6,"time":"2026-11-29T21:00:00Z","job":"j","type":"result","result":{"text":"hi"}}`},
		{"error", Event{Seq: 7, Time: t0, Job: "j", Type: TypeError, Stage: "encode", Error: &Error{Stage: "encode", Message: "encode: x (h)", Cause: "x", Hint: "h", Numbers: map[string]int64{"ctx": 1}, Internal: true}},
			`{"seq":7,"time":"2026-11-29T21:00:00Z","job":"j","type":"error","stage":"encode","error":{"stage":"encode","message":"encode: x (h)","cause":"x","hint":"h","numbers":{"ctx":1},"internal":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
			var back Event
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			b2, _ := json.Marshal(back)
			if string(b2) != string(b) {
				t.Errorf("round trip changed it: %s", b2)
			}
		})
	}
}

func TestJobJSONOmitsUnsetTimes(t *testing.T) {
	b, _ := json.Marshal(Job{ID: "j", State: StateQueued, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if want := `{"id":"j","state":"queued","created":"2026-01-02T03:04:05Z","last_seq":0}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	for _, s := range []string{StateDone, StateFailed, StateCancelled} {
		if !Terminal(s) {
			t.Errorf("%s is not terminal", s)
		}
	}
	if Terminal(StateRunning) || Terminal(StateQueued) {
		t.Error("running/queued taken as terminal")
	}
}

// TestStageRate: a text generation's rate counts its decode passes (one
// fewer than its tokens); other stages count their items.
func TestStageRate(t *testing.T) {
	for _, tc := range []struct {
		stage string
		st    StageStats
		sec   float64
		want  float64
	}{
		{"generate", StageStats{Items: 65, Unit: "tokens"}, 2, 32},
		{"generate", StageStats{Items: 1, Unit: "tokens"}, 0.0001, 0},
		{"generate", StageStats{Items: 20, Unit: "steps"}, 2, 10},
		{"prefill", StageStats{Items: 12, Unit: "tokens"}, 0.2, 60},
		{"prefill", StageStats{Items: 12, Unit: "tokens"}, 0, 0},
	} {
		if got := tc.st.Rate(tc.stage, tc.sec); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s %+v over %g s: rate %g, want %g", tc.stage, tc.st, tc.sec, got, tc.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		unit string
		want string
	}{
		{1, "tokens", "1 token"}, {2, "tokens", "2 tokens"}, {1, "UNet calls", "1 UNet call"},
		{1, "images", "1 image"}, {0, "tiles", "0 tiles"}, {1, "bytes", "1 bytes"}, {1, "", "1 "},
	} {
		if got := Count(tc.n, tc.unit); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.unit, got, tc.want)
		}
	}
}
