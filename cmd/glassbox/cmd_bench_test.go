package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/compute/roofline"
)

func TestBenchModelHook(t *testing.T) {
	saved := modelBench
	defer func() { modelBench = saved }()
	modelBench = nil
	if _, errs, code := runCmd(t, "", "bench", "-m", "x.gguf"); code != 1 || !strings.Contains(errs, "not built in") {
		t.Fatalf("no hook: code %d, stderr %q", code, errs)
	}
	var got benchConfig
	modelBench = func(ctx context.Context, env *cmdEnv, cfg benchConfig) error { got = cfg; return nil }
	if _, errs, code := runCmd(t, "", "bench", "-m", "m.gguf", "-p", "16", "-n", "8", "-t", "2", "-r", "3", "--json"); code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	want := benchConfig{Model: "m.gguf", Prompt: 16, Gen: 8, Threads: 2, Reps: 3, JSON: true}
	if got != want {
		t.Fatalf("config %+v, want %+v", got, want)
	}
	for _, bad := range [][]string{{"bench", "-m", "m", "-r", "0"}, {"bench", "--roofline", "-m", "m"}, {"bench", "-t", "-1", "-m", "m"}, {"bench", "-d", "-1", "-m", "m"}} {
		if _, _, code := runCmd(t, "", bad...); code == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
	if _, _, code := runCmd(t, "", "bench"); code != 2 {
		t.Errorf("bare bench: code %d, want usage (2)", code)
	}
}

// The roofline comes from the cache when present; seed one so the test
// does not read a 1 GiB buffer.
func TestBenchRooflineCached(t *testing.T) {
	home := t.TempDir()
	t.Setenv("GLASSBOX_HOME", home)
	r, err := roofline.Probe(1, roofline.Options{BufferBytes: 4 << 20, Passes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := roofline.Save(r); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCmd(t, "", "bench", "--roofline", "-t", "1", "--json")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	var got struct {
		ReadGBs1 float64 `json:"read_gbs_1thread"`
		Cached   bool    `json:"cached"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || !got.Cached || got.ReadGBs1 != r.ReadGBs1 {
		t.Fatalf("json %q: %+v, %v", out, got, err)
	}
	out, _, code = runCmd(t, "", "bench", "--roofline", "-t", "1")
	if code != 0 || !strings.Contains(out, "read bandwidth") || !strings.Contains(out, "cached") {
		t.Fatalf("text output %q", out)
	}
}
