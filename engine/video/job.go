package video

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/diffusion/wan"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/textenc/t5"
	"github.com/glassbox-ai/glassbox/tokenizer"
	"github.com/glassbox-ai/glassbox/vae"
)

// Wan 2.1 text-to-video defaults (wan/configs/wan_t2v_1_3B.py and
// shared_config.py, generate.py's defaults for t2v-1.3B).
const (
	DefaultFrames  = 81
	DefaultWidth   = 832
	DefaultHeight  = 480
	DefaultSteps   = 50
	DefaultShift   = 5.0
	DefaultCFG     = 5.0
	DefaultFPS     = 16 // sample_fps
	DefaultSampler = "unipc"
	DefaultRNG     = "cpu" // wan/text2video.py: torch.Generator(device='cpu')
)

// Request is a text-to-video job as the CLI and the journal see it.
type Request struct {
	DiT    string `json:"dit"`
	T5     string `json:"t5"`
	VAE    string `json:"vae"`
	Spiece string `json:"spiece,omitempty"` // SentencePiece model ("": the umT5 file's spiece_model tensor)

	Prompt      string  `json:"prompt"`
	Negative    string  `json:"negative_prompt,omitempty"` // "": Wan's default
	PromptIDs   []int32 `json:"prompt_ids,omitempty"`      // token ids used as given (no EOS added)
	NegativeIDs []int32 `json:"negative_prompt_ids,omitempty"`

	Frames int `json:"frames"`
	// RoundFrames rounds a Frames that is not 4n + 1 to the nearest that
	// is (the larger on a tie), with a frames_rounded warning, instead of
	// refusing it.
	RoundFrames bool    `json:"round_frames,omitempty"`
	Width       int     `json:"width"`
	Height      int     `json:"height"`
	Steps       int     `json:"steps"`
	CFGScale    float32 `json:"cfg_scale"`
	Shift       float64 `json:"shift"`
	Sampler     string  `json:"sampler"`
	Seed        int64   `json:"seed"`
	RNG         string  `json:"rng,omitempty"`   // the noise's generator: "cpu" (torch's CPU generator, Wan's) or "cuda" (Philox)
	Heads       int     `json:"heads,omitempty"` // DiT heads (0: Wan's 128-wide heads)
	FPS         int     `json:"fps"`

	Out       string `json:"output"`               // the MP4 ("": none, FramesDir only)
	FramesDir string `json:"frames_dir,omitempty"` // also write frame_NNN.png here
	Threads   int    `json:"threads,omitempty"`
	Budget    int64  `json:"budget_bytes,omitempty"` // 0: the machine's available memory

	roundedFrom int // the frame count asked for, when RoundFrames changed it
}

// Defaults fills r's zero settings with Wan's.
func (r *Request) Defaults() {
	if r.Frames == 0 {
		r.Frames = DefaultFrames
	}
	if r.Width == 0 {
		r.Width = DefaultWidth
	}
	if r.Height == 0 {
		r.Height = DefaultHeight
	}
	if r.Steps == 0 {
		r.Steps = DefaultSteps
	}
	if r.CFGScale == 0 {
		r.CFGScale = DefaultCFG
	}
	if r.Shift == 0 {
		r.Shift = DefaultShift
	}
	if r.Sampler == "" {
		r.Sampler = DefaultSampler
	}
	if r.FPS == 0 {
		r.FPS = DefaultFPS
	}
	if r.RNG == "" {
		r.RNG = DefaultRNG
	}
}

// method returns the request's sampler.
func (r *Request) method() (diffusion.Method, error) {
	m, err := diffusion.ParseFlowMethod(r.Sampler)
	if err != nil {
		return "", fmt.Errorf("sampler %q: Wan's flow samplers are unipc and euler", r.Sampler)
	}
	return m, nil
}

