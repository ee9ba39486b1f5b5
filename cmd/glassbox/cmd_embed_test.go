package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// embedLines parses embed's output: one JSON array per line.
func embedLines(t *testing.T, out string) [][]float32 {
	t.Helper()
	var vs [][]float32
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v []float32
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		vs = append(vs, v)
	}
	return vs
}

func squaredLength(v []float32) float64 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	return ss
}

func TestEmbedCommand(t *testing.T) {
	m := shared.Path(t, "models/tiny-llama-F32.gguf")
	homeDir := t.TempDir()
	out, errs, code := runCmd(t, "", "embed", "-m", m, "--home", homeDir, "Once upon a time", "a fox")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	vs := embedLines(t, out)
	if len(vs) != 2 || len(vs[0]) != 256 || math.Abs(squaredLength(vs[0])-1) > 1e-5 {
		t.Fatalf("%d vectors of %d values, squared length %g", len(vs), len(vs[0]), squaredLength(vs[0]))
	}
	// Inputs from a file; --raw gives the same direction, not normalized.
	out, errs, code = runCmd(t, "Once upon a time\n\na fox\n", "embed", "-m", m, "--no-journal", "-f", "-", "--raw")
	raw := embedLines(t, out)
	if code != 0 || len(raw) != 2 {
		t.Fatalf("code %d, %d vectors: %s", code, len(raw), errs)
	}
	n := math.Sqrt(squaredLength(raw[1]))
	for i := range raw[1] {
		if math.Abs(float64(raw[1][i])/n-float64(vs[1][i])) > 1e-5 {
			t.Fatalf("raw value %d: %g / %g, normalized %g", i, raw[1][i], n, vs[1][i])
		}
	}
	// --json: the job's events, the vectors in its result.
	out, errs, code = runCmd(t, "", "embed", "-m", m, "--no-journal", "--json", "--dimensions", "8", "--pooling", "last", "a fox")
	var res struct {
		Embeddings [][]float32
		Pooling    string
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev api.Event
		json.Unmarshal([]byte(l), &ev)
		if ev.Type == api.TypeResult {
			json.Unmarshal(ev.Result, &res)
		}
	}
	if code != 0 || len(res.Embeddings) != 1 || len(res.Embeddings[0]) != 8 || res.Pooling != "last" {
		t.Fatalf("code %d, result %+v: %s", code, res, errs)
	}
	// The journal has the job.
	out, _, _ = runCmd(t, "", "jobs", "--home", homeDir)
	if !strings.Contains(out, "embed") {
		t.Errorf("jobs: %s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"embed", "-m", m, "--no-journal"}, "no inputs to embed"},
		{[]string{"embed", "-m", m, "--no-journal", "--ctx", "3", "Once upon a time"}, "tokens but the context holds 3"},
		{[]string{"embed", "-m", m, "--no-journal", "--pooling", "max", "a"}, `pooling "max" is not supported`},
	} {
		_, errs, code := runCmd(t, "", tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}
