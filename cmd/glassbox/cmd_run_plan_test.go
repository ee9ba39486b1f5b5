package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/internal/testhome"
	"github.com/glassbox-ai/glassbox/plan"
)

// TestMain runs the tests in a glassbox home of their own (testhome) and
// keeps in-process runs out of the calibration history: their peak RSS
// would be this test binary's. TestRunRecordsCalibration turns recording
// on for itself.
func TestMain(m *testing.M) {
	recordRuns = false
	testhome.Main(m)
}

// runJSONEvents runs glassbox run --json and returns its events and exit code.
func runJSONEvents(t *testing.T, args ...string) ([]api.Event, string, int) {
	t.Helper()
	out, errOut, code := runCmd(t, "", append([]string{"run", "--json"}, args...)...)
	var evs []api.Event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e api.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs, errOut, code
}

// TestRunAdmission checks the plan stage: a job over --mem-budget fails in
// stage plan with the numbers and a hint, before the load stage starts.
func TestRunAdmission(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	m := shared.Path(t, "models/stories260K.gguf")
	evs, _, code := runJSONEvents(t, "-m", m, "--mem-budget", "1MiB", "--ctx", "64", "Once upon a time")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	var failed *api.Error
	for _, e := range evs {
		if e.Type == api.TypeStageStart && e.Stage != "plan" && e.Stage != "queued" {
			t.Errorf("stage %s started after a refused plan", e.Stage)
		}
		if e.Type == api.TypeError {
			failed = e.Error
		}
	}
	if failed == nil || failed.Stage != "plan" || failed.Numbers["budget_bytes"] != 1<<20 ||
		failed.Numbers["needed_bytes"] <= 1<<20 || !strings.Contains(failed.Cause, "over the memory budget of 1.00 MiB") {
		t.Fatalf("error event %+v, want stage plan, budget_bytes 1 MiB and needed_bytes above it", failed)
	}

	// The text form says the same on stderr.
	_, errOut, code := runCmd(t, "", "run", "-m", m, "--mem-budget", "1MiB", "x")
	if code != 1 || !strings.Contains(errOut, "plan:") || !strings.Contains(errOut, "over the memory budget") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := runCmd(t, "", "run", "-m", m, "--mem-budget", "lots", "x"); code != 1 || !strings.Contains(errOut, "--mem-budget") {
		t.Errorf("bad --mem-budget: exit %d, stderr %q", code, errOut)
	}
}

// TestRunStageFigures checks what a fitting job reports: the plan stage
// with the verdict, and the generate stage with the roofline, its limiter
// and the peak RSS.
func TestRunStageFigures(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	m := shared.Path(t, "models/stories260K.gguf")
	evs, errOut, code := runJSONEvents(t, "-m", m, "--mem-budget", "4GiB", "--temp", "0", "-n", "8", "--ctx", "64", "Once upon a time")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var order []string
	done := map[string]*api.StageStats{}
	for _, e := range evs {
		if e.Type == api.TypeStageStart {
			order = append(order, e.Stage)
		}
		if e.Type == api.TypeStageDone {
			done[e.Stage] = e.Stats
		}
	}
	if len(order) < 2 || order[0] != "plan" || order[1] != "load" {
		t.Errorf("stages started %v, want plan then load", order)
	}
	if p := done["plan"]; p == nil || p.Bytes <= 0 || !strings.HasPrefix(p.Note, "fits") {
		t.Errorf("plan stage stats %+v, want the planned bytes and a 'fits' verdict", p)
	}
	g := done["generate"]
	if g == nil || g.Roofline <= 0 || !strings.HasPrefix(g.Limiter, "memory bandwidth") {
		t.Fatalf("generate stage stats %+v, want a roofline limited by memory bandwidth", g)
	}
	if runtime.GOOS == "linux" && g.PeakRSS <= 0 {
		t.Errorf("generate stage has no peak RSS: %+v", g)
	}
}

// TestRunVerbose checks that --verbose ends with the job's explanation
// (stage bars, the verdict against the roofline) and the memory lines.
func TestRunVerbose(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	m := shared.Path(t, "models/stories260K.gguf")
	_, errOut, code := runCmd(t, "", "run", "-m", m, "--temp", "0", "-n", "8", "--ctx", "64", "--verbose", "Once upon a time")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"job ", "(text, ", "  plan ", "  load ", "  generate ", "verdict: ",
		"of this machine's roofline", "limited by memory bandwidth", "stop: length", "memory: weights read per token",
		"peak resident: "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("--verbose output lacks %q:\n%s", want, errOut)
		}
	}
	// A refused job explains its failure the same way.
	_, errOut, _ = runCmd(t, "", "run", "-m", m, "--mem-budget", "1MiB", "--verbose", "x")
	if !strings.Contains(errOut, "verdict: failed in plan") || !strings.Contains(errOut, "budget_bytes=") {
		t.Errorf("refused job's --verbose output:\n%s", errOut)
	}
}

// TestRunSamplingFlags checks that out-of-range sampling flags are errors
// naming the flag, before anything runs.
func TestRunSamplingFlags(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--temp", "-0.5"}, "--temp: "},
		{[]string{"--top-p", "1.5"}, "--top-p: "},
		{[]string{"--min-p", "-1"}, "--min-p: "},
		{[]string{"--top-k", "-3"}, "--top-k: "},
		{[]string{"--repeat-penalty", "-2"}, "--repeat-penalty: "},
		{[]string{"--frequency-penalty", "NaN"}, "--frequency-penalty: "},
		{[]string{"--repeat-last-n", "-7"}, "--repeat-last-n: "},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			_, errOut, code := runCmd(t, "", append([]string{"run", "-m", m, "--no-journal"}, append(tc.args, "x")...)...)
			if code != 1 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "out of range") && !strings.Contains(errOut, "finite") {
				t.Errorf("exit %d, stderr %q; want %q and the range", code, errOut, tc.want)
			}
		})
	}
}

