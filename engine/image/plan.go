package image

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	tokclip "github.com/glassbox-ai/glassbox/tokenizer/clip"
	"github.com/glassbox-ai/glassbox/vae"
)

// Plan is what an image job will hold and how long its steps will take,
// predicted from the checkpoint's header before anything loads.
type Plan struct {
	Width, Height int
	Steps, Calls  int // sampling steps; UNet calls (2 a step with CFG, more for 2nd-order samplers)
	Batch         int

	// Weights of each component as they are resident, from the header's
	// shapes and types: the text encoder's and UNet's file pages (mapped
	// and read while binding; residentBytes), the VAE's packed kernels
	// and norms (vae.KLWeightBytes: F16 kernels stay binary16, the file's
	// pages dropped).
	TextBytes, UNetBytes, VAEBytes int64
	// Activations: the text encoder's, one UNet call's, the VAE decode's
	// (and the encoder's for img2img, bounded by the decode's).
	TextActivations, UNetActivations, DecodeBytes int64
	// DecodeTile is the decode's tile in latent pixels (0: whole), chosen
	// when the whole decode would not fit the budget; DecodeTiles counts them.
	DecodeTile, DecodeOverlap, DecodeTiles int
	Runtime                                int64 // the process before any model (plan's estimate)
	Total                                  int64
	Budget                                 int64 // what the job may use

	// SecPerCall is the predicted time of one UNet call, SecPerStep of
	// one step (calls / steps of them), Seconds of all the sampling;
	// Source says where the figure comes from.
	SecPerCall, SecPerStep, Seconds float64
	// ExtraSeconds is the part of Seconds beyond the steady rate: the
	// measured runs' median warm-up (first step), previews and saves.
	ExtraSeconds  float64
	DecodeSeconds float64 // 0: no run measured yet
	Source        string
	// MemoryFactor is the median measured peak RSS ÷ predicted of the
	// runs in history (1 without runs); Total includes it.
	MemoryFactor float64
	MemoryRuns   int
	RawTotal     int64 // Total before the factor (what history records, so corrections never compound)
}

// residentBytes is what a component holds in memory once bound: every
// tensor's file bytes (the mapping's pages are read, and those a network
// uses in place stay), plus packed bytes an element for the 4-D
// convolution kernels a network copies into its own layout and keeps
// beside their file pages; 0 for the text encoder (weights used in place)
// and the UNet, which packs its kernels in F16 and drops their file pages,
// the same bytes again. The VAE, which copies every tensor, is
// vae.KLWeightBytes (this with 4 only without a source to read).
func residentBytes(c checkpoint.Component, packed int64) int64 {
	n := c.Bytes
	if packed == 0 || c.Source == nil {
		return n
	}
	for _, name := range c.Source.Names() {
		if t, ok := c.Source.Tensor(name); ok && len(t.Shape) == 4 {
			n += packed * int64(t.Numel())
		}
	}
	return n
}

