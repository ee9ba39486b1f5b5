package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/glassbox-ai/glassbox/checkpoint"
	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/engine/video"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sched"
	"github.com/glassbox-ai/glassbox/server"
)

// Video jobs (server.VideoBackend): Wan 2.1 text-to-video over
// engine/video. The DiT, the VAE and the umT5 text encoder are each a
// model as the backend names them: a file given to serve (--model
// FILE.safetensors, named by its base name) or a store entry. The engine
// runs the job's stages (plan, load, encode, generate with a part and a
// progress event every step, decode, deliver through ffmpeg); the backend
// adds what serving needs:
//
//   - the memory: each job leases its plan's total (the three networks,
//     which it loads itself, and its activations) in the residency the
//     text and image models live in, as `video MODEL (job ID)`, dropped
//     when the job ends; so a video job evicts idle models to make room,
//     waits while running ones hold what it needs, and one the budget
//     cannot hold fails in stage plan with the numbers.
//   - the files: the job's folder is <home>/jobs/<id>: latents.f32 (and
//     its JSON), then video.mp4; VideoFile finds it from the id alone, so
//     it is served after a restart too.

// videoFileInfo is the family (server.FamilyWan, FamilyWanVAE or
// FamilyTextEncoder), parameter count and element types of a
// file that is one of a video job's (by its tensors' names and shapes,
// checkpoint.Detect), or an error when it is not.
func videoFileInfo(path string) ([3]string, error) {
	f, err := checkpoint.Open(path)
	if err != nil {
		return [3]string{}, err
	}
	defer f.Close()
	d := checkpoint.Detect(f)
	var fam string
	switch d.Family {
	case checkpoint.Wan:
		fam = server.FamilyWan
	case checkpoint.WanVAE:
		fam = server.FamilyWanVAE
	case checkpoint.TextEncoder:
		fam = server.FamilyTextEncoder
	default:
		return [3]string{}, fmt.Errorf("%s is %s, not a file of a video job", filepath.Base(path), d)
	}
	st := checkpoint.StatsOf(f)
	return [3]string{fam, humanParams(st.Params), st.DTypeList()}, nil
}

// videoOut is the MP4's name in the job's folder.
const videoOut = "video.mp4"

// videoModel resolves one of a video request's models to its file.
func (b *Backend) videoModel(field, name string) (string, string, error) {
	name, path, err := b.lookup(name)
	if err != nil {
		return "", "", err
	}
	if !isCheckpoint(path) {
		return "", "", server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "give the Wan 2.1 files as .safetensors (or .pth) models",
			"%s %q is not a Wan 2.1 file (%s is not a .safetensors or .pth file)", field, name, filepath.Base(path)))
	}
	return name, path, nil
}

// videoModels are a request's DiT, VAE and umT5: names and paths.
type videoModels struct{ dit, vae, t5, ditPath, vaePath, t5Path string }

func (b *Backend) videoModels(req *server.VideoRequest) (*videoModels, error) {
	var m videoModels
	var err error
	if m.dit, m.ditPath, err = b.videoModel("model", req.Model); err != nil {
		return nil, err
	}
	if m.vae, m.vaePath, err = b.videoModel("vae", req.VAE); err != nil {
		return nil, err
	}
	if m.t5, m.t5Path, err = b.videoModel("text_encoder", req.TextEncoder); err != nil {
		return nil, err
	}
	return &m, nil
}

// videoRequest is req as engine/video takes it, its MP4 in dir.
func videoRequest(req *server.VideoRequest, m *videoModels, dir string) video.Request {
	return video.Request{DiT: m.ditPath, T5: m.t5Path, VAE: m.vaePath, Prompt: req.Prompt, Negative: req.Negative,
		PromptIDs: req.PromptIDs, NegativeIDs: req.NegativeIDs, Frames: req.Frames, RoundFrames: req.RoundFrames, Width: req.Width, Height: req.Height,
		Steps: req.Steps, CFGScale: req.CFGScale, Shift: req.Shift, Sampler: req.Sampler, Seed: req.Seed, RNG: req.RNG,
		Heads: req.Heads, FPS: req.FPS, Out: filepath.Join(dir, videoOut)}
}

