package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/kprobe"
	"github.com/glassbox-ai/glassbox/compute/roofline"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Tests run glassbox plan in-process: they must not measure this machine
// into the user's glassbox home. TestPlanMeasuresKernels turns it on with
// a temporary home.
func init() { autoProbe = false }

// The planner counts a layer's vector work as the probe measured its rate.
func TestVectorElemsAgree(t *testing.T) {
	for _, d := range [][4]int{{2048, 8192, 2048, 512}, {64, 172, 64, 32}, {4096, 14336, 4096, 1024}} {
		if a, b := plan.LayerVectorElems(d[0], d[1], d[2], d[3]), kprobe.VectorElems(d[0], d[1], d[2], d[3]); a != b {
			t.Errorf("%v: plan counts %g, kprobe %g", d, a, b)
		}
	}
}

// The planner's x16 growth of a matrix (unpacked scales, padded odd
// tiles) is the engine's layout, for the real models' widths (Qwen2.5's
// FFN of 4864 and 8960 columns ends in a panel of an odd number of
// super-blocks).
func TestX16ExtraAgrees(t *testing.T) {
	checked := 0
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.Q8_0, tensor.Q5_0, tensor.Q4_1, tensor.Q5_1, tensor.IQ4_NL,
		tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q3_K, tensor.Q2_K, tensor.IQ4_XS, tensor.MXFP4} {
		for _, cols := range []int{256, 768, 896, 2048, 2080, 2144, 2880, 4864, 8960} {
			rb, err := dt.RowBytes(int64(cols))
			if err != nil {
				continue // not a whole number of blocks
			}
			const rows = 32
			m := compute.Matrix{Type: dt, Rows: rows, Cols: cols, Data: make([]byte, rows*rb)}
			x16 := compute.X16Bytes(m)
			if x16 == 0 {
				continue // no x16 kernel for dt on this CPU
			}
			checked++
			if got, want := plan.X16MatrixExtra(dt, rows, int64(cols), true), x16-rows*rb; got != want {
				t.Errorf("%s %d×%d: the planner counts %d bytes of x16 growth, the layout takes %d", dt, rows, cols, got, want)
			}
		}
	}
	if checked == 0 {
		t.Skip("no x16 kernels on this CPU")
	}
}

func TestProbeThreads(t *testing.T) {
	n := compute.PhysicalCores()
	for _, tc := range []struct {
		job  int
		want []int
	}{
		{0, slices.Compact([]int{1, n})},
		{1, slices.Compact([]int{1, n})},
		{n, slices.Compact([]int{1, n})},
		{n + 3, slices.Compact([]int{1, n, n + 3})},
	} {
		if got := probeThreads(tc.job); !slices.Equal(got, tc.want) {
			t.Errorf("probeThreads(%d) = %v, want %v", tc.job, got, tc.want)
		}
	}
}

// TestPlanMeasuresKernels: on a machine with nothing cached, glassbox plan
// measures the roofline and the kernels once (saying so), predicts
// generation from them at the asked thread count, and the next plan reads
// the caches.
func TestPlanMeasuresKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("probes the machine (a few seconds)")
	}
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	defer func(a bool, o kprobe.Options, r roofline.Options) {
		autoProbe, kprobeOptions, rooflineOptions = a, o, r
	}(autoProbe, kprobeOptions, rooflineOptions)
	autoProbe = true
	rooflineOptions = roofline.Options{BufferBytes: 8 << 20, Passes: 1}
	kprobeOptions = kprobe.Options{MatrixBytes: 256 << 10, Batch: time.Millisecond, Batches: 2,
		Types: []tensor.DType{tensor.F32, tensor.Q8_0}}
	model := shared.Path(t, "models/stories260K.gguf")
	out, errs, code := runCmd(t, "", "plan", "--json", "--probe=false", "--threads", "1", "--tokens", "64", "-m", model)
	if code != 0 || strings.Contains(errs, "measuring") || strings.Contains(out, `"decode_memory_s"`) {
		t.Errorf("--probe=false: exit %d, measured or used kernels:\n%s", code, errs)
	}
	out, errs, code = runCmd(t, "", "plan", "--json", "--threads", "1", "--tokens", "64", "-m", model)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "measuring this machine's memory bandwidth once") || !strings.Contains(errs, "measuring glassbox's kernels on 1 thread(s)") {
		t.Errorf("stderr does not say what it measured:\n%s", errs)
	}
	var p struct {
		Speed plan.Speed `json:"speed"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	sp := p.Speed
	if sp.Threads != 1 || sp.DecodeMemoryS <= 0 || sp.DecodeKernelS <= 0 || sp.DecodeFixedS <= 0 || sp.DecodeTokensPerS <= 0 ||
		!strings.HasPrefix(sp.Basis, "generation: 1 thread,") {
		t.Errorf("speed %+v", sp)
	}
	_, errs, code = runCmd(t, "", "plan", "--threads", "1", "-m", model)
	if code != 0 || strings.Contains(errs, "measuring") {
		t.Errorf("second plan: exit %d, measured again:\n%s", code, errs)
	}
}
