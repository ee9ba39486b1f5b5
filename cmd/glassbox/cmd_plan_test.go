package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/plan"
)

func TestPlanJSON(t *testing.T) {
	out, errs, code := runCmd(t, "", "plan", "--json", "--ctx", "256", "-m", shared.Path(t, "models/stories260K.gguf"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// The documented schema (README "glassbox plan").
	var p struct {
		Memory struct {
			TotalBytes   int64 `json:"total_bytes"`
			WeightsBytes int64 `json:"weights_bytes"`
			KVCacheBytes int64 `json:"kv_cache_bytes"`
			ComputeBytes int64 `json:"compute_bytes"`
		} `json:"memory"`
		Placement struct {
			Kind string `json:"kind"`
		} `json:"placement"`
		Speed struct {
			Prefill float64 `json:"prefill_tokens_per_s"`
			Decode  float64 `json:"decode_tokens_per_s"`
		} `json:"speed"`
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	// 5 layers × 256 positions × 32 KV values × (K and V) × 2 bytes.
	if p.Memory.KVCacheBytes != 5*256*32*2*2 || p.Memory.TotalBytes <= p.Memory.WeightsBytes || p.Memory.ComputeBytes <= 0 {
		t.Errorf("memory %+v", p.Memory)
	}
	if p.Placement.Kind != "cpu" || p.Speed.Prefill <= 0 || p.Speed.Decode <= 0 || !strings.HasPrefix(p.Verdict, "fits, ~") {
		t.Errorf("plan %+v", p)
	}
}

func TestPlanDevices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llama3-8b-q4km.gguf")
	if err := plan.Llama3_8B.WriteHeader(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--device", "rtx4090"}, 0, "verdict    fits in RTX 4090 memory, ~"},
		{[]string{"--device", "vram=4GiB,bw=300GB/s,ram=32GiB"}, 0, "layers on CPU, ~"},
		{[]string{"--device", "ram=4GiB"}, 1, "verdict    does not fit: needs "},
		{[]string{"--device", "rtx4090", "--mem-budget", "2GiB"}, 1, "over the memory budget of 2.00 GiB"},
		{[]string{"--device", "rtx4090", "--mem-budget", "2GiB"}, 1, "verdict    over the memory budget: needs "},
		{[]string{"--device", "rtx9999"}, 1, `unknown device "rtx9999"`},
		{[]string{"--kv", "q4"}, 1, `--kv "q4": want f16, q8_0 or f32`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errs, code := runCmd(t, "", append([]string{"plan", "-m", path}, tc.args...)...)
			if code != tc.code || !strings.Contains(out+errs, tc.want) {
				t.Errorf("exit %d, want %d; output lacks %q:\n%s%s", code, tc.code, tc.want, out, errs)
			}
		})
	}
	// A plan over the budget does not also say it fits.
	if out, _, _ := runCmd(t, "", "plan", "-m", path, "--device", "rtx4090", "--mem-budget", "2GiB"); strings.Contains(out, "verdict    fits") {
		t.Errorf("a plan refused for the budget prints a verdict that it fits:\n%s", out)
	}
	out, _, code := runCmd(t, "", "plan", "--profiles")
	if code != 0 || !strings.Contains(out, "rtx3060-12g") || !strings.Contains(out, "source: ") {
		t.Errorf("--profiles: %s", out)
	}
}

func TestPlanSynthetic(t *testing.T) {
	out, errs, code := runCmd(t, "", "plan", "--synthetic", "llama3-8b:Q4_K_M", "--device", "rtx3060-12g")
	if code != 0 || !strings.Contains(out, "Llama-3-8B (synthetic header) (llama, Q4_K, 8.03 B params, 4.58 GiB file)") ||
		!strings.Contains(out, "verdict    fits in RTX 3060 12GB memory, ~") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	_, errs, code = runCmd(t, "", "plan", "--synthetic", "gpt5")
	if code != 1 || !strings.Contains(errs, `unknown synthetic model "gpt5"`) {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// TestPlanRemote plans a model over HTTP from its header alone: the 4.6
// GiB (sparse) file is served with range support and only its start is
// downloaded.
func TestPlanRemote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llama3-8b-q4km.gguf")
	if err := plan.Llama3_8B.WriteHeader(path); err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer f.Close()
		cw := &countingWriter{ResponseWriter: w, n: &sent}
		http.ServeContent(cw, r, "model.gguf", time.Time{}, f)
	}))
	defer srv.Close()
	out, errs, code := runCmd(t, "", "plan", "--json", "--device", "rtx4090", "-m", srv.URL+"/model.gguf")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var p struct {
		Model struct {
			Params    int64 `json:"params"`
			FileBytes int64 `json:"file_bytes"`
		} `json:"model"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.Model.Params != 8030261248 || p.Model.FileBytes < 4e9 {
		t.Errorf("model %+v", p.Model)
	}
	if sent.Load() > 2<<20 {
		t.Errorf("downloaded %d bytes for the header", sent.Load())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // nothing listens there now
	_, errs, code = runCmd(t, "", "plan", "-m", "http://"+ln.Addr().String()+"/none.gguf")
	if code != 1 || !strings.Contains(errs, "load: ") {
		t.Errorf("unreachable server: exit %d, %s", code, errs)
	}
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return w.ResponseWriter.Write(p)
}

// TestPlanDraft: plan --draft counts a draft model's memory beside the
// model's, in its own row, as run --draft's plan stage does.
func TestPlanDraft(t *testing.T) {
	m, d := shared.Path(t, "models/tiny-llama-Q8_0.gguf"), shared.Path(t, "models/tiny-llama-Q4_0.gguf")
	// The model's own share (the total less the process's runtime, which
	// the inventory reads again each time; uncalibrated, as calibration
	// scales the runtime too) and the draft's.
	own := func(args ...string) (int64, int64) {
		t.Helper()
		out, errs, code := runCmd(t, "", append([]string{"plan", "--probe=false", "--no-calibration", "--json", "-m", m}, args...)...)
		var p struct {
			Memory struct {
				Total   int64 `json:"total_bytes"`
				Runtime int64 `json:"runtime_bytes"`
				Draft   int64 `json:"draft_bytes"`
			}
		}
		if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
			t.Fatalf("plan %v: exit %d, %v, %s", args, code, err, errs)
		}
		return p.Memory.Total - p.Memory.Runtime - p.Memory.Draft, p.Memory.Draft
	}
	alone, none := own()
	pair, draft := own("--draft", d)
	if none != 0 || draft <= 0 || pair != alone {
		t.Errorf("the model's share alone %d (draft %d), beside the draft %d (draft %d)", alone, none, pair, draft)
	}
	if out, _, _ := runCmd(t, "", "plan", "--probe=false", "-m", m, "--draft", d); !strings.Contains(out, "draft model") {
		t.Errorf("no draft row:\n%s", out)
	}
}
