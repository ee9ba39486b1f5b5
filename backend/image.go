package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // init images may be JPEG
	_ "image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sched"
	"github.com/glassbox-ai/glassbox/server"
)

// Image jobs (server.ImageBackend). An SD 1.x checkpoint is a model like
// any other: a file given to serve (--model FILE.safetensors) or a store
// entry whose file is a checkpoint, named as the store names files (its
// base name). engine/image runs the job; the backend adds what serving
// needs:
//
//   - the residency: the checkpoint's three networks stay loaded between
//     jobs in the same sched.Residency the text models live in, under the
//     model's name, counted with their weights (the plan's TextBytes,
//     UNetBytes and VAEBytes; the bound networks' own count once loaded)
//     and kept for the keep-alive like a text model: the first job binds
//     them in its load stage (an engimage.Loaded), the later ones find
//     them resident and read nothing, one job at a time on a model.
//     Beside it each job leases its working memory (activations and the
//     decode, the plan's total less the weights and plan.Runtime) under a
//     key of its own dropped when the job ends. So an image job evicts
//     idle models to make room, waits while running ones hold the memory
//     it needs, and a model that would not fit next to a running image
//     job waits in turn; an idle image model is evicted like a text one.
//   - the files: the job's folder is <home>/jobs/<id> (as glassbox image
//     keeps it): its latents, then image.png, image-2.png, … for a batch;
//     ImageFile finds them from the id alone, so they are served after a
//     restart too.
//   - a preview every step (the server's streams thin them per client).

// imageFiles are the checkpoint extensions a model's file is read as an
// image model by.
var imageFiles = []string{".safetensors", ".ckpt", ".pt", ".pth"}

// isCheckpoint reports whether path is a diffusion checkpoint by its name.
func isCheckpoint(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	for _, e := range imageFiles {
		if ext == e {
			return true
		}
	}
	return false
}

// jobsDir is the folder of the jobs' folders.
func (b *Backend) jobsDir() string {
	if b.cfg.JobsDir != "" {
		return b.cfg.JobsDir
	}
	return filepath.Join(home.Home(), "jobs")
}

// imageModel resolves a request's model to its checkpoint.
func (b *Backend) imageModel(name string) (string, string, error) {
	name, path, err := b.lookup(name)
	if err != nil {
		return "", "", err
	}
	if !isCheckpoint(path) {
		return "", "", server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "GET /v1/models lists the image models as family sd1",
			"model %q is not an image model (%s is not a .safetensors or .ckpt checkpoint)", name, filepath.Base(path)))
	}
	return name, path, nil
}

// imageRequest is req as engine/image takes it, its output in dir.
func imageRequest(req *server.ImageRequest, path, dir string) engimage.Request {
	r := engimage.Request{Model: path, Prompt: req.Prompt, Negative: req.Negative, Steps: req.Steps, CFGScale: req.CFGScale,
		Sampler: req.Sampler, Scheduler: req.Scheduler, Seed: req.Seed, Width: req.Width, Height: req.Height,
		Strength: req.Strength, RNG: req.RNG, ClipSkip: req.ClipSkip, Batch: req.N, Out: filepath.Join(dir, "image.png")}
	if r.Steps == 0 {
		r.Steps = engimage.DefaultSteps
	}
	if len(req.InitImage) > 0 {
		r.InitImage = filepath.Join(dir, "init-image")
	}
	return r
}

// initSize reads an init image's size from its header.
func initSize(b []byte) (int, int, error) {
	if len(b) == 0 {
		return 0, 0, nil
	}
	c, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return 0, 0, server.BadRequest(pipeline.Errorf(pipeline.StagePlan, "send a PNG or JPEG", "init image (%d bytes): %w", len(b), err))
	}
	return c.Width, c.Height, nil
}