// Check fills r's zero settings with Wan's and refuses settings a job
// cannot run, as its plan stage does, without opening a file (a server
// refuses a bad request with it before making a job). Its error is in
// stage plan; the latent is the job's shape, for PlanJob.
func (r *Request) Check() (wan.Latent, error) {
	r.Defaults()
	lat, err := r.check()
	if err != nil {
		return wan.Latent{}, pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	return lat, nil
}

// check refuses settings the job cannot run, naming the nearest valid ones.
func (r *Request) check() (wan.Latent, error) {
	if r.DiT == "" || r.T5 == "" || r.VAE == "" {
		return wan.Latent{}, fmt.Errorf("the DiT, umT5 and VAE files are all needed (dit %q, t5 %q, vae %q)", r.DiT, r.T5, r.VAE)
	}
	if r.Prompt == "" && len(r.PromptIDs) == 0 {
		return wan.Latent{}, fmt.Errorf("no prompt")
	}
	// Token ids are used as given: more than umT5 reads cannot run (a text
	// prompt is cut to fit instead, as Wan's tokenizer cuts it).
	for _, ids := range []struct {
		name string
		n    int
	}{{"prompt ids", len(r.PromptIDs)}, {"negative prompt ids", len(r.NegativeIDs)}} {
		if ids.n > wan.TextLen {
			return wan.Latent{}, fmt.Errorf("%s: %d token ids, umT5 reads at most %d: give at most %d (a text prompt is cut to %d tokens and EOS instead)",
				ids.name, ids.n, wan.TextLen, wan.TextLen, wan.TextLen-1)
		}
	}
	if r.Steps < 1 || r.Steps > 1000 {
		return wan.Latent{}, fmt.Errorf("steps %d: want 1..1000", r.Steps)
	}
	if !(r.Shift > 0) || math.IsInf(r.Shift, 0) {
		return wan.Latent{}, fmt.Errorf("shift %g: want a positive number", r.Shift)
	}
	if c := float64(r.CFGScale); math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
		return wan.Latent{}, fmt.Errorf("cfg scale %g: want a finite number ≥ 0", c)
	}
	if r.FPS < 1 || r.FPS > 240 {
		return wan.Latent{}, fmt.Errorf("fps %d: want 1..240", r.FPS)
	}
	if r.Out == "" && r.FramesDir == "" {
		return wan.Latent{}, fmt.Errorf("no output: give an MP4 path, a frames folder or both")
	}
	if _, err := r.method(); err != nil {
		return wan.Latent{}, err
	}
	if !slices.Contains(rng.Names, r.RNG) {
		return wan.Latent{}, fmt.Errorf("rng %q: want one of %s (cpu: torch's CPU generator, as Wan draws its noise; cuda: Philox, torch's CUDA generator)",
			r.RNG, strings.Join(rng.Names, ", "))
	}
	if lo, hi := wan.NearestFrames(r.Frames); r.RoundFrames && r.Frames > 1 && lo != hi {
		r.roundedFrom, r.Frames = r.Frames, hi
		if r.roundedFrom-lo < hi-r.roundedFrom {
			r.Frames = lo
		}
	}
	lat, err := wan.LatentOf(r.Frames, r.Width, r.Height)
	if lo, hi := wan.NearestFrames(r.Frames); err != nil && r.Frames > 1 && lo != hi {
		return wan.Latent{}, pipeline.Wrap(pipeline.StagePlan, err, "round_frames (glassbox video --round-frames) rounds the count to the nearest 4n + 1")
	}
	return lat, err
}

// Engine runs video jobs. Its zero value runs on this machine.
type Engine struct {
	// Device is the machine the plan is made for (nil: plan.Local()).
	Device *plan.Device
	// FFmpeg is the encoder's path ("": "ffmpeg" looked up in PATH).
	FFmpeg string
}

// Result is what a job made.
type Result struct {
	Video     string   `json:"video,omitempty"` // the MP4 ("" when ffmpeg was not run)
	FramesDir string   `json:"frames_dir,omitempty"`
	Frames    int      `json:"frames"`
	Latents   string   `json:"latents"` // the saved final latent
	Seed      int64    `json:"seed"`
	Plan      *Plan    `json:"plan"`
	Timesteps []int    `json:"timesteps"`
	Warnings  []string `json:"warnings,omitempty"`
}

// LatentsPath is where a job's folder keeps its final latent.
func LatentsPath(dir string) string { return filepath.Join(dir, "latents.f32") }

// job is one Run's state.
type job struct {
	e    *Engine
	r    *Request
	lat  wan.Latent
	dir  string
	tr   *pipeline.Trace
	pool *compute.Pool
	plan *Plan

	ffmpeg string // "" when the MP4 is not made
	files  []*checkpoint.File
	t5f    *checkpoint.File
	ditf   *checkpoint.File
	tok    *tokenizer.Tokenizer
	enc    *t5.Encoder
	dit    *wan.DiT
	vae    *vae.WanVAE

	texts    [2]*wan.Text // prompt, negative prompt
	contexts [2][]float32 // their umT5 outputs, until the DiT embeds them
	rows     [2]int
	x        []float32 // the latent
	latents  string
	sched    diffusion.FlowSchedule
	warnings []string
	frames   int
	mp4      *encoder // the running ffmpeg, from decode to deliver
	written  int64

	saved string // Decode: the saved latent decoded again
}

