package image

import (
	"context"
	"fmt"
	"image"
	_ "image/jpeg" // init images may be JPEG
	_ "image/png"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/imageio"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	textclip "github.com/glassbox-ai/glassbox/textenc/clip"
	tokclip "github.com/glassbox-ai/glassbox/tokenizer/clip"
)

// Engine runs image jobs. Its zero value runs the real networks on this
// machine with the default history.
type Engine struct {
	Nets Nets
	// Open opens the checkpoint (nil: OpenModel).
	Open func(path, vae string) (*Model, error)
	// Hash returns a file's SHA-256 in hex (nil: FileSHA256, cached).
	Hash func(path string) (string, error)
	// Device is the machine the plan is made for (nil: plan.Local()).
	Device *plan.Device
	// History holds measured runs (nil: DefaultHistory()); a finished job
	// adds its own.
	History *History
	// PreviewEvery is the least time between two preview events (0: 1 s;
	// negative: no previews).
	PreviewEvery time.Duration
	// Resident, when set, keeps the checkpoint's networks between Runs:
	// the first Run binds them into it, the later ones reuse them (one
	// Run at a time; see Loaded). Its model must be the job's.
	Resident *Loaded
}

// Result is what a job made.
type Result struct {
	Images []Output `json:"images"`
	Plan   *Plan    `json:"plan,omitempty"`
}

// Output is one image of a job.
type Output struct {
	Path    string `json:"path"`
	Seed    int64  `json:"seed"`
	Latents string `json:"latents"` // the saved final latent in the job's folder
}

// LatentsPath is where a job's folder keeps image b's final latent.
func LatentsPath(dir string, b int) string {
	return filepath.Join(dir, fmt.Sprintf("latents-%d.f32", b))
}

// ImageSize reads an init image's size from its header.
func ImageSize(path string) (w, h int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, pipeline.Wrap(pipeline.StagePlan, fmt.Errorf("init image: %w", err), "")
	}
	defer f.Close()
	c, _, err := image.DecodeConfig(f)
	if err != nil {
		return 0, 0, pipeline.Wrap(pipeline.StagePlan, fmt.Errorf("init image %s: %w (PNG and JPEG are read)", path, err), "")
	}
	return c.Width, c.Height, nil
}

// job is one Run's state.
type job struct {
	e      *Engine
	s      *Settings
	id     string
	dir    string
	tr     *pipeline.Trace
	times  map[string]float64
	pool   *compute.Pool
	model  *Model
	plan   *Plan
	sha    string
	vaeSHA string

	text TextEncoder
	unet EpsNet
	vae  VAE

	cond, uncond []float32
	nCond, nUnc  int
	init         []float32 // img2img's init latent (diffusion space)
	latents      [][]float32
	images       [][]float32
	calls        int
	decodeOnly   bool // Decode: only the VAE is loaded
	resident     *Loaded
	sampleTime   time.Duration
	// stepSecPerCall is each sampling step's seconds per UNet call.
	stepSecPerCall []float64
	decodeTime     time.Duration
}

// Run runs the job s (see Resolve) as job id, keeping its latents in dir
// (created; "" keeps them nowhere but SaveLatents), and reports through
// ctx's pipeline trace.
func (e *Engine) Run(ctx context.Context, s *Settings, id, dir string) (*Result, error) {
	j := &job{e: e, s: s, id: id, dir: dir, tr: pipeline.TraceFrom(ctx), times: map[string]float64{}, resident: e.Resident}
	if l := j.resident; l != nil {
		if err := l.take(ctx, s); err != nil {
			return nil, err
		}
		defer l.give()
	}
	defer func() {
		if j.model != nil && (j.resident == nil || j.resident.model != j.model) {
			j.model.Close() // a Loaded's model stays open with it
		}
	}()
	j.pool = compute.NewPool(s.Threads)
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
		if st.stage == pipeline.StageGenerate {
			j.tr.OnStageSkipped(pipeline.StagePrefill, "diffusion has no prompt pass")
		}
		if err := j.stage(ctx, st.stage, st.fn); err != nil {
			return nil, err
		}
	}
	j.record()
	res := &Result{Plan: j.plan}
	for b := range s.Batch {
		res.Images = append(res.Images, Output{Path: OutPath(s.Out, b), Seed: s.SeedOf(b), Latents: j.latentsPath(b)})
	}
	return res, nil
}