// PlanJob predicts s's job on the checkpoint m from its header, with
// history's measured runs (nil: none) and a budget (0: the machine's
// available memory).
func PlanJob(m *checkpoint.Components, s *Settings, dev *plan.Device, history []Observation, budget int64) (*Plan, error) {
	h, w := s.LatentH(), s.LatentW()
	p := &Plan{Width: s.Width, Height: s.Height, Steps: s.Steps, Batch: s.Batch,
		TextBytes: residentBytes(m.TextEncoder, 0), UNetBytes: residentBytes(m.UNet, 0), VAEBytes: residentBytes(m.VAE, 4)}
	if m.VAE.Source != nil {
		p.VAEBytes = vae.KLWeightBytes(m.VAE.Source) // packed; the file's pages dropped
	}
	steps := s.Steps
	if s.InitImage != "" {
		sig := make([]float32, steps+1)
		for i := range steps {
			sig[i] = float32(steps - i)
		}
		start, err := diffusion.StartAt(sig, s.Strength)
		if err != nil {
			return nil, err
		}
		steps -= start
	}
	perStep := 1
	if diffusion.NeedsUncond(s.CFGScale) {
		perStep = 2
	}
	switch s.Method {
	case diffusion.Heun, diffusion.DPM2, diffusion.DPMPP2SA:
		p.Calls = perStep * (2*steps - 1) // the last step (to σ = 0) makes one call
	default:
		p.Calls = perStep * steps
	}
	p.Steps = steps
	nctx := contextTokens(s)
	p.TextActivations = 4 * int64(77*(6*768+3072+2*768)+tokclip.ChunkLen*768*nctx/77)
	p.UNetActivations = unetActivationBytes(h, w, nctx) + 3*4*int64(Channels*h*w)*4 // + the sampler's and denoiser's latents
	p.Runtime = 64 << 20
	if dev != nil && dev.RuntimeBytes > 0 {
		p.Runtime = dev.RuntimeBytes
	}
	if budget <= 0 && dev != nil {
		budget = dev.RAMAvailable
	}
	p.Budget = budget
	weights := p.TextBytes + p.UNetBytes + p.VAEBytes + p.Runtime
	// The text encoder's working memory is gone before sampling starts,
	// and the UNet's before the decode: the peak is the larger phase.
	p.DecodeOverlap = vae.KLDefaultOverlap
	p.DecodeBytes = klDecodeBytes(h, w, 0, 0)
	p.DecodeTiles = 1
	if budget > 0 && weights+p.DecodeBytes > budget {
		// The largest tile that fits what the weights leave; when none does,
		// the untiled figure stays and Admit refuses with it.
		if dp, err := vae.ChooseKLTile(h, w, 0, budget-weights); err == nil && dp.Tile > 0 {
			p.DecodeTile, p.DecodeOverlap, p.DecodeTiles = dp.Tile, dp.Overlap, dp.Tiles
			p.DecodeBytes = klDecodeBytes(h, w, dp.Tile, dp.Overlap)
		}
	}
	p.Total = weights + max(p.TextActivations, p.UNetActivations, p.DecodeBytes)
	p.MemoryFactor, p.RawTotal = 1, p.Total
	var ratios []float64
	for _, o := range history {
		if o.PeakRSS > 0 && o.PredictedPeak > 0 {
			ratios = append(ratios, float64(o.PeakRSS)/float64(o.PredictedPeak))
		}
	}
	if len(ratios) > 0 {
		sort.Float64s(ratios)
		p.MemoryFactor, p.MemoryRuns = ratios[len(ratios)/2], len(ratios)
		p.Total = int64(float64(p.Total) * p.MemoryFactor)
	}
	p.predictTime(s, dev, history)
	return p, nil
}

func contextTokens(s *Settings) int {
	n := 1
	for _, t := range []string{s.Prompt, s.Negative} {
		if tok, err := tokclip.Tokenize(t); err == nil {
			n = max(n, tok.Chunks)
		}
	}
	return tokclip.ChunkLen * n
}

// assumedEfficiency is the share of the machine's float32 peak the UNet
// is assumed to reach before any run was measured: a 256² call took 1.82 s
// on the 2-core AVX-512 machine the goldens were checked on, 99 GFLOP/s of
// its 166 GFLOP/s estimated peak (512²: 4.25 s, more than the peak: the
// estimate is low there).
const assumedEfficiency = 0.6

// predictTime fills the time figures: the median s/call of measured runs
// at this size and thread count; else the nearest measured size scaled
// by UNetMACs; else UNetMACs at assumedEfficiency of the device's peak.
func (p *Plan) predictTime(s *Settings, dev *plan.Device, history []Observation) {
	h, w := s.LatentH(), s.LatentW()
	nctx := contextTokens(s)
	macs := UNetMACs(h, w, nctx)
	var same, other []Observation
	for _, o := range history {
		if o.SecPerCall <= 0 || (s.Threads > 0 && o.Threads != s.Threads) {
			continue
		}
		if o.Width == s.Width && o.Height == s.Height {
			same = append(same, o)
		} else {
			other = append(other, o)
		}
	}
	switch {
	case len(same) > 0:
		p.SecPerCall = median(same, func(o Observation) float64 { return o.SecPerCall })
		p.ExtraSeconds = median(same, func(o Observation) float64 { return o.ExtraSeconds })
		p.DecodeSeconds = median(same, func(o Observation) float64 { return o.DecodeSeconds })
		p.Source = fmt.Sprintf("measured: median of %d run(s) at %dx%d", len(same), s.Width, s.Height)
	case len(other) > 0:
		sort.Slice(other, func(i, j int) bool {
			return absf(float64(other[i].Width*other[i].Height-s.Width*s.Height)) < absf(float64(other[j].Width*other[j].Height-s.Width*s.Height))
		})
		o := other[0]
		p.SecPerCall = o.SecPerCall * macs / UNetMACs(o.Height/8, o.Width/8, nctx)
		p.Source = fmt.Sprintf("scaled from a run at %dx%d by the UNet's multiply-adds", o.Width, o.Height)
	case dev != nil && dev.PeakF32 > 0:
		p.SecPerCall = 2 * macs / (dev.PeakF32 * assumedEfficiency)
		p.Source = fmt.Sprintf("estimated: %.0f GFLOP a call at %.0f%% of %.0f GFLOP/s (no run measured yet)", 2*macs/1e9, 100*assumedEfficiency, dev.PeakF32/1e9)
	default:
		p.Source = "unknown (no run measured, no device figures)"
		return
	}
	calls := float64(p.Calls) / float64(max(p.Steps, 1))
	p.SecPerStep = p.SecPerCall * calls
	p.Seconds = p.SecPerCall*float64(p.Calls*p.Batch) + p.ExtraSeconds
}