// Run runs the job r as job id, keeping its latents in dir ("": the
// directory of the output), reporting through ctx's pipeline trace.
func (e *Engine) Run(ctx context.Context, r Request, id, dir string) (*Result, error) {
	return e.run(ctx, r, dir, "")
}

// Decode runs decode and deliver again from the latent a job of request r
// saved (glassbox decode JOB): only the VAE is loaded, so a decode or an
// ffmpeg that failed loses no sampling.
func (e *Engine) Decode(ctx context.Context, r Request, latents, id string) (*Result, error) {
	return e.run(ctx, r, "", latents)
}

func (e *Engine) run(ctx context.Context, r Request, dir, saved string) (*Result, error) {
	r.Defaults()
	j := &job{e: e, r: &r, dir: dir, tr: pipeline.TraceFrom(ctx), saved: saved}
	defer j.close()
	j.pool = compute.NewPool(r.Threads)
	defer j.pool.Close()
	for _, st := range []struct {
		stage pipeline.Stage
		fn    func(context.Context) (pipeline.StageStats, error)
	}{
		{pipeline.StagePlan, j.planStage},
		{pipeline.StageLoad, j.load},
		{pipeline.StageEncode, j.encode},
		{pipeline.StageGenerate, j.generate},
		{pipeline.StageDecode, j.decode},
		{pipeline.StageDeliver, j.deliver},
	} {
		if saved != "" && (st.stage == pipeline.StageEncode || st.stage == pipeline.StageGenerate) {
			j.tr.OnStageSkipped(st.stage, "decoding the saved latent "+saved)
			continue
		}
		if st.stage == pipeline.StageGenerate {
			j.tr.OnStageSkipped(pipeline.StagePrefill, "diffusion has no prompt pass")
		}
		if err := j.stage(ctx, st.stage, st.fn); err != nil {
			return nil, err
		}
	}
	if saved != "" {
		j.latents = saved
	}
	res := &Result{Video: "", FramesDir: r.FramesDir, Frames: j.frames, Latents: j.latents, Seed: r.Seed,
		Plan: j.plan, Timesteps: j.sched.Timesteps, Warnings: j.warnings}
	if j.ffmpeg != "" {
		res.Video = r.Out
	}
	return res, nil
}

// drop closes one of the job's files.
func (j *job) drop(f *checkpoint.File) {
	for i, g := range j.files {
		if g == f {
			f.Close()
			j.files = append(j.files[:i], j.files[i+1:]...)
			return
		}
	}
}

func (j *job) close() {
	if j.mp4 != nil {
		j.mp4.abort()
		j.mp4 = nil
	}
	for _, f := range j.files {
		f.Close()
	}
	j.files = nil
}

// stage runs fn as stage st; an error is attributed to st unless it names
// its own.
func (j *job) stage(ctx context.Context, st pipeline.Stage, fn func(context.Context) (pipeline.StageStats, error)) error {
	j.tr.OnStageStart(st)
	stats, err := fn(ctx)
	if err != nil {
		return pipeline.Wrap(st, err, "")
	}
	j.tr.OnStageDone(st, stats)
	return nil
}

// part runs fn as a part of stage st and reports it.
func (j *job) part(st pipeline.Stage, name string, fn func() (pipeline.StageStats, error)) error {
	t0 := time.Now()
	stats, err := fn()
	if err != nil {
		return err
	}
	j.tr.OnPartDone(st, name, time.Since(t0), stats)
	return nil
}

func (j *job) warn(code, msg string) {
	j.warnings = append(j.warnings, msg)
	j.tr.OnWarning(code, msg)
}

