package plan

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/glassbox-ai/glassbox/internal/home"
)

// Observation is one real run measured beside its prediction. Predictions
// are the uncorrected model (before calibration), so corrections never
// compound.
type Observation struct {
	Time      time.Time `json:"time"`
	Model     string    `json:"model"`
	FileBytes int64     `json:"file_bytes"`
	Device    string    `json:"device"`
	Options   Options   `json:"options"`

	PredictedBytes   int64   `json:"predicted_bytes"`
	MeasuredPeakRSS  int64   `json:"measured_peak_rss"`
	PredictedPrefill float64 `json:"predicted_prefill_tokens_per_s"`
	MeasuredPrefill  float64 `json:"measured_prefill_tokens_per_s,omitempty"`
	PredictedDecode  float64 `json:"predicted_decode_tokens_per_s"`
	MeasuredDecode   float64 `json:"measured_decode_tokens_per_s,omitempty"`

	// The decode prediction's parts, for fitting: seconds per token from
	// the roofline, and the number of layers (whose fixed cost is fitted).
	DecodeRooflineS float64 `json:"decode_roofline_s,omitempty"`
	Layers          int     `json:"layers,omitempty"`
	// The same for one prefill batch of PrefillBatch tokens.
	PrefillRooflineS float64 `json:"prefill_roofline_s,omitempty"`
	PrefillBatch     int     `json:"prefill_batch,omitempty"`
}

// Observe pairs a plan with what a run measured (zero: not measured).
func Observe(p *Plan, peakRSS int64, prefillTokS, decodeTokS float64) Observation {
	name := p.Model.Name
	if name == "" {
		name = p.Model.Arch
	}
	return Observation{Time: time.Now().UTC(), Model: name, FileBytes: p.Model.FileBytes, Device: p.Device.Name,
		Options: p.Options, PredictedBytes: p.raw.total, MeasuredPeakRSS: peakRSS,
		PredictedPrefill: p.raw.prefill, MeasuredPrefill: prefillTokS,
		PredictedDecode: p.raw.decode, MeasuredDecode: decodeTokS,
		DecodeRooflineS: p.raw.decodeRoof, Layers: p.Model.Layers,
		PrefillRooflineS: p.raw.prefillRoof, PrefillBatch: p.raw.prefillBatch}
}

// RecordRun stores what a finished job of plan p measured in the default
// history: this process's peak RSS and the speeds (tokens/s, 0 when not
// measured). Call it once per process and job, at the end (the peak is the
// process's).
func RecordRun(p *Plan, prefillTokS, decodeTokS float64) error {
	h, err := DefaultHistory()
	if err != nil {
		return err
	}
	return h.Record(Observe(p, PeakRSS(), prefillTokS, decodeTokS))
}

// Calibration is what history says about the planner on one device: the
// median ratio measured ÷ predicted (the correction applied to new plans)
// and the error bar, the median distance of a run from the corrected
// prediction, as a fraction (0.05 = ±5%). Before is the same error without
// correction.
type Calibration struct {
	N             int     `json:"runs"`
	MemoryFactor  float64 `json:"memory_factor"`
	PrefillFactor float64 `json:"prefill_factor"`
	DecodeFactor  float64 `json:"decode_factor"`
	MemoryError   float64 `json:"memory_error"`
	PrefillError  float64 `json:"prefill_error"`
	DecodeError   float64 `json:"decode_error"`
	MemoryBefore  float64 `json:"memory_error_uncorrected"`
	DecodeBefore  float64 `json:"decode_error_uncorrected"`

	// DecodeScale and DecodeLayerCost (seconds) are the least-squares fit
	// of measured seconds per token = scale × roofline time + cost ×
	// layers, used instead of DecodeFactor when the history has runs of
	// different shapes (zero when it cannot be fitted).
	DecodeScale     float64 `json:"decode_scale,omitempty"`
	DecodeLayerCost float64 `json:"decode_layer_cost_s,omitempty"`
	// The same fit for one prefill batch.
	PrefillScale     float64 `json:"prefill_scale,omitempty"`
	PrefillLayerCost float64 `json:"prefill_layer_cost_s,omitempty"`
}

// MinCalibrationRuns is how many runs a device needs before its constants
// are corrected; fewer would chase noise.
const MinCalibrationRuns = 3

// Calibrate summarizes the observations made on device (nil when there are
// fewer than MinCalibrationRuns).
func Calibrate(obs []Observation, device string) *Calibration {
	var mem, pre, dec []float64
	var fit, pfit []sample
	n := 0
	for _, o := range obs {
		if o.Device != device {
			continue
		}
		n++
		if o.MeasuredPeakRSS > 0 && o.PredictedBytes > 0 {
			mem = append(mem, float64(o.MeasuredPeakRSS)/float64(o.PredictedBytes))
		}
		if o.MeasuredPrefill > 0 && o.PredictedPrefill > 0 {
			pre = append(pre, o.MeasuredPrefill/o.PredictedPrefill)
			if o.PrefillRooflineS > 0 && o.Layers > 0 && o.PrefillBatch > 0 {
				pfit = append(pfit, sample{o.PrefillRooflineS, float64(o.Layers), float64(o.PrefillBatch) / o.MeasuredPrefill})
			}
		}
		if o.MeasuredDecode > 0 && o.PredictedDecode > 0 {
			dec = append(dec, o.MeasuredDecode/o.PredictedDecode)
			if o.DecodeRooflineS > 0 && o.Layers > 0 {
				fit = append(fit, sample{o.DecodeRooflineS, float64(o.Layers), 1 / o.MeasuredDecode})
			}
		}
	}
	if n < MinCalibrationRuns {
		return nil
	}
	c := &Calibration{N: n}
	c.MemoryFactor, c.MemoryError, c.MemoryBefore = summarize(mem)
	c.PrefillFactor, c.PrefillError, _ = summarize(pre)
	c.DecodeFactor, c.DecodeError, c.DecodeBefore = summarize(dec)
	if a, b, e, ok := fitSteps(fit); ok {
		c.DecodeScale, c.DecodeLayerCost, c.DecodeError = a, b, e
	}
	if a, b, e, ok := fitSteps(pfit); ok {
		c.PrefillScale, c.PrefillLayerCost, c.PrefillError = a, b, e
	}
	return c
}