// CheckImage resolves req's model and settings (its seed too, so the job's
// params record the seed used) without loading anything.
func (b *Backend) CheckImage(ctx context.Context, req *server.ImageRequest) error {
	_, path, err := b.imageModel(req.Model)
	if err != nil {
		return err
	}
	iw, ih, err := initSize(req.InitImage)
	if err != nil {
		return err
	}
	req.Seed = engimage.ResolveSeed(req.Seed)
	r := imageRequest(req, path, b.jobsDir())
	if _, err := engimage.Resolve(r, iw, ih); err != nil {
		return err
	}
	// The journal's copy: the output and the init image are named in the
	// job's folder, which has no id yet (glassbox decode JOB puts them
	// there).
	r.Out = ""
	if r.InitImage != "" {
		r.InitImage = "init-image"
	}
	if req.Engine, err = json.Marshal(r); err != nil {
		return pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	return nil
}

// GenerateImage runs req as job.
func (b *Backend) GenerateImage(ctx context.Context, job string, req *server.ImageRequest) (*server.ImageResult, error) {
	name, path, err := b.imageModel(req.Model)
	if err != nil {
		return nil, err
	}
	dir, err := b.jobFolder(job)
	if err != nil {
		return nil, err
	}
	iw, ih, err := initSize(req.InitImage)
	if err != nil {
		return nil, err
	}
	r := imageRequest(req, path, dir)
	r.Seed = engimage.ResolveSeed(r.Seed)
	r.Budget = b.budget
	if r.InitImage != "" {
		if err := os.WriteFile(r.InitImage, req.InitImage, 0o600); err != nil {
			return nil, pipeline.Wrap(pipeline.StagePlan, fmt.Errorf("init image: %w", err), "")
		}
	}
	s, err := engimage.Resolve(r, iw, ih)
	if err != nil {
		return nil, err
	}
	dev := b.device()
	lease, work, err := b.reserveImage(ctx, name, job, s, dev)
	if err != nil {
		return nil, err
	}
	eng := &engimage.Engine{Device: dev, PreviewEvery: time.Nanosecond}
	if lease != nil {
		defer lease.Release()
		defer work.Release()
		loaded := lease.Value().image
		eng.Resident = loaded
		if w := loaded.WeightBytes(); w > 0 {
			// Its weights are in memory already, held by this lease: the
			// job's plan counts them as available.
			eng.Device = b.device().WithReclaimable(w)
		}
	}
	res, err := eng.Run(ctx, s, job, dir)
	if lease != nil {
		if w := lease.Value().image.WeightBytes(); w > 0 {
			lease.Resize(w, "the bound networks' weights")
			if b.metrics != nil {
				b.metrics.SetModelResident(imageKey(name, s), w)
			}
		} else {
			// Nothing was bound (the job failed before or in its load): the
			// model is not kept counted with weights it does not hold.
			b.res.Unload(imageKey(name, s))
		}
	}
	if err != nil {
		return nil, err
	}
	sha, _ := engimage.FileSHA256(path) // hashed by the load: cached
	out := &server.ImageResult{Settings: server.ImageSettings{Model: name, Prompt: s.Prompt, Negative: s.Negative,
		Width: s.Width, Height: s.Height, Steps: s.Steps, CFGScale: s.CFGScale, Sampler: string(s.Method),
		Scheduler: string(s.Schedule), Seed: s.Seed, N: s.Batch, ClipSkip: s.ClipSkip, RNG: s.RNG, Strength: s.Strength}}
	if len(sha) >= 10 {
		out.Settings.ModelHash = sha[:10]
	}
	for i, im := range res.Images {
		out.Images = append(out.Images, server.ImageOutput{Index: i, Seed: im.Seed,
			URL: "/v1/jobs/" + job + "/images/" + strconv.Itoa(i), Infotext: engimage.Infotext(s, im.Seed, sha, "")})
	}
	return out, nil
}

// imageKey is the residency's name for the image model name with the
// job's VAE.
func imageKey(name string, s *engimage.Settings) string {
	if s.VAE != "" {
		return name + " (VAE " + filepath.Base(s.VAE) + ")"
	}
	return name
}

// reserveImage makes the image model resident (an empty engimage.Loaded
// the job's load stage fills, counted with the plan's weights until then)
// and leases the job's working memory beside it: idle models are evicted
// to make room, running ones waited for; a job the budget cannot hold
// fails in stage plan. It returns no leases when the plan cannot be made
// (the job's own plan stage then reports why, loading afresh).
func (b *Backend) reserveImage(ctx context.Context, name, job string, s *engimage.Settings, dev *plan.Device) (model, work *sched.Lease[*served], err error) {
	m, err := engimage.OpenModel(s.Model, s.VAE)
	if err != nil {
		return nil, nil, nil
	}
	obs, _ := engimage.DefaultHistory().Load()
	p, err := engimage.PlanJob(m.Components, s, dev, obs, s.Budget)
	m.Close()
	if err != nil || p.Admit() != nil {
		return nil, nil, nil
	}
	weights := p.TextBytes + p.UNetBytes + p.VAEBytes
	scratch := max(p.Total-p.Runtime-weights, 0)
	key := imageKey(name, s)
	if bud := b.res.Budget(); bud > 0 && weights+scratch > bud {
		return nil, nil, pipeline.Errorf(pipeline.StagePlan, "raise the memory budget or make a smaller image",
			"%s needs %s (%s of weights, %s to work in), more than the memory budget of %s", name,
			plan.FormatBytes(weights+scratch), plan.FormatBytes(weights), plan.FormatBytes(scratch), plan.FormatBytes(bud)).
			With("needed_bytes", weights+scratch).With("budget_bytes", bud)
	}
	// One image job at a time takes its two leases, so no two jobs each
	// hold a model and wait for the memory the other holds.
	b.imageMu.Lock()
	defer b.imageMu.Unlock()
	// The job's own load stage says whether it read the weights or found
	// them resident; the residency's "model already resident" is left out.
	tr := pipeline.TraceFrom(ctx)
	actx := pipeline.OnlyTrace(ctx, &pipeline.Trace{Warning: func(code, msg string) { tr.OnWarning(code, msg) }})
	model, err = b.res.Acquire(actx, sched.Request[*served]{Model: key, Bytes: weights, Placement: "cpu",
		Load: func(context.Context) (*served, int64, error) {
			return &served{image: engimage.NewLoaded(s.Model, s.VAE)}, weights, nil
		}})
	if err != nil {
		return nil, nil, err
	}
	work, err = b.res.Acquire(actx, sched.Request[*served]{Model: "image " + name + " (job " + job + ")", Bytes: scratch,
		Placement: "cpu", KeepAlive: sched.Keep(0),
		Load: func(context.Context) (*served, int64, error) { return &served{}, scratch, nil }})
	if err != nil {
		model.Release()
		return nil, nil, err
	}
	if b.metrics != nil {
		b.metrics.SetModelResident(key, max(model.Value().image.WeightBytes(), weights))
	}
	return model, work, nil
}

// validJobID reports whether id is a job id as pipeline makes them (base
// 36), so it names a folder under the jobs folder and nothing else.
func validJobID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ImageFile is the path of image n of job.
func (b *Backend) ImageFile(job string, n int) (string, error) {
	if !validJobID(job) || n < 0 {
		return "", fmt.Errorf("deliver: job %q image %d: %w", job, n, server.ErrJobNotFound)
	}
	p := engimage.OutPath(filepath.Join(b.jobsDir(), job, "image.png"), n)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("deliver: job %s has no image %d: %w", job, n, server.ErrJobNotFound)
	}
	return p, nil
}

