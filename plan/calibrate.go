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
		PredictedDecode: p.raw.decode, MeasuredDecode: decodeTokS}
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
}

// MinCalibrationRuns is how many runs a device needs before its constants
// are corrected; fewer would chase noise.
const MinCalibrationRuns = 3

// Calibrate summarizes the observations made on device (nil when there are
// fewer than MinCalibrationRuns).
func Calibrate(obs []Observation, device string) *Calibration {
	var mem, pre, dec []float64
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
		}
		if o.MeasuredDecode > 0 && o.PredictedDecode > 0 {
			dec = append(dec, o.MeasuredDecode/o.PredictedDecode)
		}
	}
	if n < MinCalibrationRuns {
		return nil
	}
	c := &Calibration{N: n}
	c.MemoryFactor, c.MemoryError, c.MemoryBefore = summarize(mem)
	c.PrefillFactor, c.PrefillError, _ = summarize(pre)
	c.DecodeFactor, c.DecodeError, c.DecodeBefore = summarize(dec)
	return c
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