// sample is one measured step: its roofline time, layer count and the
// measured seconds.
type sample struct{ roof, layers, t float64 }

// fitSteps fits t = a·roof + b·layers to the samples by least squares
// (the 2×2 normal equations) and returns the median relative error of the
// fitted speeds. ok is false when there are too few runs, their shapes do
// not separate the two terms, or the fit is not physical (a ≤ 0 or b < 0).
func fitSteps(obs []sample) (a, b, medErr float64, ok bool) {
	if len(obs) < MinCalibrationRuns {
		return 0, 0, 0, false
	}
	var sxx, sxy, syy, sxt, syt float64
	for _, o := range obs {
		x, y, t := o.roof, o.layers, o.t
		sxx += x * x
		sxy += x * y
		syy += y * y
		sxt += x * t
		syt += y * t
	}
	det := sxx*syy - sxy*sxy
	if det <= 1e-12*sxx*syy {
		return 0, 0, 0, false
	}
	a = (sxt*syy - syt*sxy) / det
	b = (syt*sxx - sxt*sxy) / det
	if a <= 0 || b < 0 || math.IsNaN(a) || math.IsNaN(b) {
		return 0, 0, 0, false
	}
	errs := make([]float64, len(obs))
	for i, o := range obs {
		errs[i] = math.Abs((a*o.roof+b*o.layers)/o.t - 1) // measured speed ÷ predicted − 1
	}
	return a, b, median(errs), true
}

// summarize returns the median ratio, the median relative distance from
// it, and the median relative distance from 1 (uncorrected). Fewer than
// MinCalibrationRuns ratios give zeros (no correction).
func summarize(ratios []float64) (factor, err, before float64) {
	if len(ratios) < MinCalibrationRuns {
		return 0, 0, 0
	}
	factor = median(ratios)
	d := make([]float64, len(ratios))
	b := make([]float64, len(ratios))
	for i, r := range ratios {
		d[i] = math.Abs(r/factor - 1)
		b[i] = math.Abs(r - 1)
	}
	return factor, median(d), median(b)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// String is the error bar in words.
func (c *Calibration) String() string {
	if c == nil {
		return fmt.Sprintf("no calibration yet (fewer than %d measured runs on this device)", MinCalibrationRuns)
	}
	s := fmt.Sprintf("from %d measured runs: memory ±%.1f%%", c.N, 100*c.MemoryError)
	if c.DecodeFactor > 0 {
		s += fmt.Sprintf(", generation ±%.0f%%", 100*c.DecodeError)
	}
	if c.DecodeScale > 0 {
		s += fmt.Sprintf(" (fitted: %.2f× the roofline + %.0f µs per layer)", c.DecodeScale, 1e6*c.DecodeLayerCost)
	}
	if c.PrefillFactor > 0 {
		s += fmt.Sprintf(", prefill ±%.0f%%", 100*c.PrefillError)
	}
	return s + fmt.Sprintf(" (uncorrected: memory ±%.1f%%, generation ±%.0f%%)", 100*c.MemoryBefore, 100*c.DecodeBefore)
}

// History is the calibration log: one JSON observation per line. The
// journal will take this over; until then it is a small file in the
// glassbox home.
type History struct{ Path string }

// DefaultHistory is plan-history.jsonl in the glassbox home.
func DefaultHistory() (*History, error) {
	return &History{Path: filepath.Join(home.Home(), "plan-history.jsonl")}, nil
}

// maxHistory bounds the file: only the newest observations are kept.
const maxHistory = 1000

// Record appends o, keeping at most maxHistory observations.
func (h *History) Record(o Observation) error {
	obs, err := h.Load()
	if err != nil {
		return err
	}
	obs = append(obs, o)
	if len(obs) > maxHistory {
		obs = obs[len(obs)-maxHistory:]
	}
	if err := os.MkdirAll(filepath.Dir(h.Path), 0o755); err != nil {
		return fmt.Errorf("plan: calibration history: %w", err)
	}
	tmp := h.Path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("plan: calibration history: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, x := range obs {
		if err := enc.Encode(x); err != nil {
			f.Close()
			return fmt.Errorf("plan: calibration history: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("plan: calibration history: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plan: calibration history: %w", err)
	}
	return os.Rename(tmp, h.Path)
}

// Load reads every observation; a missing file is an empty history. Lines
// that do not parse are skipped (a torn write loses one run, not all).
func (h *History) Load() ([]Observation, error) {
	f, err := os.Open(h.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plan: calibration history: %w", err)
	}
	defer f.Close()
	var out []Observation
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var o Observation
		if json.Unmarshal(sc.Bytes(), &o) == nil {
			out = append(out, o)
		}
	}
	return out, sc.Err()
}