// checkpointInfos caches what a checkpoint's header says (family,
// parameters, types), by path and modification time.
var checkpointInfos sync.Map

// checkpointInfo describes an image model.
func (b *Backend) checkpointInfo(name, path string, st os.FileInfo) (*server.ModelInfo, error) {
	key := fmt.Sprintf("%s@%d@%d", path, st.Size(), st.ModTime().UnixNano())
	mi := server.ModelInfo{Name: name, Path: path, Size: st.Size(), Modified: st.ModTime().UTC(), Family: "sd1"}
	if v, ok := checkpointInfos.Load(key); ok {
		v := v.([3]string)
		mi.Family, mi.ParameterSize, mi.Quantization = v[0], v[1], v[2]
		return &mi, nil
	}
	m, err := engimage.OpenModel(path, "")
	if err != nil {
		// Not an SD 1.x checkpoint: perhaps one of a video job's files.
		vi, verr := videoFileInfo(path)
		if verr != nil {
			return nil, err
		}
		mi.Family, mi.ParameterSize, mi.Quantization = vi[0], vi[1], vi[2]
		checkpointInfos.Store(key, vi)
		return &mi, nil
	}
	defer m.Close()
	c := m.Components
	mi.ParameterSize = humanParams(c.TextEncoder.Params + c.UNet.Params + c.VAE.Params)
	mi.Quantization = c.UNet.DTypeList()
	checkpointInfos.Store(key, [3]string{mi.Family, mi.ParameterSize, mi.Quantization})
	return &mi, nil
}

func humanParams(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	}
	return strconv.FormatInt(n, 10)
}

// jobFolder makes job's folder under the jobs directory (its files: latents,
// outputs) and returns its path; a job id that is not one of ours is refused.
func (b *Backend) jobFolder(job string) (string, error) {
	if !validJobID(job) {
		return "", fmt.Errorf("deliver: job id %q: %w", job, server.ErrJobNotFound)
	}
	dir := filepath.Join(b.jobsDir(), job)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", pipeline.Wrap(pipeline.StagePlan, fmt.Errorf("the job's folder: %w", err), "")
	}
	return dir, nil
}