func absf(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func median(obs []Observation, f func(Observation) float64) float64 {
	var v []float64
	for _, o := range obs {
		if x := f(o); x > 0 {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Admit refuses a plan above its budget, with the numbers and a hint.
func (p *Plan) Admit() error {
	if p.Budget <= 0 || p.Total <= p.Budget {
		return nil
	}
	hint := fmt.Sprintf("try a smaller size (-W %d -H %d)", p.Width/16*8, p.Height/16*8)
	if p.UNetActivations > p.DecodeBytes {
		hint += "; the UNet's attention at this size is the peak"
	}
	e := pipeline.Errorf(pipeline.StagePlan, hint, "a %dx%d image needs %s (weights %s text encoder + %s UNet + %s VAE, peak activations %s), more than the %s available",
		p.Width, p.Height, plan.FormatBytes(p.Total), plan.FormatBytes(p.TextBytes), plan.FormatBytes(p.UNetBytes), plan.FormatBytes(p.VAEBytes),
		plan.FormatBytes(max(p.UNetActivations, p.DecodeBytes)), plan.FormatBytes(p.Budget))
	return e.With("need_bytes", p.Total).With("budget_bytes", p.Budget).With("unet_activation_bytes", p.UNetActivations).With("decode_bytes", p.DecodeBytes)
}

// String is the plan in one line, for the plan stage's note.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%dx%d: %s (weights %s, UNet call %s, decode %s", p.Width, p.Height, plan.FormatBytes(p.Total),
		plan.FormatBytes(p.TextBytes+p.UNetBytes+p.VAEBytes), plan.FormatBytes(p.UNetActivations), plan.FormatBytes(p.DecodeBytes))
	if p.DecodeTile > 0 {
		fmt.Fprintf(&b, " in %d tiles of %d px", p.DecodeTiles, 8*p.DecodeTile)
	}
	b.WriteString(")")
	if p.SecPerStep > 0 {
		fmt.Fprintf(&b, "; %.2f s/step, %d steps ≈ %s (%s)", p.SecPerStep, p.Steps, fmtSeconds(p.Seconds), p.Source)
	}
	return b.String()
}

func fmtSeconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(100 * time.Millisecond).String()
}

// Observation is one measured image job, for the time predictions.
type Observation struct {
	Time    time.Time `json:"time"`
	Model   string    `json:"model"`
	Width   int       `json:"width"`
	Height  int       `json:"height"`
	Threads int       `json:"threads"`
	Calls   int       `json:"unet_calls"`
	// SecPerCall is the steady rate: the median over the steps of seconds
	// per UNet call; ExtraSeconds what the run took beyond Calls at that
	// rate (the first step's warm-up, previews, saving latents).
	SecPerCall       float64 `json:"s_per_call"`
	ExtraSeconds     float64 `json:"extra_s,omitempty"`
	SampleSeconds    float64 `json:"sample_s,omitempty"`
	PredictedSeconds float64 `json:"predicted_sample_s,omitempty"`
	DecodeSeconds    float64 `json:"decode_s,omitempty"`
	PredictedCall    float64 `json:"predicted_s_per_call,omitempty"`
	PredictedPeak    int64   `json:"predicted_bytes,omitempty"`
	PeakRSS          int64   `json:"peak_rss,omitempty"`
}

// History is the image jobs' measurements, one JSON line each, in the
// glassbox home (image-history.jsonl) unless Path says otherwise.
type History struct{ Path string }

// DefaultHistory is image-history.jsonl in the glassbox home.
func DefaultHistory() *History {
	return &History{Path: filepath.Join(home.Home(), "image-history.jsonl")}
}

const maxHistory = 500

// Load reads the observations; a missing file is an empty history and a
// bad line is skipped.
func (h *History) Load() ([]Observation, error) {
	f, err := os.Open(h.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Observation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var o Observation
		if json.Unmarshal(sc.Bytes(), &o) == nil {
			out = append(out, o)
		}
	}
	return out, sc.Err()
}

// Record appends o, keeping the newest maxHistory observations.
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
		return err
	}
	tmp := h.Path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, o := range obs {
		if err := enc.Encode(o); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, h.Path)
}
