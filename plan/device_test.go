package plan

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMeminfo(t *testing.T) {
	for _, tc := range []struct {
		name, in     string
		total, avail int64
		err          bool
	}{
		{"modern", "MemTotal:       24683620 kB\nMemFree:  100 kB\nMemAvailable:   24306856 kB\n", 24683620 * 1024, 24306856 * 1024, false},
		{"old kernel", "MemTotal: 1000 kB\nMemFree: 200 kB\nCached: 300 kB\n", 1000 * 1024, 500 * 1024, false},
		{"available capped", "MemTotal: 10 kB\nMemAvailable: 20 kB\n", 10 * 1024, 10 * 1024, false},
		{"empty", "", 0, 0, true},
		{"garbage", "MemTotal: lots\n", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total, avail, err := parseMeminfo([]byte(tc.in))
			if (err != nil) != tc.err || total != tc.total || avail != tc.avail {
				t.Errorf("= %d, %d, %v; want %d, %d, err %v", total, avail, err, tc.total, tc.avail, tc.err)
			}
		})
	}
}

func TestLocal(t *testing.T) {
	d, err := Local()
	if err != nil {
		t.Skip("no /proc/meminfo:", err) // non-Linux: Local refuses, ParseDevice profiles still work
	}
	if d.RAMTotal <= 0 || d.RAMAvailable <= 0 || d.RAMAvailable > d.RAMTotal || d.Cores <= 0 {
		t.Errorf("inventory %+v", d)
	}
	if !d.Estimated || d.Bandwidth <= 0 || d.PeakF32 <= 0 || d.PeakInt8 < d.PeakF32 {
		t.Errorf("roofline estimate %+v", d)
	}
	if rss, peak := SelfRSS(), PeakRSS(); rss <= 0 || peak < rss {
		t.Errorf("SelfRSS %d, PeakRSS %d", rss, peak)
	}
	if err := d.RefreshMemory(); err != nil || d.RAMAvailable <= 0 {
		t.Errorf("RefreshMemory: %v (%d available)", err, d.RAMAvailable)
	}
	if r := d.WithReclaimable(1 << 20); r.RAMAvailable != min(d.RAMAvailable+1<<20, d.RAMTotal) || r == d {
		t.Errorf("WithReclaimable: %d", r.RAMAvailable)
	}
	d.SetRoofline(19e9, 100e9, 400e9, "probe")
	if d.Estimated || d.Bandwidth != 19e9 || d.Roofline != "probe" {
		t.Errorf("after SetRoofline: %+v", d)
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"8GiB", 8 << 30, false}, {"24 GB", 24e9, false}, {"512MiB", 512 << 20, false},
		{"1.5gib", 3 << 29, false}, {"1073741824", 1 << 30, false}, {"2T", 2 << 40, false},
		{"", 0, true}, {"-1GiB", 0, true}, {"lots", 0, true}, {"1e30GB", 0, true},
	} {
		got, err := ParseBytes(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"360GB/s", 360e9, false}, {"4.8TB/s", 4.8e12, false}, {"68.25 GB/s", 68.25e9, false},
		{"360GB", 0, true}, {"0GB/s", 0, true}, {"fast/s", 0, true},
	} {
		got, err := ParseBandwidth(tc.in)
		if (err != nil) != tc.err || math.Abs(got-tc.want) > 1 {
			t.Errorf("ParseBandwidth(%q) = %g, %v; want %g, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseDevice(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ram     int64
		vram    int64
		gpuBW   float64
		unified bool
		err     string
	}{
		{in: "rtx4090", ram: 64 * gib, vram: 24 * gib, gpuBW: 1008e9},
		{in: "RTX3060-12G", ram: 32 * gib, vram: 12 * gib, gpuBW: 360e9},
		{in: "m2-16g", ram: 16 * gib, vram: 16 * gib * 2 / 3, gpuBW: 100e9, unified: true},
		{in: "h200", ram: 2048 * gib, vram: 141e9, gpuBW: 4.8e12},
		{in: "rtx4090,ram=32GiB", ram: 32 * gib, vram: 24 * gib, gpuBW: 1008e9},
		{in: "vram=8GiB,bw=360GB/s,ram=32GiB", ram: 32 * gib, vram: 8 * gib, gpuBW: 360e9},
		{in: "ram=16GiB,bw=50GB/s", ram: 16 * gib},
		{in: "pi5-8g", ram: 8 * gib},
		{in: "rtx9999", err: `plan: unknown device "rtx9999" (profiles: `},
		{in: "vram=8GiB,ram=32GiB", err: "vram given without bw"},
		{in: "ram=32GiB,bw=360GB", err: `bw: "360GB" is not a bandwidth`},
		{in: "vram=8GiB,bw=1TB/s", err: "no RAM size (add ram=SIZE"},
		{in: "rtx4090,color=red", err: `unknown key "color"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			d, err := ParseDevice(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.RAMTotal != tc.ram || d.RAMAvailable >= d.RAMTotal {
				t.Errorf("RAM %d (available %d), want %d", d.RAMTotal, d.RAMAvailable, tc.ram)
			}
			if tc.vram == 0 {
				if d.GPU != nil {
					t.Errorf("unexpected GPU %+v", d.GPU)
				}
				return
			}
			if d.GPU == nil || d.GPU.VRAM != tc.vram || d.GPU.Bandwidth != tc.gpuBW || d.GPU.Unified != tc.unified {
				t.Errorf("GPU %+v, want vram %d, bw %g, unified %v", d.GPU, tc.vram, tc.gpuBW, tc.unified)
			}
		})
	}
	// Every profile parses and names a source.
	for _, n := range ProfileNames() {
		d, err := ParseDevice(n)
		if err != nil || d.Source == "" || d.Bandwidth <= 0 {
			t.Errorf("profile %s: %+v, %v", n, d, err)
		}
	}
}

func TestCalibration(t *testing.T) {
	obs := []Observation{
		{Device: "this machine", PredictedBytes: 100, MeasuredPeakRSS: 104, PredictedDecode: 10, MeasuredDecode: 8},
		{Device: "this machine", PredictedBytes: 200, MeasuredPeakRSS: 212, PredictedDecode: 20, MeasuredDecode: 18},
		{Device: "this machine", PredictedBytes: 100, MeasuredPeakRSS: 105, PredictedDecode: 10, MeasuredDecode: 9},
		{Device: "other", PredictedBytes: 100, MeasuredPeakRSS: 500},
	}
	if c := Calibrate(obs[:2], "this machine"); c != nil {
		t.Errorf("2 runs calibrated: %+v", c)
	}
	c := Calibrate(obs, "this machine")
	if c == nil || c.N != 3 {
		t.Fatalf("calibration %+v", c)
	}
	// Ratios 1.04, 1.06, 1.05: median 1.05, deviations ~0.0095, 0.0095, 0.
	if math.Abs(c.MemoryFactor-1.05) > 1e-9 || math.Abs(c.MemoryError-0.04/4.2) > 1e-3 || math.Abs(c.MemoryBefore-0.05) > 1e-9 {
		t.Errorf("memory factor %g error %g before %g", c.MemoryFactor, c.MemoryError, c.MemoryBefore)
	}
	// Those runs carry no speed model version: they predate the current
	// one and correct no speed.
	if c.SpeedRuns != 0 {
		t.Errorf("%d speed runs from unversioned observations", c.SpeedRuns)
	}
	if !strings.HasPrefix(c.String(), "from 3 measured runs: memory ±1.0%") {
		t.Errorf("String %q", c)
	}

	// The memory correction applies to new plans, and Observe records the
	// raw prediction so corrections never compound.
	q4 := synthetic(t, Llama3_8B)
	dev := cpuDevice(64 * gib)
	raw, _ := ForModel(q4, Options{}, dev)
	dev.Calibration = c
	cor, _ := ForModel(q4, Options{}, dev)
	if want := int64(float64(raw.Memory.TotalBytes) * 1.05); cor.Memory.TotalBytes != want {
		t.Errorf("corrected total %d, want %d", cor.Memory.TotalBytes, want)
	}
	if cor.Speed.DecodeTokensPerS != raw.Speed.DecodeTokensPerS {
		t.Errorf("speed corrected by unversioned runs: %g, raw %g", cor.Speed.DecodeTokensPerS, raw.Speed.DecodeTokensPerS)
	}
	o := Observe(cor, 123, 0, 4, 10)
	if o.PredictedBytes != raw.Memory.TotalBytes || o.PredictedDecode != raw.Speed.DecodeTokensPerS ||
		o.SpeedModel != SpeedModelRoofline || o.Format != "Q4_K" || o.WeightBytes != raw.Model.WeightBytes() {
		t.Errorf("observation %+v", o)
	}

	h := &History{Path: filepath.Join(t.TempDir(), "sub", "h.jsonl")}
	if got, err := h.Load(); err != nil || len(got) != 0 {
		t.Fatalf("empty history: %v, %v", got, err)
	}
	for _, x := range obs {
		if err := h.Record(x); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.Load()
	if err != nil || len(got) != len(obs) || got[3].MeasuredPeakRSS != 500 {
		t.Errorf("history %+v, %v", got, err)
	}
}

// TestCalibrationBySimilarModels: speed is corrected only by runs of the
// same format and thread count on models of similar size, so a tiny
// model's runs (fixed costs dominate) never move a large model's figure.
func TestCalibrationBySimilarModels(t *testing.T) {
	f := synthetic(t, Llama32_1B) // Q4_K_M
	dev := kernelDevice()
	raw, err := ForModel(f, Options{Tokens: 64}, dev)
	if err != nil {
		t.Fatal(err)
	}
	run := func(weights int64, format string, threads int, ratio float64) Observation {
		o := Observe(raw, 1, 0, ratio*raw.Speed.DecodeTokensPerS, 64)
		o.WeightBytes, o.Format, o.Threads = weights, format, threads
		return o
	}
	wb := raw.Model.WeightBytes()
	tiny := []Observation{run(1<<20, "Q4_K", 2, 0.2), run(1<<20, "Q4_K", 2, 0.25), run(2<<20, "Q4_K", 2, 0.3), run(1<<20, "Q4_K", 2, 0.2)}
	others := []Observation{run(wb, "Q8_0", 2, 3), run(wb, "Q8_0", 2, 3), run(wb, "Q8_0", 2, 3), // another format
		run(wb, "Q4_K", 1, 4), run(wb, "Q4_K", 1, 4), run(wb, "Q4_K", 1, 4)} // another thread count
	for _, tc := range []struct {
		name string
		obs  []Observation
		want float64 // correction factor; 0: none
	}{
		{"tiny models only", tiny, 0},
		{"other formats and threads", append(append([]Observation(nil), tiny...), others...), 0},
		{"two similar runs", append(append([]Observation(nil), tiny...), run(wb, "Q4_K", 2, 0.9), run(wb*3/2, "Q4_K", 2, 0.9)), 0},
		{"three similar runs", append(append([]Observation(nil), tiny...), run(wb, "Q4_K", 2, 0.9), run(wb*3/2, "Q4_K", 2, 0.8), run(wb*2/3, "Q4_K", 2, 1.0)), 0.9},
		{"runs of a decode pass or two, or recorded without the count", func() []Observation {
			o := []Observation{run(wb, "Q4_K", 2, 60), run(wb, "Q4_K", 2, 60), run(wb, "Q4_K", 2, 60)}
			o[0] = Observe(raw, 1, 0, 60*raw.Speed.DecodeTokensPerS, 1) // not kept
			o[0].WeightBytes, o[0].Format, o[0].Threads = wb, "Q4_K", 2
			o[1].DecodeSteps, o[2].DecodeSteps = 0, 0 // recorded before the count
			return o
		}(), 0},
		{"another speed model", func() []Observation {
			o := []Observation{run(wb, "Q4_K", 2, 0.5), run(wb, "Q4_K", 2, 0.5), run(wb, "Q4_K", 2, 0.5)}
			for i := range o {
				o[i].SpeedModel = SpeedModelRoofline
			}
			return o
		}(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := kernelDevice()
			d.Calibration = Calibrate(tc.obs, d.Name)
			p, err := ForModel(f, Options{Tokens: 64}, d)
			if err != nil {
				t.Fatal(err)
			}
			want := raw.Speed.DecodeTokensPerS
			if tc.want > 0 {
				want *= tc.want
			}
			if math.Abs(p.Speed.DecodeTokensPerS/want-1) > 1e-9 || p.Speed.DecodeCorrection != tc.want {
				t.Errorf("decode %g (correction %g from %d runs), want %g (×%g)", p.Speed.DecodeTokensPerS,
					p.Speed.DecodeCorrection, p.Speed.DecodeCorrectionRuns, want, tc.want)
			}
			if o := Observe(p, 1, 0, 1, 64); o.PredictedDecode != raw.Speed.DecodeTokensPerS {
				t.Errorf("observation records the corrected figure %g", o.PredictedDecode)
			}
		})
	}
}

// TestPrefillCalibrationByBatch: a prefill figure is corrected only by
// runs whose prompt batches were of a similar size (a few tokens are
// memory-bound, a full batch compute-bound), and the basis says so.
func TestPrefillCalibrationByBatch(t *testing.T) {
	f := synthetic(t, Llama32_1B)
	raw, err := ForModel(f, Options{Prompt: 400, Tokens: 464}, kernelDevice())
	if err != nil {
		t.Fatal(err)
	}
	run := func(prompt int, ratio float64) Observation {
		o := Observe(raw, 1, ratio*raw.Speed.PrefillTokensPerS, 0, 0)
		o.Options.Prompt = prompt
		return o
	}
	for _, tc := range []struct {
		name string
		obs  []Observation
		want float64
	}{
		{"short prompts", []Observation{run(9, 0.2), run(9, 0.2), run(12, 0.2)}, 0},
		{"similar prompts", []Observation{run(9, 0.2), run(300, 0.8), run(512, 0.8), run(700, 0.8)}, 0.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := kernelDevice()
			d.Calibration = Calibrate(tc.obs, d.Name)
			p, err := ForModel(f, Options{Prompt: 400, Tokens: 464}, d)
			if err != nil {
				t.Fatal(err)
			}
			want := raw.Speed.PrefillTokensPerS
			if tc.want > 0 {
				want *= tc.want
			}
			if math.Abs(p.Speed.PrefillTokensPerS/want-1) > 1e-9 || p.Speed.PrefillCorrection != tc.want {
				t.Errorf("prefill %g (×%g), want %g (×%g)", p.Speed.PrefillTokensPerS, p.Speed.PrefillCorrection, want, tc.want)
			}
			if noted := strings.Contains(p.Speed.Basis, "prefill corrected"); noted != (tc.want > 0) {
				t.Errorf("basis %q", p.Speed.Basis)
			}
		})
	}
}
