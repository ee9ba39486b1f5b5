package plan

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/pipeline"
)

func TestVerdicts(t *testing.T) {
	q4 := synthetic(t, Llama3_8B)
	f16 := Llama3_8B
	f16.Format = "F16"
	fp := synthetic(t, f16)
	rtx, _ := ParseDevice("rtx4090")
	small, _ := ParseDevice("vram=4GiB,bw=300GB/s,ram=32GiB")
	tiny, _ := ParseDevice("ram=8GiB")
	tests := []struct {
		name   string
		model  string
		opts   Options
		dev    *Device
		prefix string
		fits   bool
		kind   string
	}{
		{"cpu fits", "q4", Options{}, cpuDevice(16 * gib), "fits, ~", true, "cpu"},
		{"all on gpu", "q4", Options{}, rtx, "fits in RTX 4090 memory, ~", true, "gpu"},
		{"split", "q4", Options{}, small, "fits with ", true, "split"},
		{"does not fit", "f16", Options{}, tiny, "does not fit: needs 14.6 GiB, 6.50 GiB available", false, "cpu"},
		{"f16 fits a 4090", "f16", Options{Ctx: 2048}, rtx, "fits in RTX 4090 memory", true, "gpu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := q4
			if tc.model == "f16" {
				f = fp
			}
			p, err := ForModel(f, tc.opts, tc.dev)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.Verdict, tc.prefix) || p.Fits != tc.fits || p.Placement.Kind != tc.kind {
				t.Errorf("verdict %q (fits %v, %s), want prefix %q (fits %v, %s)", p.Verdict, p.Fits, p.Placement.Kind, tc.prefix, tc.fits, tc.kind)
			}
			if tc.kind == "split" {
				pl := p.Placement
				want := "fits with " + strconv.Itoa(pl.CPULayers) + "/32 layers on CPU"
				if pl.GPULayers <= 0 || pl.GPULayers >= 32 || !strings.HasPrefix(p.Verdict, want) {
					t.Errorf("split %d GPU layers, verdict %q, want prefix %q", pl.GPULayers, p.Verdict, want)
				}
				if pl.VRAMBytes > tc.dev.GPU.VRAM {
					t.Errorf("VRAM use %d exceeds %d", pl.VRAMBytes, tc.dev.GPU.VRAM)
				}
			}
		})
	}
}

// TestAdmit checks the exact refusal messages and their numbers.
func TestAdmit(t *testing.T) {
	f16 := Llama3_8B
	f16.Format = "F16"
	fp := synthetic(t, f16)
	dev, _ := ParseDevice("ram=8GiB") // 6.5 GiB available after the OS reserve
	p, err := ForModel(fp, Options{Ctx: 4096}, dev)
	if err != nil {
		t.Fatal(err)
	}
	err = Admit(p, 0)
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Stage != pipeline.StagePlan {
		t.Fatalf("Admit = %v, want a stage-plan *pipeline.Error", err)
	}
	need := p.Memory.TotalBytes
	want := "plan: does not fit: needs " + FormatBytes(need) + ", 6.50 GiB available ("
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want prefix %q", err, want)
	}
	if pe.Numbers["needed_bytes"] != need || pe.Numbers["available_bytes"] != 8*gib-3*gib/2 {
		t.Errorf("numbers %v", pe.Numbers)
	}
	// The hint names a format that fits 6.5 GiB.
	if !strings.Contains(pe.Hint, "would fit at") {
		t.Errorf("hint %q names no smaller format", pe.Hint)
	}

	q4 := synthetic(t, Llama3_8B)
	ok, err := ForModel(q4, Options{Ctx: 4096}, cpuDevice(64*gib))
	if err != nil {
		t.Fatal(err)
	}
	if err := Admit(ok, 0); err != nil {
		t.Errorf("Admit with no budget: %v", err)
	}
	err = Admit(ok, 4*gib)
	want = "plan: needs " + FormatBytes(ok.Memory.TotalBytes) + ", over the memory budget of 4.00 GiB"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Admit over budget = %v, want prefix %q", err, want)
	}
	if errors.As(err, &pe) && pe.Numbers["budget_bytes"] != 4*gib {
		t.Errorf("numbers %v", pe.Numbers)
	}
	// The plan, printed after Admit, agrees with the refusal: its verdict
	// is not "fits".
	wantVerdict := "over the memory budget: needs " + FormatBytes(ok.Memory.TotalBytes) + ", the budget is 4.00 GiB"
	if ok.Fits || !ok.OverBudget || ok.BudgetBytes != 4*gib || ok.Verdict != wantVerdict {
		t.Errorf("after Admit over budget: fits %v, over budget %v, budget %d, verdict %q; want %q",
			ok.Fits, ok.OverBudget, ok.BudgetBytes, ok.Verdict, wantVerdict)
	}
	// Within the budget the verdict stays.
	ok2, _ := ForModel(q4, Options{Ctx: 4096}, cpuDevice(64*gib))
	if err := Admit(ok2, 64*gib); err != nil || !ok2.Fits || !strings.HasPrefix(ok2.Verdict, "fits, ") {
		t.Errorf("within budget: %v, fits %v, verdict %q", err, ok2.Fits, ok2.Verdict)
	}
}

