//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/plan"
)

// TestPlanPredictsRealRuns is issue 7's done-means check: the plan for a
// job predicts the peak resident memory of a real 'glassbox run' of it
// within 5% (measured by the kernel: getrusage ru_maxrss of the child) and,
// with GLASSBOX_PLAN_SPEED=1 on a quiet machine, its generation speed
// within 20%.
//
// It builds the binary and runs real generations, so it is opt-in:
//
//	GLASSBOX_PLAN_CHECK=1 go test ./cmd/glassbox -run TestPlanPredictsRealRuns -v
//
// GLASSBOX_PLAN_MODELS adds models (comma-separated paths, e.g. synthetic 1B
// files from 'glassbox synth'); GLASSBOX_PLAN_RECORD=1 stores each run in
// the calibration history.
func TestPlanPredictsRealRuns(t *testing.T) {
	if os.Getenv("GLASSBOX_PLAN_CHECK") == "" {
		t.Skip("set GLASSBOX_PLAN_CHECK=1 to run real generations against the plan")
	}
	// A private home with this machine's roofline and kernel caches and no
	// calibration history: each job plans as on a fresh machine, and the
	// runs do not land in the user's history.
	priv := t.TempDir()
	for _, name := range []string{"roofline.json", "kprobe.json"} {
		if b, err := os.ReadFile(filepath.Join(home.Home(), name)); err == nil {
			if err := os.WriteFile(filepath.Join(priv, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Setenv(home.Env, priv)
	bin := filepath.Join(t.TempDir(), "glassbox")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	type job struct {
		model   string
		ctx, n  int
		prompt  string
		threads int
		kv      string // --kv ("": the default f16)
	}
	jobs := []job{
		{shared.Path(t, "models/stories260K.gguf"), 256, 200, "Once upon a time", 0, ""},
		{shared.Path(t, "models/stories260K.gguf"), 256, 20, "Once upon a time", 1, ""},
		{shared.Path(t, "models/tiny-llama-F32.gguf"), 256, 100, "Once upon a time", 0, ""},
		{shared.Path(t, "models/tiny-llama-Q4_K_M.gguf"), 256, 100, "Once upon a time", 0, ""},
		{shared.Path(t, "models/tiny-qwen2-F32.gguf"), 256, 100, "Once upon a time", 0, ""},
		{shared.Path(t, "models/tiny-llama-F32.gguf"), 256, 100, "Once upon a time", 0, "q8_0"},
	}
	for _, m := range strings.Split(os.Getenv("GLASSBOX_PLAN_MODELS"), ",") {
		if m != "" {
			jobs = append(jobs, job{m, 1024, 64, "Once upon a time", 0, ""}, job{m, 2048, 16, "Once upon a time", 0, ""}, job{m, 2048, 16, "Once upon a time", 0, "q8_0"})
		}
	}
	dev, err := planDevice("", false)
	if err != nil {
		t.Fatal(err)
	}
	// The runtime's share is that of the glassbox binary, not of this test:
	// each job's own measurement (below), else what plan measures.
	dev.RuntimeBytes = baseRSS(t, bin)
	t.Logf("runtime base of glassbox plan: %s (each job's own is used when its plan event has one); %s", plan.FormatBytes(dev.RuntimeBytes), dev.Roofline)
	checkSpeed := os.Getenv("GLASSBOX_PLAN_SPEED") != ""
	var hist *plan.History
	if os.Getenv("GLASSBOX_PLAN_RECORD") != "" {
		hist, _ = plan.DefaultHistory()
	}
	for _, j := range jobs {
		name := fmt.Sprintf("%s/ctx%d/n%d/t%d%s", filepath.Base(j.model), j.ctx, j.n, j.threads, map[string]string{"": "", "q8_0": "/kv-q8_0"}[j.kv])
		t.Run(name, func(t *testing.T) {
			args := []string{"run", "-m", j.model, "--temp", "0", "-n", strconv.Itoa(j.n), "--ctx", strconv.Itoa(j.ctx), "--json"}
			if j.threads > 0 {
				args = append(args, "--threads", strconv.Itoa(j.threads))
			}
			if j.kv != "" {
				args = append(args, "--kv", j.kv)
			}
			// Each run records itself in the private history; start every job
			// without one, so no job's plan is corrected by an earlier run.
			if err := os.Remove(filepath.Join(priv, "plan-history.jsonl")); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			res, rss := runMeasured(t, bin, append(args, j.prompt)...)
			f, err := gguf.Open(j.model)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// The job planned itself with its own resident memory, measured
			// before it opened the model, as the runtime base. Recover that base
			// from its plan event (without history the total is the base plus
			// parts that do not depend on it) and plan the job's actual length
			// with it.
			d := *dev
			if res.PlanBytes > 0 {
				d.RuntimeBytes = 1
				bare, err := plan.ForModel(f, plan.Options{Ctx: j.ctx, Threads: j.threads, KV: j.kv}, &d)
				if err != nil {
					t.Fatal(err)
				}
				d.RuntimeBytes = 1 + res.PlanBytes - bare.Memory.TotalBytes
			}
			tokens := res.PromptTokens + len(res.Tokens)
			p, err := plan.ForModel(f, plan.Options{Ctx: j.ctx, Tokens: tokens, Prompt: res.PromptTokens, Threads: j.threads, KV: j.kv}, &d)
			if err != nil {
				t.Fatal(err)
			}
			memErr := float64(rss)/float64(p.Memory.TotalBytes) - 1
			speedErr := res.GenerateTokS/p.Speed.DecodeTokensPerS - 1
			t.Logf("runtime base %s; peak RSS %s, predicted %s (%+.1f%%); generation %.0f tok/s, predicted %.0f (%+.0f%%)",
				plan.FormatBytes(d.RuntimeBytes), plan.FormatBytes(rss), plan.FormatBytes(p.Memory.TotalBytes), 100*memErr,
				res.GenerateTokS, p.Speed.DecodeTokensPerS, 100*speedErr)
			if hist != nil {
				if err := hist.Record(plan.Observe(p, rss, res.PrefillTokS, res.GenerateTokS, len(res.Tokens)-1)); err != nil {
					t.Error(err)
				}
			}
			if math.Abs(memErr) > 0.05 {
				t.Errorf("peak RSS %d is %+.1f%% from the predicted %d (want within 5%%)", rss, 100*memErr, p.Memory.TotalBytes)
			}
			if checkSpeed && math.Abs(speedErr) > 0.20 {
				t.Errorf("generation %.1f tok/s is %+.0f%% from the predicted %.1f (want within 20%%)", res.GenerateTokS, 100*speedErr, p.Speed.DecodeTokensPerS)
			}
		})
	}
}

// baseRSS is what 'glassbox plan' measures for itself before opening a
// model (plan.SelfRSS): the resident memory of a process that has loaded
// nothing. --json prints the device with it.
func baseRSS(t *testing.T, bin string) int64 {
	out, err := exec.Command(bin, "plan", "--json", "-m", shared.Path(t, "models/stories260K.gguf")).Output()
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Device struct {
			RuntimeBytes int64 `json:"runtime_bytes"`
		} `json:"device"`
	}
	if err := json.Unmarshal(out, &p); err != nil || p.Device.RuntimeBytes <= 0 {
		t.Fatalf("plan --json: no device.runtime_bytes (%v)", err)
	}
	return p.Device.RuntimeBytes
}

// planRunResult is the part of run --json's result event the check needs.
type planRunResult struct {
	Tokens       []int   `json:"tokens"`
	PromptTokens int     `json:"prompt_tokens"`
	PrefillTokS  float64 `json:"prefill_tokens_per_s"`
	GenerateTokS float64 `json:"generate_tokens_per_s"`
	PlanBytes    int64   `json:"-"` // the job's own plan (for its full context)
}

// runMeasured runs the binary and returns its result and peak RSS in bytes.
//
// Go execs children from a vfork'd process, and Linux then carries the
// parent's (this test's) high-water mark into the child's ru_maxrss, which
// hides a child smaller than the test. So the child runs under
// /usr/bin/time when there is one (a small parent that forks: its %M is the
// child's own peak). Otherwise the child's ru_maxrss counts when it exceeds
// this process's high-water mark, and the child's VmHWM polled from /proc
// while it runs stands in below that (it can miss a last-millisecond peak).
func runMeasured(t *testing.T, bin string, args ...string) (planRunResult, int64) {
	t.Helper()
	parentHWM := plan.PeakRSS()
	cmd := exec.Command(bin, args...)
	timed := false
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		cmd = exec.Command("/usr/bin/time", append([]string{"-f", "glassbox-maxrss-kib=%M", bin}, args...)...)
		timed = true
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak int64
	var err error
	for polling := true; polling; {
		select {
		case err = <-done:
			polling = false
		case <-time.After(time.Millisecond):
			peak = max(peak, vmHWM(status))
		}
	}
	if err != nil {
		t.Fatalf("glassbox %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	var res planRunResult
	var ev struct {
		Type   string          `json:"type"`
		Result json.RawMessage `json:"result"`
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, line := range lines {
		var st struct {
			Type  string `json:"type"`
			Stage string `json:"stage"`
			Stats struct {
				Bytes int64 `json:"bytes"`
			} `json:"stats"`
		}
		if json.Unmarshal([]byte(line), &st) == nil && st.Type == "stage_done" && st.Stage == "plan" {
			res.PlanBytes = st.Stats.Bytes
		}
	}
	for i := len(lines) - 1; i >= 0 && ev.Type != "result"; i-- {
		ev.Type = ""
		json.Unmarshal([]byte(lines[i]), &ev)
	}
	if ev.Type != "result" {
		t.Fatalf("no result event in the output of glassbox %s", strings.Join(args, " "))
	}
	if err := json.Unmarshal(ev.Result, &res); err != nil {
		t.Fatal(err)
	}
	if timed {
		for _, line := range strings.Split(errb.String(), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "glassbox-maxrss-kib="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("/usr/bin/time: %q", line)
				}
				return res, n * 1024
			}
		}
		t.Fatalf("/usr/bin/time printed no maximum RSS:\n%s", errb.String())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss*1024 > parentHWM {
		return res, ru.Maxrss * 1024 // Linux reports KiB
	}
	if peak == 0 {
		t.Fatal("could not read the child's VmHWM")
	}
	return res, peak
}

// vmHWM reads the VmHWM line of a /proc status file in bytes (0 when the
// process is gone).
func vmHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}
