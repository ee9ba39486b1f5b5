package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestUI runs the page's main paths in one browser against one server:
// generate and watch the stages complete, reload in the middle of a
// generation, cancel, open a failed job, the job list, the models view and
// a phone-width layout. Each step saves a screenshot.
func TestUI(t *testing.T) {
	if puregoBuild {
		t.Skip("the browser tests check the page, not the kernels: run once, without -tags purego")
	}
	exe := chromium(t)
	s := startServer(t)
	b := newBrowser(t, exe)
	px := newProxy(t, s.url) // the browser reaches the server through it
	b.navigate(px.url + "/")
	b.waitFor("the model list", `document.querySelector('#model option[value="slow"]')`, patience)

	// step runs one part of the walk-through. After a part that failed, the
	// next starts from a clean slate (the network restored, no job left
	// running or waiting, the Generate view loaded), so one failure is
	// reported once, by its own part, and not again by every later one.
	step := func(name string, fn func(t *testing.T)) {
		if t.Run(name, fn) {
			return
		}
		b.t = t
		px.release()
		px.restore()
		s.cancelAll(t)
		b.navigate(px.url + "/")
		b.waitFor("the Generate view after the failed step "+name, `document.querySelector('#model option[value="slow"]')`, patience)
	}

	// submit sends prompt from the Generate view in mode ("complete" or
	// "chat") and returns the job's id.
	submit := func(model, mode, prompt string, opts map[string]string) string {
		t := b.t
		t.Helper()
		b.click("#new")
		b.set("#model", model)
		b.set("#mode", mode)
		for _, name := range []string{"temperature", "top_k", "top_p", "min_p", "repeat_penalty", "num_predict", "num_ctx", "seed"} {
			b.set("#opt-"+name, opts[name])
		}
		b.set("#prompt", prompt)
		b.click("#send")
		b.waitFor("the job to start", `document.querySelector('#job-link a')`, patience)
		return eval[string](b, `document.querySelector('#job-link a').textContent`)
	}
	// start submits a completion.
	start := func(model, prompt string, opts map[string]string) string {
		return submit(model, "complete", prompt, opts)
	}
	output := func() string { return eval[string](b, `document.querySelector('#output').textContent`) }
	outState := func() string { return eval[string](b, `document.querySelector('#output')?.dataset.state ?? ''`) }
	tokens := func() int { return eval[int](b, `Number(document.querySelector('#output')?.dataset.tokens ?? 0)`) }
	stageStatus := func(stage string) string {
		return eval[string](b, fmt.Sprintf(`document.querySelector('.stage[data-stage=%q]')?.dataset.status ?? ''`, stage))
	}
	// sameAsJournal checks the page's text against the job's output in the journal.
	sameAsJournal := func(id string) api.Job {
		t := b.t
		t.Helper()
		j, evs := s.journaled(t, id)
		for _, ev := range evs {
			if ev.Type == api.TypeStageDone && ev.Stage == "generate" && ev.DurationMS > 0 && ev.Stats != nil {
				t.Logf("job %s: %d tokens generated at %.1f tokens/s", id, ev.Stats.Items, float64(ev.Stats.Items)/ev.DurationMS*1000)
			}
		}
		var streamed strings.Builder
		events := 0
		for _, ev := range evs {
			if ev.Type == api.TypeToken {
				streamed.WriteString(ev.Token.Text)
				events++
			}
		}
		want := streamed.String()
		if j.State == api.StateDone {
			text, n := resultText(t, j)
			if text != want {
				t.Errorf("journal: result text %q differs from its token events %q", text, want)
			}
			// The result does not count an end-of-generation token; it has
			// an event (of no text) like every token.
			if got := tokens(); got != events || n != events && n != events-1 {
				t.Errorf("page applied %d token events, the journal has %d, the result counts %d tokens", got, events, n)
			}
			if st := eval[string](b, `document.querySelector('#gen-status')?.textContent ?? ''`); strings.HasPrefix(st, "done") && !strings.HasPrefix(st, fmt.Sprintf("done: %d tokens", n)) {
				t.Errorf("status %q, want the result's %d tokens", st, n)
			}
		}
		if got := output(); got != want {
			t.Errorf("page text differs from the journal's:\npage    %q\njournal %q", got, want)
		}
		return j
	}

	step("generate", func(t *testing.T) {
		b.t = t
		id := start("stories260K", "Once upon a time", map[string]string{"num_predict": "60", "seed": "7"})
		b.waitFor("the job to finish", `document.querySelector('#output')?.dataset.state === 'done' && document.querySelector('.pipeline-view[data-state="done"]')`, patience)
		for _, st := range []string{"plan", "load", "encode", "prefill", "generate"} {
			if got := stageStatus(st); got != "done" {
				t.Errorf("stage %s is %q, want done", st, got)
			}
		}
		if got := stageStatus("decode"); got != "skipped" {
			t.Errorf("stage decode is %q, want skipped", got)
		}
		nums := eval[string](b, `document.querySelector('.stage[data-stage="generate"] .nums').textContent`)
		if !regexp.MustCompile(`(^| · )60 tokens, [0-9.,]+ tokens/s`).MatchString(nums) {
			t.Errorf("generate numbers %q, want 60 tokens and a rate", nums)
		}
		// The stage's own roofline when it reports one (served text jobs do),
		// else the planner's predicted rate.
		b.waitFor("the rate against the roofline or the plan", `/(^| · )60 tokens, .* (of the planned ~[0-9.,]+ tokens\/s|[0-9]+% of roofline \()/.test(document.querySelector('.stage[data-stage="generate"] .nums').textContent)`, patience)
		// Which stage the verdict names first depends on where this
		// machine spent the time (a loaded one may spend it in prefill);
		// the generation rate is always among its lines.
		if v := eval[string](b, `document.querySelector('#verdict-lines').textContent`); !strings.Contains(v, "generation ran at ") {
			t.Errorf("verdict %q, want it to give the generation rate", v)
		}
		width := eval[float64](b, `parseFloat(document.querySelector('.stage[data-stage="generate"] .bar').style.width)`)
		if width <= 0 || width > 100 {
			t.Errorf("generate bar width %v%%", width)
		}
		sameAsJournal(id)
		if n := tokens(); n != 60 {
			t.Errorf("%d tokens shown, want 60", n)
		}
		b.shot("generate")
		b.checkJS()
	})

	step("token probabilities", func(t *testing.T) {
		b.t = t
		b.click("#opt-logprobs")
		id := start("stories260K", "Once upon a time", map[string]string{"num_predict": "24", "seed": "3"})
		b.waitFor("the job to finish", `document.querySelector('#output')?.dataset.state === 'done'`, patience)
		b.shot("token-probabilities")
		b.click("#opt-logprobs") // off again for the later tests
		sameAsJournal(id)
		_, evs := s.journaled(t, id)
		var pieces []string
		for _, ev := range evs {
			if ev.Type == api.TypeToken && ev.Token.Text != "" {
				if ev.Token.Logprob == nil || len(ev.Token.Logprob.Top) != 5 {
					t.Fatalf("token event %+v: want a logprob with five alternatives", ev.Token)
				}
				pieces = append(pieces, ev.Token.Text)
			}
		}
		spans := eval[[]string](b, `[...document.querySelectorAll('#output .tok')].map((s) => s.textContent)`)
		if !slices.Equal(spans, pieces) {
			t.Errorf("token spans %q, the journal's tokens %q", spans, pieces)
		}
		bad := eval[[]string](b, `[...document.querySelectorAll('#output .tok')].filter((s) => !(Number(s.dataset.p) > 0 && Number(s.dataset.p) <= 1) || !/: p [0-9.]+ · most likely: /.test(s.title)).map((s) => s.outerHTML)`)
		if len(bad) > 0 {
			t.Errorf("spans without a probability and alternatives: %q", bad)
		}
		b.contrast()
		b.checkJS()
	})

	step("output format", func(t *testing.T) {
		b.t = t
		b.set("#opt-format", "schema")
		b.set("#opt-schema", "{not json")
		b.click("#new")
		b.set("#model", "stories260K")
		b.set("#prompt", "Once upon a time")
		b.click("#send")
		b.waitFor("the schema refused before submitting", `/schema is not valid JSON/.test(document.querySelector('#gen-status').textContent)`, patience)
		b.set("#opt-schema", `{"type": "object", "properties": {"day": {"type": "string", "format": "date"}, "stars": {"type": "integer", "minimum": 1, "maximum": 5}}, "required": ["day", "stars"]}`)
		id := start("stories260K", "Once upon a time", map[string]string{"num_predict": "80", "seed": "2"})
		b.waitFor("the job to finish", `document.querySelector('#output')?.dataset.state === 'done'`, patience)
		b.shot("output-format")
		b.set("#opt-format", "") // text again for the later tests
		sameAsJournal(id)
		var v struct {
			Day   string
			Stars int
		}
		out := output()
		if err := json.Unmarshal([]byte(out), &v); err != nil || !regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`).MatchString(v.Day) || v.Stars < 1 || v.Stars > 5 {
			t.Errorf("output %q is not a value of the schema (%v)", out, err)
		}
		b.checkJS()
	})

	step("thinking", func(t *testing.T) {
		b.t = t
		id := submit("r1", "chat", "Once upon a time", map[string]string{"num_predict": "12"})
		b.waitFor("the job to finish", `document.querySelector('#output')?.dataset.state === 'done'`, patience)
		_, evs := s.journaled(t, id)
		var thinking strings.Builder
		for _, ev := range evs {
			if ev.Type == api.TypeToken {
				thinking.WriteString(ev.Token.Thinking)
			}
		}
		got := eval[string](b, `document.querySelector('.thinking .think-text')?.textContent ?? ''`)
		if got == "" || got != thinking.String() {
			t.Errorf("thinking shown %q, the journal's %q", got, thinking.String())
		}
		if out := output(); out != "" {
			t.Errorf("answer %q: the whole reply was thinking", out)
		}
		b.shot("thinking")
		b.checkJS()
	})

	step("tools", func(t *testing.T) {
		b.t = t
		b.click("#new")
		b.set("#model", "toolq")
		b.set("#mode", "chat")
		b.set("#opt-tools", `[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}}}]`)
		b.set("#opt-tool-choice", "required")
		b.set("#opt-temperature", "0")
		b.set("#opt-num_predict", "60")
		b.set("#opt-num_ctx", "2048") // Qwen's template writes the tools at length
		// The later tests want no tools.
		defer func() {
			b.set("#opt-tools", "")
			b.set("#opt-tool-choice", "auto")
			b.set("#opt-temperature", "")
			b.set("#opt-num_ctx", "")
		}()
		b.set("#prompt", "Weather in Paris?")
		b.click("#send")
		b.waitFor("the call", `document.querySelector('#output')?.dataset.state === 'done' && document.querySelector('.msg.assistant .toolcall code')`, patience)
		call := eval[string](b, `document.querySelector('.msg.assistant .toolcall code').textContent`)
		var args struct{ City *string }
		name, js, _ := strings.Cut(strings.TrimSuffix(call, ")"), "(")
		if err := json.Unmarshal([]byte(js), &args); name != "get_weather" || err != nil || args.City == nil {
			t.Fatalf("call shown as %q", call)
		}
		if got := eval[string](b, `document.querySelector('label[for=prompt]').textContent`); got != "Result of get_weather (Ctrl+Enter sends)" {
			t.Errorf("prompt label %q", got)
		}
		// The next message is the call's result; the model answers in text.
		b.set("#opt-tool-choice", "none")
		b.set("#opt-num_predict", "8")
		b.set("#prompt", "sunny, 21 C")
		b.click("#send")
		b.waitFor("the answer to the result", `document.querySelectorAll('.msg.assistant').length === 2 && document.querySelector('#output')?.dataset.state === 'done'`, patience)
		if got := eval[string](b, `document.querySelector('.msg.tool .out')?.textContent ?? ''`); got != "sunny, 21 C" {
			t.Errorf("tool message %q", got)
		}
		b.shot("tools")
		b.checkJS()
	})

	step("keyboard and labels", func(t *testing.T) {
		b.t = t
		b.click("#new")
		b.set("#model", "stories260K")
		b.set("#mode", "complete")
		b.set("#opt-num_predict", "12")
		b.do(patience, chromedp.Focus(chromedp.CSS("#prompt")), chromedp.SendKeys(chromedp.CSS("#prompt"), "Once upon a time"),
			chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		b.waitFor("a job sent with Ctrl+Enter to finish", `document.querySelector('#output')?.dataset.state === 'done' && document.querySelector('.msg.prompt .out')?.textContent === 'Once upon a time'`, patience)
		b.labelled()
		b.contrast()
		b.checkJS()
	})

	// The settings' placeholders are what a job that leaves the option
	// out runs with: the server's GET /v1/defaults, not Ollama's defaults.
	step("sampling defaults", func(t *testing.T) {
		b.t = t
		b.navigate(px.url + "/")
		b.waitFor("the Generate view", `document.querySelector('#model option[value="slow"]')`, patience)
		resp, err := http.Get(s.url + "/v1/defaults")
		if err != nil {
			t.Fatal(err)
		}
		var d struct{ Options map[string]float64 }
		err = json.NewDecoder(resp.Body).Decode(&d)
		resp.Body.Close()
		if err != nil || len(d.Options) == 0 {
			t.Fatalf("GET /v1/defaults: %v %v", d, err)
		}
		b.waitFor("the defaults as placeholders", `document.querySelector('#opt-top_p')?.placeholder !== 'loading…'`, patience)
		for _, name := range []string{"temperature", "top_k", "top_p", "min_p", "repeat_penalty"} {
			want := strconv.FormatFloat(d.Options[name], 'f', -1, 32)
			if got := eval[string](b, fmt.Sprintf(`document.querySelector('#opt-%s').placeholder`, name)); got != want {
				t.Errorf("%s placeholder %q, the server runs a job without it at %s", name, got, want)
			}
		}
		if got := eval[string](b, `document.querySelector('#opt-num_predict').placeholder`); d.Options["num_predict"] < 0 && got != "until end" {
			t.Errorf("num_predict placeholder %q for a default of %v", got, d.Options["num_predict"])
		}
		b.checkJS()
	})

	// Each view says it is loading while its first data is on the way: the
	// proxy holds the page's requests, and releases them once the view has
	// been seen loading.
	step("loading", func(t *testing.T) {
		b.t = t
		// The later steps need the network and the Generate view even if
		// this one fails.
		defer b.navigate(px.url + "/")
		defer px.release()
		for _, v := range []struct{ hash, loading, loaded string }{
			{"#/jobs", `#jobs tbody tr.loading`, `#jobs tbody tr[data-job]`},
			{"#/models", `#stored tbody tr.loading`, `#stored tbody tr[data-model]`},
			{"#/", `#model option.loading`, `#model option[value="slow"]`},
		} {
			// Another view first (an unknown hash is the Generate view), fully loaded.
			b.navigate(px.url + "/#/elsewhere-" + strconv.Itoa(len(v.hash)))
			b.waitFor("the Generate view loaded", `document.querySelector('#model option[value="slow"]') && document.querySelector('#opt-top_p')?.placeholder !== 'loading…'`, patience)
			px.hold()
			eval[string](b, fmt.Sprintf(`location.hash = %q`, v.hash))
			b.waitFor(v.hash+" loading", fmt.Sprintf(`!!document.querySelector(%q)`, v.loading), patience)
			if v.hash == "#/jobs" {
				b.shot("loading")
			}
			px.release()
			b.waitFor(v.hash+" loaded", fmt.Sprintf(`!!document.querySelector(%q) && !document.querySelector(%q)`, v.loaded, v.loading), patience)
		}
		b.checkJS()
	})

	step("chat", func(t *testing.T) {
		b.t = t
		b.click("#new")
		b.set("#model", "stories260K")
		b.set("#mode", "chat")
		b.set("#system", "You tell short stories.")
		b.set("#opt-num_predict", "8")
		b.set("#opt-num_ctx", "512") // the chat template alone is longer than stories260K's 128
		send := func(text, prev string) (string, string) {
			b.set("#prompt", text)
			b.click("#send")
			b.waitFor("the answer", fmt.Sprintf(`document.querySelector('#job-link a')?.textContent !== %q && document.querySelector('#output')?.dataset.state === 'done'`, prev), patience)
			return eval[string](b, `document.querySelector('#job-link a').textContent`), output()
		}
		_, first := send("Hi", "")
		prev := eval[string](b, `document.querySelector('#job-link a').textContent`)
		id, _ := send("Tell me more", prev)
		var params struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.Unmarshal(s.job(t, id).Params, &params); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(params.Messages)
		want := fmt.Sprint([]struct{ Role, Content string }{{"system", "You tell short stories."}, {"user", "Hi"}, {"assistant", first}, {"user", "Tell me more"}})
		if got != want {
			t.Errorf("second turn sent %s, want %s", got, want)
		}
		if n := eval[int](b, `document.querySelectorAll('#chat .msg').length`); n != 4 {
			t.Errorf("%d messages shown, want 4", n)
		}
		if w := eval[string](b, `document.querySelector('.warning[data-code="ctx_exceeds_training"]')?.textContent ?? ''`); !strings.Contains(w, "512") {
			t.Errorf("no ctx_exceeds_training warning naming the context of 512 (%q)", w)
		}
		b.shot("chat")
		// The second turn repeats the first: its start comes from the KV
		// cache the first turn left (prompt caching).
		var res struct {
			Prompt int `json:"prompt_tokens"`
			Cached int `json:"cached_tokens"`
		}
		if err := json.Unmarshal(s.job(t, id).Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.Cached < 10 || res.Cached >= res.Prompt {
			t.Errorf("second turn: %d of %d prompt tokens from the cache", res.Cached, res.Prompt)
		}
		b.navigate(px.url + "/#/jobs/" + id)
		b.waitFor("the job's prefill note", `(document.querySelector('.stage[data-stage="prefill"]')?.textContent ?? '').includes('KV cache') && (document.querySelector('#job-head')?.textContent ?? '').includes('from the KV cache')`, patience)
		b.navigate(px.url + "/")
		b.waitFor("the Generate view", `document.querySelector('#model option[value="slow"]')`, patience)
		b.checkJS()
	})

	step("queued", func(t *testing.T) {
		b.t = t
		// The first job asks for all its context holds, so it still runs
		// when the second is looked at on any machine; it is cancelled once
		// the second has been seen waiting.
		first := start("slow", "Once upon a time", map[string]string{"num_predict": longMax, "temperature": "0"})
		defer func() { slowRate = generateRate(s.journaled(t, first)) }()
		b.waitFor("the first job to generate", `Number(document.querySelector('#output')?.dataset.tokens) >= 3`, patience)
		// One generation at a time: a second job waits for the slot.
		id := s.submit(t, `{"model":"stories260K","prompt":"Once upon a time","raw":true,"options":{"num_predict":5}}`)
		b.navigate(px.url + "/#/jobs/" + id)
		b.waitFor("the queued stage", `document.querySelector('.stage[data-stage="queued"][data-status="running"] .nums')?.textContent === 'position 1 of 1'`, patience)
		b.shot("queued")
		s.cancel(t, first)
		b.waitFor("the job to run and finish", `document.querySelector('#output')?.dataset.state === 'done'`, patience)
		if got := stageStatus("queued"); got != "done" {
			t.Errorf("queued stage is %q after the job ran, want done", got)
		}
		sameAsJournal(id)
		b.navigate(px.url + "/")
		b.waitFor("the Generate view", `document.querySelector('#model option[value="slow"]')`, patience)
		b.checkJS()
	})

	// The reload and the lost network must happen while the job runs,
	// whatever this machine's speed at the time: the job asks for all the
	// context holds (longMax tokens, about 16 s at 60 tokens/s) and each
	// step acts on what the page shows, then cancels the job rather than
	// wait for its end.
	step("reload mid-generation", func(t *testing.T) {
		b.t = t
		id := start("slow", "Once upon a time", map[string]string{"num_predict": longMax, "temperature": "0"})
		// Tokens stream: the text grows in several steps while the job
		// runs (a page that showed the text only at the end has one). The
		// prompt is the queued step's, so its KV is cached and tokens may
		// come before the page first looks: the first length is not 0.
		var lengths []int
		deadline := time.Now().Add(patience)
		for len(lengths) < 4 && time.Now().Before(deadline) && outState() != "done" {
			if n := len(output()); n > 0 && (len(lengths) == 0 || n != lengths[len(lengths)-1]) {
				lengths = append(lengths, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(lengths) < 4 {
			t.Errorf("the text grew in %d steps %v; want it to stream", len(lengths), lengths)
		}
		b.shot("streaming")
		if st := s.job(t, id).State; st != api.StateRunning {
			t.Fatalf("job is %s before the reload; the test needs it running (%d tokens shown of %s)", st, tokens(), longMax)
		}
		// The running generate bar is drawn against the tokens asked for:
		// short of the track's end while it is not nearly done (a time axis
		// to now would fill the whole track at any point).
		bar := eval[[]float64](b, `(() => {
			const b = document.querySelector('.stage[data-stage="generate"] .bar');
			const p = document.querySelector('#output').dataset;
			return [parseFloat(b.style.left) + parseFloat(b.style.width), Number(p.tokens)];
		})()`)
		if right, n := bar[0], bar[1]; n < 900 && right >= 99 {
			t.Errorf("the running generate bar ends at %.1f%% of the track with %v of %s tokens made", right, n, longMax)
		}
		before := tokens()
		b.do(patience, chromedp.Reload())
		b.waitFor("the same job after the reload", fmt.Sprintf(`document.querySelector('#job-link a')?.textContent === %q`, id), patience)
		// After the reload the page shows the job running, with more
		// tokens than it had before, live from the stream.
		b.waitFor("the job running after the reload, past the tokens shown before it",
			fmt.Sprintf(`document.querySelector('#output')?.dataset.state === 'running' && Number(document.querySelector('#output')?.dataset.tokens) > %d`, before), patience)
		s.cancel(t, id)
		b.waitFor("the job to stop", `document.querySelector('#output')?.dataset.state === 'cancelled'`, patience)
		if j := sameAsJournal(id); j.State != api.StateCancelled {
			t.Errorf("journal state %s, want cancelled", j.State)
		}
		b.checkJS()
	})

	step("network lost mid-generation", func(t *testing.T) {
		b.t = t
		id := start("slow", "Once upon a time", map[string]string{"num_predict": longMax, "temperature": "0"})
		b.waitFor("some tokens", `Number(document.querySelector('#output')?.dataset.tokens) >= 10`, patience)
		px.cut()
		b.waitFor("the page to notice", `document.querySelector('#conn')?.dataset.status === 'reconnecting'`, patience)
		b.shot("reconnecting")
		before := tokens()
		px.restore()
		// The page resumes the stream and shows the job going on.
		b.waitFor("the stream resumed", fmt.Sprintf(`Number(document.querySelector('#output')?.dataset.tokens) > %d`, before), patience)
		s.cancel(t, id)
		b.waitFor("the job to stop", `['done', 'cancelled'].includes(document.querySelector('#output')?.dataset.state)`, patience)
		sameAsJournal(id)
		if len(px.resumed()) == 0 {
			t.Error("the page never resumed an event stream after a sequence number (Last-Event-ID or ?after=)")
		}
		b.checkJS()
	})

	step("frozen tab", func(t *testing.T) {
		b.t = t
		id := start("slow", "Once upon a time", map[string]string{"num_predict": forSeconds(3), "temperature": "0"})
		b.waitFor("some tokens", `Number(document.querySelector('#output')?.dataset.tokens) >= 5`, patience)
		// A frozen page runs no script and reads nothing; the job must not wait for it.
		b.do(patience, lifecycle(page.SetWebLifecycleStateStateFrozen))
		deadline := time.Now().Add(hang)
		for st := s.job(t, id).State; !api.Terminal(st); st = s.job(t, id).State {
			if time.Now().After(deadline) {
				t.Fatalf("job %s still %s %s after the tab froze", id, st, hang)
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.do(patience, lifecycle(page.SetWebLifecycleStateStateActive))
		b.waitFor("the page to catch up", `document.querySelector('#output')?.dataset.state === 'done'`, patience)
		sameAsJournal(id)
		b.checkJS()
	})

	step("server restart mid-generation", func(t *testing.T) {
		b.t = t
		id := start("slow", "Once upon a time", map[string]string{"num_predict": forSeconds(3), "temperature": "0"})
		b.waitFor("some tokens", `Number(document.querySelector('#output')?.dataset.tokens) >= 10`, patience)
		// Ctrl+C: the server stops taking work and ends the page's stream; the
		// job finishes within the shutdown grace and lands in the journal.
		s.stop(t)
		restarted := false
		restart := func() {
			if !restarted {
				restarted = true
				s.start(t)
				px.retarget(t, s.url)
			}
		}
		defer restart() // the later steps need a server even if this one fails
		if st := outState(); st == "running" {
			b.waitFor("the page to notice", `document.querySelector('#conn')?.dataset.status === 'reconnecting'`, patience)
		} else {
			// The server streamed to the end before it closed the page's stream.
			t.Logf("page shows the job %s when the server has stopped: the stream was not cut mid-generation", st)
		}
		restart()
		// The job normally finishes within the grace period; on a machine too
		// busy for that, shutdown cancels it. Either way the page must show,
		// from the new server, exactly what the journal holds.
		b.waitFor("the job, ended, from the new server", `['done', 'cancelled'].includes(document.querySelector('#output')?.dataset.state)`, patience)
		if st := outState(); st != "done" {
			t.Logf("the job ended %s: it did not finish within the shutdown grace on this machine", st)
		}
		if page, jr := outState(), string(s.job(t, id).State); page != jr {
			t.Errorf("page shows the job %s, the journal %s", page, jr)
		}
		sameAsJournal(id)
		b.checkJS()
	})

	step("cancel", func(t *testing.T) {
		b.t = t
		id := start("slow", "Once upon a time", map[string]string{"num_predict": forSeconds(15), "temperature": "0"})
		b.waitFor("some tokens", `Number(document.querySelector('#output')?.dataset.tokens) >= 10`, patience)
		b.click("#stop")
		b.waitFor("the job to stop", `document.querySelector('#output')?.dataset.state === 'cancelled'`, patience)
		if got := stageStatus("generate"); got != "stopped" {
			t.Errorf("stage generate is %q after a cancel, want stopped", got)
		}
		box := eval[string](b, `document.querySelector('.error-box:not([hidden])')?.textContent ?? ''`)
		if !strings.Contains(box, "cancelled in generate") {
			t.Errorf("error box %q, want it to say cancelled in generate", box)
		}
		if j := sameAsJournal(id); j.State != api.StateCancelled {
			t.Errorf("journal state %s, want cancelled", j.State)
		}
		b.shot("cancelled")
		b.contrast()
		b.checkJS()
	})

	var failedID string
	step("failed job", func(t *testing.T) {
		b.t = t
		failedID = start("stories260K", strings.Repeat("the cat sat on the mat ", 60), nil)
		b.waitFor("the job to fail", `document.querySelector('#output')?.dataset.state === 'failed'`, patience)
		b.navigate(px.url + "/#/jobs")
		b.waitFor("the failed job in the list", fmt.Sprintf(`document.querySelector('tr[data-job=%q][data-state="failed"] a')`, failedID), patience)
		b.shot("jobs")
		b.labelled()
		b.contrast()
		b.click(fmt.Sprintf(`tr[data-job=%q] a`, failedID))
		b.waitFor("the failed stage", `document.querySelector('.stage[data-status="failed"]')`, patience)
		j, _ := s.journaled(t, failedID)
		if j.Error == nil {
			t.Fatalf("journal has no error for failed job %s", failedID)
		}
		if got := eval[string](b, `document.querySelector('.stage[data-status="failed"]').dataset.stage`); got != j.Error.Stage {
			t.Errorf("page shows %s failed, the journal says %s", got, j.Error.Stage)
		}
		box := eval[string](b, `document.querySelector('.error-box:not([hidden])')?.textContent ?? ''`)
		for _, want := range []string{"failed in " + j.Error.Stage, j.Error.Cause, "hint: " + j.Error.Hint} {
			if !strings.Contains(box, want) {
				t.Errorf("error box %q does not say %q", box, want)
			}
		}
		b.shot("failed-job")
		b.labelled()
		b.contrast()
		b.checkJS()
	})

	step("models", func(t *testing.T) {
		b.t = t
		b.navigate(px.url + "/#/models")
		b.waitFor("resident models", `document.querySelector('#resident tr[data-model="stories260K"] .countdown')?.textContent.match(/^\d+:\d\d$/)`, patience)
		b.waitFor("stored models", `document.querySelector('#plan-model option[value="slow"]')`, patience)
		b.set("#plan-model", "slow")
		b.set("#plan-device", "pi5-8g")
		b.click(`form[aria-label="Plan"] button[type="submit"]`)
		b.waitFor("a plan", `document.querySelector('#plan-verdict')`, patience)
		if got := eval[string](b, `document.querySelector('#plan-out').textContent`); !strings.Contains(got, "pi5-8g") || !strings.Contains(got, "(f16)") {
			t.Errorf("plan for pi5-8g does not name the device and the f16 KV cache: %q", got)
		}
		// A q8_0 KV cache: the plan is made again with it and says so.
		b.set("#plan-kv", "q8_0")
		b.click(`form[aria-label="Plan"] button[type="submit"]`)
		b.waitFor("a q8_0 plan", `document.querySelector('#plan-out').textContent.includes('(q8_0)')`, patience)
		b.shot("models")
		b.labelled()
		b.contrast()
		b.click(`#resident tr[data-model="stories260K"] button`)
		b.waitFor("stories260K unloaded", `!document.querySelector('#resident tr[data-model="stories260K"]')`, patience)

		// Pull a model file into the store, then delete it (two clicks).
		// The file comes slowly, and the page's network drops while it
		// does: the pull is the server's job, and the page picks up its
		// events again.
		src, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/pulled.gguf" {
				http.NotFound(w, r)
				return
			}
			http.ServeContent(w, r, "pulled.gguf", time.Time{}, &slowReader{bytes.NewReader(src), 30 * time.Millisecond})
		}))
		defer files.Close()
		resumes := len(px.resumed())
		b.set("#pull-ref", files.URL+"/pulled.gguf")
		b.click(`form[aria-label="Pull"] button[type="submit"]`)
		b.waitFor("the download to start", `document.querySelector('#pull-status')?.textContent.startsWith('downloading')`, patience)
		px.cut()
		time.Sleep(300 * time.Millisecond)
		px.restore()
		b.waitFor("the pull to end", `document.querySelector('#pull-status')?.dataset.state`, patience)
		if len(px.resumed()) == resumes {
			t.Error("the pull's events were not resumed after the network dropped")
		}
		if got := eval[string](b, `document.querySelector('#pull-status').textContent`); !strings.HasPrefix(got, "pulled as pulled · job j") {
			t.Fatalf("pull status %q", got)
		}
		b.waitFor("the pulled model in the store", `document.querySelector('#stored tr[data-model="pulled"]')`, patience)
		job := eval[string](b, `document.querySelector('#pull-status a').textContent.replace('job ', '')`)
		j, evs := s.journaled(t, job)
		loaded := slices.ContainsFunc(evs, func(ev api.Event) bool { return ev.Type == api.TypeStageDone && ev.Stage == "load" })
		if j.Kind != "pull" || !loaded {
			t.Errorf("pull job %s: kind %q, events %v", job, j.Kind, evs)
		}
		// A model made from it: a system message and parameters, which the
		// server then applies; a parameter it cannot set is named.
		b.set("#create-name", "pulled-brief")
		b.set("#create-from", "pulled")
		b.set("#create-system", "Be brief.")
		b.set("#create-params", "temperature hot")
		b.click(`form[aria-label="Create"] button[type="submit"]`)
		b.waitFor("the refused create", `document.querySelector('#create-status')?.dataset.state === 'failed'`, patience)
		if got := eval[string](b, `document.querySelector('#create-status').textContent`); !strings.Contains(got, "parameters.temperature must be a number") {
			t.Errorf("create with a bad parameter: %q", got)
		}
		b.set("#create-params", "temperature 0\nnum_predict 4")
		b.click(`form[aria-label="Create"] button[type="submit"]`)
		b.waitFor("the made model in the store", `document.querySelector('#stored tr[data-model="pulled-brief"]')`, patience)
		if resp, err := http.Post(s.url+"/api/show", "application/json", strings.NewReader(`{"model": "pulled-brief"}`)); err != nil {
			t.Error(err)
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"system":"Be brief."`) || !strings.Contains(string(body), "num_predict 4") {
				t.Errorf("/api/show pulled-brief: %d %s", resp.StatusCode, body)
			}
		}
		b.click(`#stored tr[data-model="pulled-brief"] button`)
		b.click(`#stored tr[data-model="pulled-brief"] button`)
		b.waitFor("the made model deleted", `!document.querySelector('#stored tr[data-model="pulled-brief"]')`, patience)
		b.click(`#stored tr[data-model="pulled"] button`)
		if got := eval[string](b, `document.querySelector('#stored tr[data-model="pulled"] button').textContent`); got != "Delete from disk?" {
			t.Errorf("first click: button says %q", got)
		}
		b.click(`#stored tr[data-model="pulled"] button`)
		b.waitFor("the pulled model deleted", `!document.querySelector('#stored tr[data-model="pulled"]')`, patience)
		b.checkJS()
	})

	step("phone width", func(t *testing.T) {
		b.t = t
		b.do(patience, chromedp.EmulateViewport(390, 844))
		views := []struct{ hash, ready string }{
			{"#/", `document.querySelector('#model option[value="slow"]')`},
			{"#/jobs", `document.querySelector('#jobs tbody tr')`},
			{"#/models", `document.querySelector('#stored tbody tr')`},
			{"#/jobs/" + failedID, `document.querySelector('.stage[data-status="failed"]')`},
		}
		for _, v := range views {
			b.navigate(px.url + "/" + v.hash)
			b.do(patience, chromedp.Reload()) // a hash change alone does not reload
			b.waitFor(v.hash, v.ready, patience)
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 391 {
				t.Errorf("%s is %d px wide at a 390 px viewport", v.hash, w)
			}
		}
		b.shot("phone")
		b.checkJS()
	})
}

// slowRate is the "slow" model's measured decode rate in tokens/s (0 until
// the queued step has measured it); forSeconds turns a duration into a
// token count at that rate (300 tokens per 4 s when unmeasured), so the
// reload, network and freeze steps land in the middle of a generation on a
// faster or slower machine alike. The model's context holds 1019 new tokens.
var slowRate float64

// longMax is a "slow" job that asks for all its context holds; patience
// bounds a wait for what the page shows on a loaded machine (a failing
// test's time, not a measurement).
const (
	longMax  = "1000"
	patience = hang
)

func forSeconds(secs float64) string {
	rate := slowRate
	if rate <= 0 {
		rate = 75
	}
	return strconv.Itoa(int(math.Min(math.Max(rate*secs, 100), 1000)))
}

// generateRate is a journaled job's generate rate in tokens/s: from its
// generate stage, or for a job cancelled while generating from the times
// of its token events.
func generateRate(_ api.Job, evs []api.Event) float64 {
	var toks []time.Time
	for _, ev := range evs {
		if ev.Type == api.TypeStageDone && ev.Stage == "generate" && ev.DurationMS > 0 && ev.Stats != nil {
			return float64(ev.Stats.Items) / ev.DurationMS * 1000
		}
		if ev.Type == api.TypeToken {
			toks = append(toks, ev.Time)
		}
	}
	if n := len(toks); n > 1 {
		if d := toks[n-1].Sub(toks[0]).Seconds(); d > 0 {
			return float64(n-1) / d
		}
	}
	return 0
}

// lifecycle freezes or resumes the page (Page.setWebLifecycleState).
func lifecycle(state page.SetWebLifecycleStateState) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: state})
		return err
	})
}

// slowReader is a file served slowly: each Read waits first.
type slowReader struct {
	*bytes.Reader
	wait time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	time.Sleep(r.wait)
	return r.Reader.Read(p)
}
