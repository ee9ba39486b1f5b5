package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

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
	out, _, code := runCmd(t, "", "plan", "--profiles")
	if code != 0 || !strings.Contains(out, "rtx3060-12g") || !strings.Contains(out, "source: ") {
		t.Errorf("--profiles: %s", out)
	}
}