func (j *job) latentsPath(b int) string {
	if j.dir == "" {
		return OutPath(j.s.SaveLatents, b)
	}
	return LatentsPath(j.dir, b)
}

// stage runs fn as stage st: start, done with its stats, its time kept
// for the job record; an error is attributed to st unless it names its own.
func (j *job) stage(ctx context.Context, st pipeline.Stage, fn func(context.Context) (pipeline.StageStats, error)) error {
	j.tr.OnStageStart(st)
	t0 := time.Now()
	stats, err := fn(ctx)
	if err != nil {
		return pipeline.Wrap(st, err, "")
	}
	j.times[string(st)] = float64(time.Since(t0).Microseconds()) / 1000
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

func (j *job) planStage(ctx context.Context) (pipeline.StageStats, error) {
	if l := j.resident; l != nil && l.model != nil {
		j.model = l.model // opened by the job that loaded it
	} else {
		open := j.e.Open
		if open == nil {
			open = OpenModel
		}
		m, err := open(j.s.Model, j.s.VAE)
		if err != nil {
			return pipeline.StageStats{}, pipeline.Wrap(pipeline.StageLoad, err, "")
		}
		j.model = m
	}
	var err error
	dev := j.e.Device
	if dev == nil {
		if dev, err = plan.Local(); err != nil {
			return pipeline.StageStats{}, err
		}
	}
	hist := j.e.History
	if hist == nil {
		hist = DefaultHistory()
	}
	obs, _ := hist.Load() // a history that cannot be read predicts nothing
	if j.plan, err = PlanJob(j.model.Components, j.s, dev, obs, j.s.Budget); err != nil {
		return pipeline.StageStats{}, err
	}
	if j.decodeOnly {
		p := j.plan
		p.TextBytes, p.UNetBytes, p.TextActivations, p.UNetActivations = 0, 0, 0, 0
		p.RawTotal = p.VAEBytes + p.Runtime + p.DecodeBytes
		p.Total = int64(float64(p.RawTotal) * p.MemoryFactor)
	}
	if err := j.plan.Admit(); err != nil {
		return pipeline.StageStats{}, err
	}
	return pipeline.StageStats{Bytes: j.plan.Total, Note: j.plan.String()}, nil
}

func (j *job) hash(path string) (string, error) {
	if j.e.Hash != nil {
		return j.e.Hash(path)
	}
	return FileSHA256(path)
}

func (j *job) load(ctx context.Context) (pipeline.StageStats, error) {
	if j.resident != nil && j.resident.IsLoaded() {
		return j.loadResident()
	}
	c := j.model.Components
	var total int64
	err := j.part(pipeline.StageLoad, "SHA-256", func() (pipeline.StageStats, error) {
		var err error
		if j.sha, err = j.hash(j.s.Model); err != nil {
			return pipeline.StageStats{}, err
		}
		if j.s.VAE != "" {
			if j.vaeSHA, err = j.hash(j.s.VAE); err != nil {
				return pipeline.StageStats{}, err
			}
		}
		return pipeline.StageStats{Note: j.sha[:min(10, len(j.sha))]}, nil
	})
	if err != nil {
		return pipeline.StageStats{}, err
	}
	steps := []struct {
		name string
		bind func() (int64, error)
	}{
		{c.TextEncoder.Name, func() (int64, error) {
			t, err := j.e.Nets.text(c.TextEncoder)
			j.text = t
			return weightBytes(t, err)
		}},
		{c.UNet.Name, func() (int64, error) {
			u, err := j.e.Nets.unet(c.UNet)
			j.unet = u
			return weightBytes(u, err)
		}},
		{c.VAE.Name, func() (int64, error) {
			v, err := j.e.Nets.vae(c.VAE)
			j.vae = v
			return weightBytes(v, err)
		}},
	}
	for i, st := range steps {
		if err := ctx.Err(); err != nil {
			return pipeline.StageStats{}, err
		}
		dtypes := []string{c.TextEncoder.DTypeList(), c.UNet.DTypeList(), c.VAE.DTypeList()}[i]
		err := j.part(pipeline.StageLoad, st.name, func() (pipeline.StageStats, error) {
			n, err := st.bind()
			total += n
			return pipeline.StageStats{Bytes: n, Note: dtypes}, err
		})
		if err != nil {
			return pipeline.StageStats{}, err
		}
	}
	if j.resident != nil {
		j.keepLoaded(total)
	}
	return pipeline.StageStats{Bytes: total, PeakRSS: plan.PeakRSS()}, nil
}

func weightBytes(n interface{ WeightBytes() int64 }, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return n.WeightBytes(), nil
}

func (j *job) encode(ctx context.Context) (pipeline.StageStats, error) {
	opts := textclip.Options{ClipSkip: j.s.ClipSkip}
	var tokens int64
	run := func(name, prompt string) ([]float32, int, error) {
		var out []float32
		var n int
		err := j.part(pipeline.StageEncode, name, func() (pipeline.StageStats, error) {
			tok, err := tokclip.Tokenize(prompt)
			if err != nil {
				return pipeline.StageStats{}, fmt.Errorf("%s: %w", name, err)
			}
			if out, err = j.text.Encode(ctx, j.pool, tok.IDs, tok.Weights, opts); err != nil {
				return pipeline.StageStats{}, fmt.Errorf("%s: %w", name, err)
			}
			if len(out) != len(tok.IDs)*768 {
				return pipeline.StageStats{}, fmt.Errorf("%s: the text encoder gave %d values for %d tokens, want %d", name, len(out), len(tok.IDs), 768*len(tok.IDs))
			}
			n = len(tok.IDs)
			tokens += int64(n)
			return pipeline.StageStats{Items: int64(n), Unit: "tokens", Note: fmt.Sprintf("%d window(s)", tok.Chunks)}, nil
		})
		return out, n, err
	}
	var err error
	if j.cond, j.nCond, err = run("prompt", j.s.Prompt); err != nil {
		return pipeline.StageStats{}, err
	}
	if diffusion.NeedsUncond(j.s.CFGScale) {
		if j.uncond, j.nUnc, err = run("negative prompt", j.s.Negative); err != nil {
			return pipeline.StageStats{}, err
		}
	}
	if j.s.InitImage != "" {
		if err := j.part(pipeline.StageEncode, "init image (VAE encoder)", j.encodeInit(ctx)); err != nil {
			return pipeline.StageStats{}, err
		}
	}
	return pipeline.StageStats{Items: tokens, Unit: "tokens", Placement: placement(j.pool)}, nil
}

// encodeInit reads the init image and encodes it as sd.cpp's img2img does
// (README §4.5 of the golden set): pixels u8/255·2−1, the VAE encoder's
// mean and log-variance, a posterior sample mean + exp(½·clamp(logvar,
// −30, 20))·n with n the first call of the generator seeded with the
// request's seed, times ScaleFactor.
func (j *job) encodeInit(ctx context.Context) func() (pipeline.StageStats, error) {
	return func() (pipeline.StageStats, error) {
		f, err := os.Open(j.s.InitImage)
		if err != nil {
			return pipeline.StageStats{}, fmt.Errorf("init image: %w", err)
		}
		im, _, err := image.Decode(f)
		f.Close()
		if err != nil {
			return pipeline.StageStats{}, fmt.Errorf("init image %s: %w", j.s.InitImage, err)
		}
		rgb, h, w := imageio.Planar(im)
		if h != j.s.Height || w != j.s.Width {
			return pipeline.StageStats{}, fmt.Errorf("init image %s is %dx%d, the job %dx%d", j.s.InitImage, w, h, j.s.Width, j.s.Height)
		}
		for i, v := range rgb {
			rgb[i] = v*2 - 1
		}
		mean, logvar, err := j.vae.Encode(ctx, j.pool, rgb, h, w)
		if err != nil {
			return pipeline.StageStats{}, fmt.Errorf("init image: %w", err)
		}
		n := Channels * j.s.LatentH() * j.s.LatentW()
		if len(mean) != n || len(logvar) != n {
			return pipeline.StageStats{}, fmt.Errorf("init image: the VAE encoder gave %d and %d values, want %d", len(mean), len(logvar), n)
		}
		g, _ := rng.New(j.s.RNG, uint64(j.s.Seed))
		noise := make([]float32, n)
		g.Randn(noise)
		j.init = make([]float32, n)
		for i := range n {
			lv := min(max(logvar[i], -30), 20)
			std := float32(math.Exp(float64(0.5 * lv)))
			j.init[i] = (mean[i] + float32(std*noise[i])) * ScaleFactor
		}
		if k := firstNonFinite(j.init); k >= 0 {
			return pipeline.StageStats{}, fmt.Errorf("init image: the encoded latent has a non-finite value at %d (%g)", k, j.init[k])
		}
		return pipeline.StageStats{Items: 1, Unit: "images"}, nil
	}
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
