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

	// What makes runs comparable for the speed correction: the speed
	// model that predicted (SpeedModel or SpeedModelRoofline; unversioned
	// runs are not used), the dominant weight format, the weight bytes read per token
	// and the worker threads.
	SpeedModel  int    `json:"speed_model,omitempty"`
	Format      string `json:"format,omitempty"`
	WeightBytes int64  `json:"weight_bytes,omitempty"`
	Threads     int    `json:"threads,omitempty"`
	Layers      int    `json:"layers,omitempty"`
	// DecodeSteps is how many decode passes MeasuredDecode timed (the
	// first generated token comes from the prompt's pass). Runs of fewer
	// than MinDecodeSteps, and runs recorded before it was (0), never
	// correct a decode figure: one token "generated" in the microseconds
	// of a sampling read as thousands of tokens/s, and such runs had
	// moved a 1B model's prediction ×6.7.
	DecodeSteps int `json:"decode_steps,omitempty"`
}

// MinDecodeSteps is the fewest decode passes a run's decode speed is
// recorded and used from.
const MinDecodeSteps = 4

// Observe pairs a plan with what a run measured (zero: not measured):
// decodeTokS is decode passes per second over decodeSteps passes (not
// kept below MinDecodeSteps).
func Observe(p *Plan, peakRSS int64, prefillTokS, decodeTokS float64, decodeSteps int) Observation {
	if decodeSteps < MinDecodeSteps {
		decodeTokS, decodeSteps = 0, 0
	}
	name := p.Model.Name
	if name == "" {
		name = p.Model.Arch
	}
	return Observation{Time: time.Now().UTC(), Model: name, FileBytes: p.Model.FileBytes, Device: p.Device.Name,
		Options: p.Options, PredictedBytes: p.raw.total, MeasuredPeakRSS: peakRSS,
		PredictedPrefill: p.raw.prefill, MeasuredPrefill: prefillTokS,
		PredictedDecode: p.raw.decode, MeasuredDecode: decodeTokS,
		SpeedModel: p.raw.speedModel, Format: p.Model.FileType, WeightBytes: p.Model.WeightBytes(),
		Threads: p.raw.threads, Layers: p.Model.Layers, DecodeSteps: decodeSteps}
}

// RecordRun stores what a finished job of plan p measured in the default
// history: this process's peak RSS and the speeds (tokens/s, 0 when not
// measured; decode over decodeSteps passes). Call it once per process and
// job, at the end (the peak is the process's).
func RecordRun(p *Plan, prefillTokS, decodeTokS float64, decodeSteps int) error {
	h, err := DefaultHistory()
	if err != nil {
		return err
	}
	return h.Record(Observe(p, PeakRSS(), prefillTokS, decodeTokS, decodeSteps))
}

// Calibration is what history says about the planner on one device.
//
// Memory: the median ratio measured ÷ predicted over every run (the
// correction applied to new plans) and the error bar, the median distance
// of a run from the corrected prediction, as a fraction (0.05 = ±5%);
// Before is the same error without correction.
//
// Speed is corrected per kind of model, never across kinds: a new plan's
// generation and prefill figures are scaled by the median ratio of runs of
// the same weight format, thread count and speed model whose weights are
// within a factor of two of its own (see correction), and only when there
// are at least MinCalibrationRuns of them. A 260K-parameter model's runs
// (microseconds of fixed costs per token) never move a 1B prediction
// (milliseconds of weight streaming).
type Calibration struct {
	N            int     `json:"runs"`
	SpeedRuns    int     `json:"speed_runs"` // runs with speeds measured against a versioned speed model
	MemoryFactor float64 `json:"memory_factor"`
	MemoryError  float64 `json:"memory_error"`
	MemoryBefore float64 `json:"memory_error_uncorrected"`

	speed []Observation // SpeedRuns of them, for correction
}

// MinCalibrationRuns is how many comparable runs a correction needs; fewer
// would chase noise.
const MinCalibrationRuns = 3

// Calibrate summarizes the observations made on device (nil when there are
// fewer than MinCalibrationRuns).
func Calibrate(obs []Observation, device string) *Calibration {
	var mem []float64
	c := &Calibration{}
	for _, o := range obs {
		if o.Device != device {
			continue
		}
		c.N++
		if o.MeasuredPeakRSS > 0 && o.PredictedBytes > 0 {
			mem = append(mem, float64(o.MeasuredPeakRSS)/float64(o.PredictedBytes))
		}
		if o.SpeedModel > 0 && o.WeightBytes > 0 &&
			((o.MeasuredDecode > 0 && o.PredictedDecode > 0) || (o.MeasuredPrefill > 0 && o.PredictedPrefill > 0)) {
			c.speed = append(c.speed, o)
		}
	}
	if c.N < MinCalibrationRuns {
		return nil
	}
	c.SpeedRuns = len(c.speed)
	c.MemoryFactor, c.MemoryError, c.MemoryBefore = summarize(mem)
	return c
}

// similarWeights is how far apart (as a ratio) two models' weight bytes may
// be for one's runs to correct the other's speed.
const similarWeights = 2.0

// correction returns the factor for the decode (or prefill) speed of a
// model of shape s on threads workers predicted by speed model model, the
// median distance of those runs from the corrected figure, and how many
// runs it comes from (0: no correction — fewer than MinCalibrationRuns
// comparable runs). A prefill figure for batches of batch tokens is
// corrected only by runs whose prompt batch was within a factor of two:
// a 9-token prompt reads every weight for 9 tokens (memory-bound), a
// 512-token batch is compute-bound, and ratios of the one had cut the
// other's 1B prediction from ~150 to ~32 tokens/s.
func (c *Calibration) correction(s *Shape, threads, model int, decode bool, batch int) (factor, errBar float64, n int) {
	if c == nil {
		return 0, 0, 0
	}
	wb := float64(s.WeightBytes())
	var ratios []float64
	for _, o := range c.speed {
		r := float64(o.WeightBytes) / wb
		if o.SpeedModel != model || o.Format != s.FileType || o.Threads != threads || r > similarWeights || r < 1/similarWeights {
			continue
		}
		switch {
		case decode && o.MeasuredDecode > 0 && o.PredictedDecode > 0 && o.DecodeSteps >= MinDecodeSteps:
			ratios = append(ratios, o.MeasuredDecode/o.PredictedDecode)
		case !decode && o.MeasuredPrefill > 0 && o.PredictedPrefill > 0 && similarBatch(o.Options, batch):
			ratios = append(ratios, o.MeasuredPrefill/o.PredictedPrefill)
		}
	}
	factor, errBar, _ = summarize(ratios)
	if factor <= 0 {
		return 0, 0, 0
	}
	return factor, errBar, len(ratios)
}

// similarBatches is how far apart (as a ratio) two prompt batches may be
// for one's prefill runs to correct the other's.
const similarBatches = 2.0

// similarBatch reports whether a run of options o prefilled batches
// within similarBatches of batch tokens.
func similarBatch(o Options, batch int) bool {
	b := o.Batch
	if o.Prompt > 0 {
		b = min(b, o.Prompt)
	}
	return b > 0 && batch > 0 && float64(b)/float64(batch) <= similarBatches && float64(batch)/float64(b) <= similarBatches
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
	return fmt.Sprintf("from %d measured runs: memory ±%.1f%% (uncorrected ±%.1f%%); speed corrected only by runs of similar models (%d runs of the current speed model)",
		c.N, 100*c.MemoryError, 100*c.MemoryBefore, c.SpeedRuns)
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
