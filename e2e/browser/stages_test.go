package browser

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/web"
)

// TestStageModel runs the page's job model (web/static/js/stages.js) in the
// browser over event logs that arrive whole, twice (a reconnect that
// replays), end in failure without a stage start, are cancelled, or still
// run, and checks the stage each row shows, the text and the numbers.
func TestStageModel(t *testing.T) {
	if puregoBuild {
		t.Skip("the browser tests check the page, not the kernels: run once, without -tags purego")
	}
	exe := chromium(t)
	srv := httptest.NewServer(web.Handler(web.Config{}))
	defer srv.Close()
	b := newBrowser(t, exe)
	b.navigate(srv.URL + "/")

	t0 := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	type ev = api.Event
	tok := func(ms float64, text string) ev {
		return ev{Time: at(ms), Type: api.TypeToken, Stage: "generate", Token: &api.Token{ID: 1, Text: text}}
	}
	done := []ev{
		{Time: at(0), Type: api.TypeState, State: api.StateQueued},
		{Time: at(1), Type: api.TypeState, State: api.StateRunning},
		{Time: at(1), Type: api.TypeStageStart, Stage: "plan"},
		{Time: at(2), Type: api.TypeStageDone, Stage: "plan", DurationMS: 1, Stats: &api.StageStats{Bytes: 16 << 20, Note: "fits"}},
		{Time: at(2), Type: api.TypeStageSkipped, Stage: "load", Reason: "model already resident"},
		{Time: at(2), Type: api.TypeStageStart, Stage: "encode"},
		{Time: at(3), Type: api.TypeStageDone, Stage: "encode", DurationMS: 1, Stats: &api.StageStats{Items: 5, Unit: "tokens"}},
		{Time: at(3), Type: api.TypeStageStart, Stage: "prefill"},
		{Time: at(4), Type: api.TypeProgress, Stage: "prefill", Progress: &api.Progress{Done: 5, Total: 5, Unit: "tokens"}},
		{Time: at(13), Type: api.TypeStageDone, Stage: "prefill", DurationMS: 10, Stats: &api.StageStats{Items: 5, Unit: "tokens"}},
		{Time: at(13), Type: api.TypeStageStart, Stage: "generate"},
		tok(20, "Once"), tok(30, " upon"),
		{Time: at(113), Type: api.TypeStageDone, Stage: "generate", DurationMS: 100,
			// 61 tokens: 60 decode passes in 100 ms (the first comes from the prompt's pass).
			Stats: &api.StageStats{Items: 61, Unit: "tokens", Roofline: 1200, Limiter: "memory bandwidth", PeakRSS: 3 << 20}},
		{Time: at(113), Type: api.TypeStageSkipped, Stage: "decode", Reason: "text was decoded as it was generated"},
		{Time: at(114), Type: api.TypeResult, Result: json.RawMessage(`{"text":"Once upon"}`)},
		{Time: at(114), Type: api.TypeState, State: api.StateDone, DurationMS: 114},
	}
	failed := []ev{
		{Time: at(0), Type: api.TypeState, State: api.StateQueued},
		{Time: at(0), Type: api.TypeState, State: api.StateRunning},
		{Time: at(0), Type: api.TypeStageStart, Stage: "encode"},
		{Time: at(1), Type: api.TypeStageDone, Stage: "encode", DurationMS: 1, Stats: &api.StageStats{Items: 542, Unit: "tokens"}},
		{Time: at(1), Type: api.TypeError, Stage: "prefill", Error: &api.Error{Stage: "prefill", Cause: "prompt has 542 tokens but the context holds 128", Hint: "shorten it"}},
		{Time: at(2), Type: api.TypeState, State: api.StateFailed, DurationMS: 2},
	}
	failedAfterDone := []ev{
		{Time: at(0), Type: api.TypeState, State: api.StateRunning},
		{Time: at(0), Type: api.TypeStageStart, Stage: "encode"},
		{Time: at(1), Type: api.TypeStageDone, Stage: "encode", DurationMS: 1, Stats: &api.StageStats{Items: 542, Unit: "tokens"}},
		{Time: at(1), Type: api.TypeError, Stage: "encode", Error: &api.Error{Stage: "encode", Cause: "prompt has 542 tokens but the context holds 128"}},
		{Time: at(2), Type: api.TypeState, State: api.StateFailed, DurationMS: 2},
	}
	cancelled := []ev{
		{Time: at(0), Type: api.TypeState, State: api.StateRunning},
		{Time: at(0), Type: api.TypeStageStart, Stage: "generate"},
		tok(10, "a"), tok(20, "b"), tok(30, "c"),
		{Time: at(31), Type: api.TypeError, Stage: "generate", Error: &api.Error{Stage: "generate", Cause: "cancelled by client"}},
		{Time: at(31), Type: api.TypeState, State: api.StateCancelled, DurationMS: 31, StopMS: 0.5},
	}
	running := []ev{
		{Time: at(0), Type: api.TypeState, State: api.StateRunning},
		{Time: at(0), Type: api.TypeStageStart, Stage: "generate"},
		tok(10, "x"),
		{Time: at(10), Type: api.TypeProgress, Stage: "generate", Progress: &api.Progress{Done: 1, Total: 300, Unit: "tokens", Rate: 100}},
	}
	coldLoad := []ev{
		{Time: at(0), Type: api.TypeState, State: api.StateRunning},
		{Time: at(0), Type: api.TypeStageStart, Stage: "load"},
		{Time: at(100), Type: api.TypeStageDone, Stage: "load", DurationMS: 100, Stats: &api.StageStats{Bytes: 100 << 20}},
		{Time: at(100), Type: api.TypeStageStart, Stage: "generate"},
		tok(110, "o"), tok(120, "k"),
		{Time: at(120), Type: api.TypeStageDone, Stage: "generate", DurationMS: 20, Stats: &api.StageStats{Items: 2, Unit: "tokens"}},
		{Time: at(120), Type: api.TypeState, State: api.StateDone, DurationMS: 120},
	}
	// A generation that ended at an end-of-generation token: 60 answer
	// tokens and the end token, 60 decode passes in 100 ms.
	endToken := []ev{
		{Time: at(0), Type: api.TypeState, State: api.StateRunning},
		{Time: at(0), Type: api.TypeStageStart, Stage: "generate"},
		tok(10, "z"),
		{Time: at(100), Type: api.TypeStageDone, Stage: "generate", DurationMS: 100, Stats: &api.StageStats{Items: 60, EndToken: true, Unit: "tokens"}},
		{Time: at(100), Type: api.TypeState, State: api.StateDone, DurationMS: 100},
	}
	number := func(evs []ev) []ev {
		for i := range evs {
			evs[i].Seq, evs[i].Job = int64(i+1), "j"
		}
		return evs
	}
	type want struct {
		State  string            `json:"state"`
		Text   string            `json:"text"`
		Tokens int               `json:"tokens"`
		Status map[string]string `json:"status"`
		Nums   map[string]string `json:"nums"`
		// Verdict is verdict(job) joined by " | "; checked when set.
		Verdict string `json:"verdict"`
		// Ends are where stages' bars end on the track (left + width, a
		// fraction, 4 decimals); checked when set.
		Ends map[string]string `json:"ends"`
	}
	tests := []struct {
		name   string
		events []ev
		twice  bool // apply the whole log again, as a replaying reconnect would
		want   want
	}{
		{"done", number(done), false, want{State: "done", Text: "Once upon", Tokens: 2,
			Status: map[string]string{"queued": "none", "plan": "done", "load": "skipped", "encode": "done", "prefill": "done",
				"generate": "done", "decode": "skipped", "deliver": "none"},
			Nums: map[string]string{"plan": "16.0 MiB planned · fits", "load": "skipped: model already resident",
				"prefill":  "5 tokens, 500 tokens/s",
				"generate": "61 tokens, 600 tokens/s · 50% of roofline (1,200/s, memory bandwidth) · peak 3.0 MiB"},
			Verdict: "generation ran at 600 tokens/s, 50% of this machine's roofline (1,200 tokens/s), limited by memory bandwidth."}},
		{"replayed", number(done), true, want{State: "done", Text: "Once upon", Tokens: 2,
			Status: map[string]string{"queued": "none", "plan": "done", "load": "skipped", "encode": "done", "prefill": "done",
				"generate": "done", "decode": "skipped", "deliver": "none"},
			Nums: map[string]string{"encode": "5 tokens"}}},
		{"cold load", number(coldLoad), false, want{State: "done", Text: "ok", Tokens: 2,
			Status:  map[string]string{"load": "done", "generate": "done"},
			Nums:    map[string]string{"load": "100.0 MiB read (1000.0 MiB/s)"},
			Verdict: "100.0 ms of 120.0 ms was loading the model (reading the file, laying out its weights for the kernels): it was not resident (glassbox serve keeps a model loaded between jobs; each CLI run loads it again). | generation ran at 50.0 tokens/s."}},
		{"failed without a start", number(failed), false, want{State: "failed",
			Status: map[string]string{"encode": "done", "prefill": "failed", "generate": "none"},
			Nums:   map[string]string{"encode": "542 tokens"}}},
		{"failed after its stage reported done", number(failedAfterDone), false, want{State: "failed",
			Status: map[string]string{"encode": "failed", "prefill": "none"},
			Nums:   map[string]string{"encode": "542 tokens"}}},
		{"cancelled", number(cancelled), false, want{State: "cancelled", Text: "abc", Tokens: 3,
			Status: map[string]string{"generate": "stopped", "prefill": "none"},
			Nums:   map[string]string{"generate": "3 tokens, 64.5 tokens/s"}}},
		// 1 of 300 tokens after 50 ms: the axis reaches the generation's
		// expected end, 15 s, so its bar is 1/300 of the track, not all of it.
		{"running", number(running), false, want{State: "running", Text: "x", Tokens: 1,
			Status: map[string]string{"generate": "running", "decode": "pending"},
			Nums:   map[string]string{"generate": "1 / 300 tokens, 100 tokens/s"},
			Ends:   map[string]string{"generate": "0.0033"}}},
		{"ended at an end token", number(endToken), false, want{State: "done", Text: "z", Tokens: 1,
			Status: map[string]string{"generate": "done"},
			Nums:   map[string]string{"generate": "60 tokens, 600 tokens/s"},
			Ends:   map[string]string{"generate": "1.0000"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b.t = t
			logJSON, _ := json.Marshal(tc.events)
			now := at(50).UnixMilli()
			expr := `(async () => {
				const m = await import('/ui/js/stages.js');
				const fmt = await import('/ui/js/fmt.js');
				const log = ` + string(logJSON) + `;
				const job = m.newJob('j');
				for (const ev of log) m.apply(job, ev);
				if (` + map[bool]string{true: "true", false: "false"}[tc.twice] + `) for (const ev of log) m.apply(job, ev);
				const out = {state: job.state, text: job.text, tokens: job.tokens, status: {}, nums: {}, ends: {}, verdict: m.verdict(job, fmt).join(' | ')};
				for (const r of m.rows(job, ` + jsInt(now) + `)) {
					out.status[r.name] = r.status;
					out.ends[r.name] = (r.left + r.width).toFixed(4);
					out.nums[r.name] = m.numbers(r, fmt).join(' · ');
					if (r.left < 0 || r.width < 0 || r.left + r.width > 1.000001) out.status[r.name] += ' off-axis';
				}
				return JSON.stringify(out);
			})()`
			ctx, cancel := context.WithTimeout(b.ctx, hang)
			defer cancel()
			raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatal(err)
			}
			var got want
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatal(err)
			}
			if got.State != tc.want.State || got.Text != tc.want.Text || got.Tokens != tc.want.Tokens {
				t.Errorf("state %q text %q tokens %d, want %q %q %d", got.State, got.Text, got.Tokens, tc.want.State, tc.want.Text, tc.want.Tokens)
			}
			for stage, st := range tc.want.Status {
				if got.Status[stage] != st {
					t.Errorf("stage %s is %q, want %q", stage, got.Status[stage], st)
				}
			}
			if tc.want.Verdict != "" && got.Verdict != tc.want.Verdict {
				t.Errorf("verdict %q, want %q", got.Verdict, tc.want.Verdict)
			}
			for stage, e := range tc.want.Ends {
				if got.Ends[stage] != e {
					t.Errorf("stage %s's bar ends at %s of the track, want %s", stage, got.Ends[stage], e)
				}
			}
			for stage, n := range tc.want.Nums {
				if got.Nums[stage] != n {
					t.Errorf("stage %s numbers %q, want %q", stage, got.Nums[stage], n)
				}
			}
			if reflect.DeepEqual(got, want{}) {
				t.Error("empty result")
			}
		})
	}
	t.Run("contrast check", func(t *testing.T) {
		// The check itself: light grey on white must be reported, black must not.
		b.t = t
		got := eval[[]string](b, `(() => {
			const add = (color) => { const p = document.createElement('p'); p.textContent = 'probe ' + color; p.style.color = color; p.style.background = '#fff'; document.body.append(p); return p; };
			const ps = [add('#bbbbbb'), add('#000000')];
			const bad = `+contrastJS+`.filter((m) => m.includes('probe'));
			ps.forEach((p) => p.remove());
			return bad;
		})()`)
		if len(got) != 1 || !strings.Contains(got[0], "#bbbbbb") {
			t.Errorf("contrast check found %q, want only the #bbbbbb probe", got)
		}
	})
	b.t = t
	b.checkJS()
}

func jsInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