func TestAdmitJobWarns(t *testing.T) {
	q4 := synthetic(t, Llama3_8B)
	slow := cpuDevice(64 * gib)
	slow.Bandwidth = 5e9 // 4.4 GiB per token at 5 GB/s: ~1 tok/s
	p, err := ForModel(q4, Options{Ctx: 2048}, slow)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Bad() || !strings.HasSuffix(p.Verdict, "(too slow for chat)") {
		t.Fatalf("verdict %q, Bad %v", p.Verdict, p.Bad())
	}
	var warnings []string
	var done []pipeline.StageStats
	ctx := pipeline.WithTrace(t.Context(), &pipeline.Trace{
		Warning:   func(code, msg string) { warnings = append(warnings, code+": "+msg) },
		StageDone: func(s pipeline.Stage, st pipeline.StageStats) { done = append(done, st) },
	})
	if err := AdmitJob(ctx, p, 0); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "below reading speed") {
		t.Errorf("warnings %q", warnings)
	}
	if len(done) != 1 || done[0].Bytes != p.Memory.TotalBytes || done[0].Note != p.Verdict {
		t.Errorf("stage done %+v", done)
	}
}

func TestAlternatives(t *testing.T) {
	q4 := synthetic(t, Llama3_8B)
	// 5.25 GiB available: the full 8k context (5.44 GiB) does not fit, 4k does.
	dev := cpuDevice(21 * gib / 4)
	p, err := ForModel(q4, Options{Ctx: 8192}, dev)
	if err != nil {
		t.Fatal(err)
	}
	if p.Fits {
		t.Fatalf("fits in 5 GiB: %s", p)
	}
	var changes []string
	for _, a := range p.Alternatives {
		changes = append(changes, a.Change)
		if a.TotalBytes > dev.RAMAvailable {
			t.Errorf("alternative %s needs %d > %d", a.Change, a.TotalBytes, dev.RAMAvailable)
		}
	}
	got := strings.Join(changes, " ")
	if !strings.HasPrefix(got, "--ctx 4096 --kv q8_0 ") {
		t.Errorf("alternatives %q, want --ctx 4096, --kv q8_0, then a format", got)
	}
	if !strings.HasPrefix(p.Alternatives[0].Summary, "--ctx 4096 fits, ~") {
		t.Errorf("summary %q", p.Alternatives[0].Summary)
	}
}

// TestOptionErrors: settings the planner refuses fail with their numbers
// and as ErrSettings (a runner fails the plan stage, a server answers 400).
func TestOptionErrors(t *testing.T) {
	q4 := synthetic(t, Llama3_8B)
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{KV: "q4"}, `plan: invalid settings: --kv "q4": want f16, q8_0 or f32`},
		{Options{Ctx: -1}, "plan: invalid settings: negative setting (ctx -1, batch 0, parallel 0, tokens 0, threads 0)"},
		{Options{Ctx: 1 << 25}, "plan: invalid settings: --ctx 33554432 is beyond any model (max 16777216)"},
		{Options{Ctx: 256, Tokens: 300}, "plan: invalid settings: 300 tokens do not fit a context of 256 (raise --ctx)"},
		{Options{Parallel: 5000}, "plan: invalid settings: --parallel 5000 is out of range (max 4096)"},
	} {
		_, err := ForModel(q4, tc.opts, cpuDevice(gib))
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrSettings) {
			t.Errorf("%+v: error %v, want %q (ErrSettings)", tc.opts, err, tc.want)
		}
	}
}
