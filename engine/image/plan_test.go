package image

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/tensor"
)

func planComponents() *checkpoint.Components {
	comp := func(name string, shape []int, bytes int64) checkpoint.Component {
		src := &checkpoint.Map{Label: name, Tensors: map[string]*checkpoint.Tensor{"decoder.conv_in.weight": {Name: "decoder.conv_in.weight", DType: tensor.F16, Shape: shape}}}
		return checkpoint.Component{Name: name, Source: src, Stats: checkpoint.Stats{Bytes: bytes}}
	}
	return &checkpoint.Components{
		TextEncoder: comp("text encoder", []int{1000, 1000}, 2e6),
		UNet:        comp("UNet", []int{1000, 100, 3, 3}, 2e6), // 0.9M conv elements
		VAE:         comp("VAE", []int{100, 100, 3, 3}, 1e5),
	}
}

func TestPlanJob(t *testing.T) {
	dev := &plan.Device{RAMAvailable: 16 << 30, PeakF32: 1e11, RuntimeBytes: 1 << 20}
	s := settings(t, Request{Prompt: "a cat", Steps: 10, Sampler: "euler", Width: 256, Height: 256})
	macs := UNetMACs(32, 32, 77)
	tests := []struct {
		name    string
		history []Observation
		call    float64 // want s/call
		extra   float64 // want seconds beyond the steady rate
		source  string
	}{
		{"no runs: estimated", nil, 2 * macs / (1e11 * assumedEfficiency), 0, "estimated"},
		{"runs at this size: their median", []Observation{{Width: 256, Height: 256, SecPerCall: 1}, {Width: 256, Height: 256, SecPerCall: 3},
			{Width: 256, Height: 256, SecPerCall: 2}}, 2, 0, "measured: median of 3"},
		{"runs with a warm-up: the median warm-up added once", []Observation{{Width: 256, Height: 256, SecPerCall: 1, ExtraSeconds: 5},
			{Width: 256, Height: 256, SecPerCall: 1, ExtraSeconds: 1}, {Width: 256, Height: 256, SecPerCall: 1, ExtraSeconds: 3}}, 1, 3, "measured: median of 3"},
		{"a run at another size: scaled", []Observation{{Width: 512, Height: 512, SecPerCall: 8}}, 8 * macs / UNetMACs(64, 64, 77), 0, "scaled from a run at 512x512"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanJob(planComponents(), s, dev, tc.history, 0)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.SecPerCall-tc.call) > 1e-9*tc.call || !strings.Contains(p.Source, tc.source) {
				t.Errorf("s/call %g (%s), want %g (%s)", p.SecPerCall, p.Source, tc.call, tc.source)
			}
			if p.Calls != 20 || math.Abs(p.SecPerStep-2*p.SecPerCall) > 1e-12 || math.Abs(p.Seconds-(20*p.SecPerCall+tc.extra)) > 1e-9 {
				t.Errorf("calls %d, s/step %g, seconds %g", p.Calls, p.SecPerStep, p.Seconds)
			}
			// Weights as resident: the text encoder's and UNet's file bytes; the
			// VAE as vae.KLWeightBytes packs it (F16 kernel: 112 lanes of
			// 900 binary16 weights and a float32 bias).
			if p.TextBytes != 2e6 || p.UNetBytes != 2e6 || p.VAEBytes != 112*(2*900+4) {
				t.Errorf("weights %d %d %d", p.TextBytes, p.UNetBytes, p.VAEBytes)
			}
			if p.DecodeTile != 0 || p.Admit() != nil {
				t.Errorf("tile %d, admit %v: want untiled, admitted", p.DecodeTile, p.Admit())
			}
		})
	}
	// A budget the whole decode does not fit: tiles; one nothing fits: refused with the numbers.
	big := settings(t, Request{Prompt: "a cat", Steps: 4, Sampler: "euler", Width: 1024, Height: 1024})
	whole, _ := PlanJob(planComponents(), big, dev, nil, 0)
	p, _ := PlanJob(planComponents(), big, dev, nil, whole.UNetActivations+whole.DecodeBytes/2)
	if p.DecodeTile == 0 || p.DecodeTiles < 2 || p.DecodeBytes >= whole.DecodeBytes {
		t.Errorf("budget below the whole decode: tile %d (%d tiles, %d bytes of %d)", p.DecodeTile, p.DecodeTiles, p.DecodeBytes, whole.DecodeBytes)
	}
	p, _ = PlanJob(planComponents(), big, dev, nil, 100<<20)
	err := p.Admit()
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Stage != pipeline.StagePlan || pe.Numbers["need_bytes"] != p.Total || pe.Numbers["budget_bytes"] != 100<<20 ||
		!strings.Contains(err.Error(), "a 1024x1024 image needs") || !strings.Contains(pe.Hint, "-W 512 -H 512") {
		t.Errorf("admit: %v", err)
	}
	// Memory corrected by measured runs (median ratio), the raw total kept.
	p, _ = PlanJob(planComponents(), s, dev, []Observation{{PeakRSS: 300, PredictedPeak: 200}, {PeakRSS: 110, PredictedPeak: 100}, {PeakRSS: 120, PredictedPeak: 100}}, 0)
	if p.MemoryFactor != 1.2 || p.MemoryRuns != 3 || p.Total != int64(float64(p.RawTotal)*1.2) {
		t.Errorf("memory factor %g from %d runs, total %d of raw %d", p.MemoryFactor, p.MemoryRuns, p.Total, p.RawTotal)
	}
}

func TestSteadyRate(t *testing.T) {
	tests := []struct {
		name          string
		steps         []float64 // s/call of each step
		total         float64
		calls         int
		perCall, rest float64
	}{
		{"no calls", nil, 3, 0, 0, 0},
		{"no step figures: the mean", nil, 10, 4, 2.5, 0},
		{"a slow first step counts once", []float64{4, 1, 1, 1, 1}, 14, 10, 1, 4},
		{"even count: middle pair", []float64{3, 1, 2, 4}, 20, 8, 2.5, 0},
		{"never negative", []float64{2, 2}, 3, 2, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pc, rest := steadyRate(tc.steps, tc.total, tc.calls)
			if math.Abs(pc-tc.perCall) > 1e-12 || math.Abs(rest-tc.rest) > 1e-12 {
				t.Errorf("steadyRate = %g, %g; want %g, %g", pc, rest, tc.perCall, tc.rest)
			}
		})
	}
}