// TestRunRecordsCalibration checks that a finished run is stored in the
// calibration history, planned for its actual length.
func TestRunRecordsCalibration(t *testing.T) {
	recordRuns = true
	defer func() { recordRuns = false }()
	home := t.TempDir()
	t.Setenv("GLASSBOX_HOME", home)
	m := shared.Path(t, "models/stories260K.gguf")
	evs, errOut, code := runJSONEvents(t, "-m", m, "--temp", "0", "-n", "6", "--ctx", "64", "--prompt-ids", "1 403 407 261 378")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	obs, err := (&plan.History{Path: filepath.Join(home, "plan-history.jsonl")}).Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 1 {
		t.Fatalf("%d observations, want 1", len(obs))
	}
	o := obs[0]
	if o.Options.Tokens != 11 || o.Options.Prompt != 5 || o.Options.Ctx != 64 || o.MeasuredDecode <= 0 || o.MeasuredPrefill <= 0 ||
		o.PredictedBytes <= 0 || (runtime.GOOS == "linux" && o.MeasuredPeakRSS <= 0) {
		t.Errorf("observation %+v, want 11 tokens (5 prompt) at ctx 64 with measured speeds and peak", o)
	}
}

// TestServeGenerateRoofline checks that a generation through glassbox
// serve records the plan's roofline in its generate stage, so explain
// places it against this machine's memory bandwidth.
func TestServeGenerateRoofline(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	t.Setenv(home.Env, t.TempDir())
	dir := t.TempDir()
	var errb serveLog
	env := &cmdEnv{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, env, []string{"serve", "--addr", "127.0.0.1:0", "--home", dir, "--model", model})
	}()
	waitServeLog(t, &errb, "listening on http://127.0.0.1:")
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(errb.String())
	resp, err := http.Post(base+"/api/generate", "application/json", strings.NewReader(
		`{"model":"stories260K","prompt":"Once upon a time","stream":false,"options":{"num_predict":8,"temperature":0,"num_ctx":64}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cancel()
	<-done
	if resp.StatusCode != 200 {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	out, errOut, code := runCmd(t, "", "explain", "--home", dir)
	if code != 0 {
		t.Fatalf("explain: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "of this machine's roofline") || !strings.Contains(out, "limited by memory bandwidth") {
		t.Errorf("explain of a served job has no roofline:\n%s", out)
	}
}

// TestGenerateRoofline checks the generate stage's bound: bandwidth ÷
// bytes per token, the one-thread bandwidth for one worker on this
// machine, and nothing without a plan.
func TestGenerateRoofline(t *testing.T) {
	defer func(f func() float64) { singleThreadBandwidth = f }(singleThreadBandwidth)
	singleThreadBandwidth = func() float64 { return 5e9 }
	f, err := gguf.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	local := &plan.Device{Name: "this machine", RAMTotal: 8 << 30, RAMAvailable: 4 << 30, Cores: 2,
		Bandwidth: 20e9, PeakF32: 1e11, PeakInt8: 4e11}
	estimated := *local
	estimated.Estimated = true
	tests := []struct {
		name    string
		dev     *plan.Device
		threads int
		want    float64
		limiter string
	}{
		{"measured, all threads", local, 2, 20e9 / 1e6, "memory bandwidth (20 GB/s, measured)"},
		{"measured, default threads", local, 0, 20e9 / 1e6, "memory bandwidth (20 GB/s, measured)"},
		{"measured, one thread", local, 1, 5e9 / 1e6, "memory bandwidth (5 GB/s, measured, 1 thread)"},
		{"estimated, one thread", &estimated, 1, 20e9 / 1e6, "memory bandwidth (20 GB/s, estimated)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.ForModel(f, plan.Options{Ctx: 64}, tc.dev)
			if err != nil {
				t.Fatal(err)
			}
			if p.Speed.DecodeLimit != "memory bandwidth" {
				t.Skipf("plan finds decoding %s-bound on this device", p.Speed.DecodeLimit)
			}
			got, lim := generateRoofline(p, 1e6, tc.threads)
			if math.Abs(got-tc.want) > 1e-9*tc.want || lim != tc.limiter {
				t.Errorf("got %g tokens/s, %q; want %g, %q", got, lim, tc.want, tc.limiter)
			}
		})
	}
	if r, lim := generateRoofline(nil, 1e6, 1); r != 0 || lim != "" {
		t.Errorf("no plan: got %g, %q", r, lim)
	}
}

// TestRunCtxBeyondTrainingWarnsOnce: a --ctx past the model's trained
// context is allowed with one warning (the plan's, which the engine then
// does not repeat), naming both lengths.
func TestRunCtxBeyondTrainingWarnsOnce(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	m := shared.Path(t, "models/stories260K.gguf")
	_, errOut, code := runCmd(t, "", "run", "-m", m, "--temp", "0", "-n", "4", "--ctx", "512", "Once upon a time")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(errOut, "trained on"); n != 1 || !strings.Contains(errOut, "--ctx 512 is beyond the 128 tokens") {
		t.Errorf("want one warning naming 512 and 128, got %d:\n%s", n, errOut)
	}
}