func (j *job) planStage(ctx context.Context) (pipeline.StageStats, error) {
	lat, err := j.r.check()
	if err != nil {
		return pipeline.StageStats{}, err
	}
	j.lat = lat
	if j.r.roundedFrom != 0 {
		lo, hi := wan.NearestFrames(j.r.roundedFrom)
		j.warn("frames_rounded", fmt.Sprintf("%d video frames are not 4n + 1 (nearest: %d or %d): rounded to %d", j.r.roundedFrom, lo, hi, j.r.Frames))
	}
	if j.r.Out != "" {
		if j.ffmpeg, err = FindFFmpeg(j.e.FFmpeg); err != nil {
			if j.r.FramesDir == "" {
				return pipeline.StageStats{}, pipeline.Wrap(pipeline.StageDeliver, err,
					"install ffmpeg (Debian: apt-get install ffmpeg) or pass --frames-dir DIR to get the frames as PNGs")
			}
			j.warn("no_ffmpeg", err.Error()+": the frames are written to "+j.r.FramesDir+" and no MP4 is made")
		}
	}
	dev := j.e.Device
	if dev == nil {
		if dev, err = plan.Local(); err != nil {
			return pipeline.StageStats{}, err
		}
	}
	if j.saved != "" {
		j.plan, err = PlanDecode(j.r, lat, dev)
	} else {
		j.plan, err = PlanJob(j.r, lat, dev)
	}
	if err != nil {
		return pipeline.StageStats{}, err
	}
	if err := j.plan.Admit(); err != nil {
		return pipeline.StageStats{}, err
	}
	return pipeline.StageStats{Bytes: j.plan.Total, Note: j.plan.String()}, nil
}

func (j *job) open(path string) (*checkpoint.File, error) {
	f, err := checkpoint.Open(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	j.files = append(j.files, f)
	return f, nil
}

func (j *job) load(ctx context.Context) (pipeline.StageStats, error) {
	var total int64
	steps := []struct {
		name string
		bind func() (int64, error)
	}{
		{"umT5 " + filepath.Base(j.r.T5), func() (int64, error) {
			f, err := j.open(j.r.T5)
			if err != nil {
				return 0, err
			}
			j.t5f = f
			if j.enc, err = t5.New(f); err != nil {
				return 0, err
			}
			if len(j.r.PromptIDs) == 0 || (len(j.r.NegativeIDs) == 0 && diffusion.NeedsUncond(j.r.CFGScale)) {
				if j.tok, err = sentencePiece(j.r.Spiece, f); err != nil {
					return 0, err
				}
			}
			return j.enc.WeightBytes(), nil
		}},
		{"DiT " + filepath.Base(j.r.DiT), func() (int64, error) {
			f, err := j.open(j.r.DiT)
			if err != nil {
				return 0, err
			}
			j.ditf = f
			if j.dit, err = wan.New(f, j.r.Heads); err != nil {
				return 0, err
			}
			if td, ed := j.dit.Config().TextDim, j.enc.Config().Dim; td != ed {
				return 0, fmt.Errorf("the DiT reads %d-wide text rows, the umT5 encoder %s makes %d-wide ones", td, j.r.T5, ed)
			}
			return j.dit.WeightBytes(), nil
		}},
		{"VAE " + filepath.Base(j.r.VAE), func() (int64, error) {
			f, err := j.open(j.r.VAE)
			if err != nil {
				return 0, err
			}
			if j.vae, err = vae.NewWanVAE(f); err != nil {
				return 0, err
			}
			return j.vae.WeightBytes(), nil
		}},
	}
	if j.saved != "" {
		steps = append(steps[2:], struct {
			name string
			bind func() (int64, error)
		}{"latents " + filepath.Base(j.saved), func() (int64, error) {
			var err error
			if j.x, err = vae.ReadF32(j.saved, j.lat.Len()); err != nil {
				return 0, fmt.Errorf("saved latent of %d frames of %d×%d: %w", j.r.Frames, j.r.Width, j.r.Height, err)
			}
			if k := firstNonFinite(j.x); k >= 0 {
				return 0, fmt.Errorf("saved latent %s has a non-finite value at %d (%g)", j.saved, k, j.x[k])
			}
			return 4 * int64(len(j.x)), nil
		}})
	}
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return pipeline.StageStats{}, err
		}
		err := j.part(pipeline.StageLoad, st.name, func() (pipeline.StageStats, error) {
			n, err := st.bind()
			total += n
			return pipeline.StageStats{Bytes: n}, err
		})
		if err != nil {
			return pipeline.StageStats{}, err
		}
	}
	return pipeline.StageStats{Bytes: total, PeakRSS: plan.PeakRSS()}, nil
}

// spieceTensor is where ComfyUI keeps a T5 encoder's SentencePiece model
// inside its checkpoint.
const spieceTensor = "spiece_model"