// CheckVideo resolves req's models and settings (its seed too, so the
// job's params record the seed used) without loading anything.
func (b *Backend) CheckVideo(ctx context.Context, req *server.VideoRequest) error {
	m, err := b.videoModels(req)
	if err != nil {
		return err
	}
	req.Seed = engimage.ResolveSeed(req.Seed)
	r := videoRequest(req, m, b.jobsDir())
	if _, err := r.Check(); err != nil {
		return server.BadRequest(err)
	}
	// The files' headers: a file in the wrong place, ids outside the
	// vocabulary or a prompt with no tokenizer is answered now, not after
	// the job's turn in the queue.
	if err := r.CheckFiles(); err != nil {
		return server.BadRequest(err)
	}
	if _, err := video.FindFFmpeg(""); err != nil {
		return &server.Error{Status: http.StatusNotImplemented, Stage: string(pipeline.StageDeliver), Code: "no_ffmpeg",
			Message: err.Error(), Hint: "install ffmpeg on the server (Debian: apt-get install ffmpeg)", Err: err}
	}
	// The journal's copy: the MP4 is named in the job's folder, which has
	// no id yet (glassbox decode JOB puts it there).
	r.Out = ""
	if req.Engine, err = json.Marshal(r); err != nil {
		return pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	return nil
}

// GenerateVideo runs req as job.
func (b *Backend) GenerateVideo(ctx context.Context, job string, req *server.VideoRequest) (*server.VideoResult, error) {
	m, err := b.videoModels(req)
	if err != nil {
		return nil, err
	}
	dir, err := b.jobFolder(job)
	if err != nil {
		return nil, err
	}
	r := videoRequest(req, m, dir)
	r.Seed = engimage.ResolveSeed(r.Seed)
	r.Budget = b.budget
	lat, err := r.Check()
	if err != nil {
		return nil, server.BadRequest(err)
	}
	dev := b.device()
	// A plan that cannot be made leases nothing: the job's own plan
	// stage reports why.
	if p, perr := video.PlanJob(&r, lat, dev); perr == nil {
		work, err := b.reserveVideo(ctx, m.dit, job, p)
		if err != nil {
			return nil, err
		}
		defer work.Release()
	}
	res, err := (&video.Engine{Device: dev}).Run(ctx, r, job, dir)
	if err != nil {
		return nil, err
	}
	if res.Video == "" {
		return nil, pipeline.Errorf(pipeline.StageDeliver, "install ffmpeg on the server", "job %s made no MP4", job)
	}
	return &server.VideoResult{URL: "/v1/jobs/" + job + "/video", Frames: res.Frames, Seed: res.Seed,
		Timesteps: res.Timesteps, Warnings: res.Warnings,
		Settings: server.VideoSettings{Model: m.dit, VAE: m.vae, TextEncoder: m.t5, Prompt: r.Prompt, Negative: r.Negative,
			Frames: r.Frames, Width: r.Width, Height: r.Height, Steps: r.Steps, Shift: r.Shift, CFGScale: r.CFGScale,
			Sampler: r.Sampler, Seed: r.Seed, RNG: r.RNG, Heads: r.Heads, FPS: r.FPS}}, nil
}

// reserveVideo leases the job's memory (its plan's total) in the
// residency: idle models are evicted to make room, running ones waited
// for; a job the budget cannot hold fails in stage plan.
func (b *Backend) reserveVideo(ctx context.Context, name, job string, p *video.Plan) (*sched.Lease[*served], error) {
	if bud := b.res.Budget(); bud > 0 && p.Total > bud {
		return nil, pipeline.Errorf(pipeline.StagePlan, "raise the memory budget or make a shorter or smaller video",
			"the video job on %s needs %s (%s of weights), more than the memory budget of %s", name,
			plan.FormatBytes(p.Total), plan.FormatBytes(p.T5Bytes+p.DiTBytes+p.VAEBytes), plan.FormatBytes(bud)).
			With("needed_bytes", p.Total).With("budget_bytes", bud)
	}
	// The residency's own "model already resident" is left out; its
	// warnings (waiting for memory, evictions) are the job's.
	tr := pipeline.TraceFrom(ctx)
	actx := pipeline.OnlyTrace(ctx, &pipeline.Trace{Warning: func(code, msg string) { tr.OnWarning(code, msg) }})
	return b.res.Acquire(actx, sched.Request[*served]{Model: "video " + name + " (job " + job + ")", Bytes: p.Total,
		Placement: "cpu", KeepAlive: sched.Keep(0),
		Load: func(context.Context) (*served, int64, error) { return &served{}, p.Total, nil }})
}

// VideoFile is the path of job's MP4.
func (b *Backend) VideoFile(job string) (string, error) {
	if !validJobID(job) {
		return "", fmt.Errorf("deliver: job %q: %w", job, server.ErrJobNotFound)
	}
	p := filepath.Join(b.jobsDir(), job, videoOut)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("deliver: job %s has no video: %w", job, server.ErrJobNotFound)
	}
	return p, nil
}