// sentencePiece returns the tokenizer of the --spiece file, or of the umT5
// file's spiece_model tensor.
func sentencePiece(path string, f *checkpoint.File) (*tokenizer.Tokenizer, error) {
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		tok, err := tokenizer.FromSentencePiece(b)
		if err != nil {
			return nil, fmt.Errorf("SentencePiece model %s: %w", path, err)
		}
		return tok, nil
	}
	if err := hasSentencePiece("", f); err != nil {
		return nil, err
	}
	t, _ := f.Tensor(spieceTensor)
	tok, err := tokenizer.FromSentencePiece(t.Data)
	if err != nil {
		return nil, &checkpoint.Error{Path: f.Path(), Tensor: spieceTensor, Err: err}
	}
	return tok, nil
}

// promptIDs tokenizes a prompt as Wan's T5EncoderModel does: cleaned, its
// tokens truncated to 511 with EOS last; ids given are used as they are.
// n is the prompt's token count before any truncation (EOS included).
func (j *job) promptIDs(text string, given []int32) (ids []int32, n int, err error) {
	if len(given) > 0 {
		if len(given) > wan.TextLen {
			return nil, len(given), fmt.Errorf("%d token ids, umT5 reads at most %d", len(given), wan.TextLen)
		}
		vocab := j.enc.Config().VocabSize
		for i, id := range given {
			if id < 0 || int(id) >= vocab {
				return nil, len(given), fmt.Errorf("token id %d at %d is outside the vocabulary of %d", id, i, vocab)
			}
		}
		return given, len(given), nil
	}
	toks, err := j.tok.Encode(t5.CleanPrompt(text), false, false)
	if err != nil {
		return nil, 0, err
	}
	eos := j.tok.EOS()
	if eos < 0 {
		return nil, 0, fmt.Errorf("the SentencePiece model has no EOS piece")
	}
	return t5.PromptIDs(toks, eos), len(toks) + 1, nil
}

func (j *job) encode(ctx context.Context) (pipeline.StageStats, error) {
	var tokens int64
	prompts := []struct {
		name, text string
		ids        []int32
	}{{"prompt", j.r.Prompt, j.r.PromptIDs}}
	if diffusion.NeedsUncond(j.r.CFGScale) {
		neg := j.r.Negative
		if len(j.r.NegativeIDs) == 0 {
			neg = t5.NegativePrompt(neg)
		}
		prompts = append(prompts, struct {
			name, text string
			ids        []int32
		}{"negative prompt", neg, j.r.NegativeIDs})
	}
	for i, pr := range prompts {
		err := j.part(pipeline.StageEncode, pr.name, func() (pipeline.StageStats, error) {
			ids, n, err := j.promptIDs(pr.text, pr.ids)
			if err != nil {
				return pipeline.StageStats{}, fmt.Errorf("%s: %w", pr.name, err)
			}
			if n > len(ids) {
				j.warn("prompt_truncated", fmt.Sprintf("the %s is %d tokens with its EOS, umT5 reads at most %d: its first %d and EOS are encoded, the last %d are left out (as Wan's tokenizer truncates)",
					pr.name, n, wan.TextLen, len(ids)-1, n-len(ids)))
			}
			ctxv, err := j.enc.Encode(ctx, j.pool, ids)
			if err != nil {
				return pipeline.StageStats{}, fmt.Errorf("%s: %w", pr.name, err)
			}
			if k := firstNonFinite(ctxv); k >= 0 {
				return pipeline.StageStats{}, fmt.Errorf("%s: umT5 gave a non-finite value at row %d (%g)", pr.name, k/j.enc.Config().Dim, ctxv[k])
			}
			j.contexts[i], j.rows[i] = ctxv, len(ids)
			tokens += int64(len(ids))
			return pipeline.StageStats{Items: int64(len(ids)), Unit: "tokens"}, nil
		})
		if err != nil {
			return pipeline.StageStats{}, err
		}
	}
	// umT5 is not needed again: its file's mapping goes before the DiT's
	// matrices (which alias their file) are first read.
	j.drop(j.t5f)
	j.enc, j.t5f = nil, nil
	return pipeline.StageStats{Items: tokens, Unit: "tokens", Placement: placement(j.pool)}, nil
}

func firstNonFinite(v []float32) int {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return i
		}
	}
	return -1
}

func placement(p *compute.Pool) string { return fmt.Sprintf("cpu:%d threads", p.Threads()) }

func fmtSeconds(s float64) string {
	if s < 90 {
		return fmt.Sprintf("%.1f s", s)
	}
	return (time.Duration(s) * time.Second).Round(time.Second).String()
}

// joinNonEmpty joins the non-empty strings with sep.
func joinNonEmpty(sep string, s ...string) string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return strings.Join(out, sep)
}
