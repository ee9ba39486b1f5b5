package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/glassbox-ai/glassbox/api"
	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/engine/video"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
)

func init() {
	register(&command{name: "video", summary: "make a video from a prompt with Wan 2.1 (DiT, umT5 and VAE files) into an MP4", run: runVideo})
}

const videoUsage = `--dit FILE --t5 FILE --vae FILE [--spiece FILE] -p TEXT [-n TEXT] [--frames N [--round-frames]] [-W W -H H]
       [--steps N] [--cfg-scale F] [--shift F] [--sampler unipc|euler] [-s SEED] [--rng cpu|cuda] [-o OUT.mp4]
       [--frames-dir DIR] [--json] [--verbose]`

// videoFlags registers the request's flags.
func videoFlags(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
	Int64Var(*int64, string, int64, string)
	Float64Var(*float64, string, float64, string)
}, r *video.Request, ids *[2]string) {
	fs.StringVar(&r.DiT, "dit", "", "the Wan 2.1 DiT (diffusion_models/wan2.1_t2v_*.safetensors; F32, F16, BF16)")
	fs.StringVar(&r.T5, "t5", "", "the umT5 text encoder (umt5_xxl_*.safetensors or Wan's .pth)")
	fs.StringVar(&r.VAE, "vae", "", "the Wan 2.1 VAE (wan_2.1_vae.safetensors, Wan2.1_VAE.pth)")
	fs.StringVar(&r.Spiece, "spiece", "", "umT5's SentencePiece model (default: the --t5 file's spiece_model tensor)")
	for _, a := range []struct {
		long, short, usage string
		p                  *string
	}{
		{"prompt", "p", "the prompt", &r.Prompt},
		{"negative-prompt", "n", "the negative prompt (default: Wan's)", &r.Negative},
		{"output", "o", "the MP4 to write (H.264, yuv420p, through ffmpeg)", &r.Out},
	} {
		def := ""
		if a.long == "output" {
			def = "output.mp4"
		}
		fs.StringVar(a.p, a.long, def, a.usage)
		fs.StringVar(a.p, a.short, def, "short for --"+a.long)
	}
	fs.StringVar(&ids[0], "prompt-ids", "", "the prompt as umT5 token ids, used as given (no EOS added)")
	fs.StringVar(&ids[1], "negative-prompt-ids", "", "the negative prompt as umT5 token ids, used as given")
	fs.StringVar(&r.FramesDir, "frames-dir", "", "also write the frames here as frame_000.png, ... (without ffmpeg: only these)")
	fs.IntVar(&r.Frames, "frames", 17, "video frames, 4n+1")
	fs.IntVar(&r.Width, "width", video.DefaultWidth, "width in pixels, a multiple of 16")
	fs.IntVar(&r.Width, "W", video.DefaultWidth, "short for --width")
	fs.IntVar(&r.Height, "height", video.DefaultHeight, "height in pixels, a multiple of 16")
	fs.IntVar(&r.Height, "H", video.DefaultHeight, "short for --height")
	fs.IntVar(&r.Steps, "steps", video.DefaultSteps, "sampling steps")
	fs.Float64Var(&r.Shift, "shift", video.DefaultShift, "the flow schedule's timestep shift")
	fs.StringVar(&r.Sampler, "sampler", video.DefaultSampler, "sampler: unipc (FlowUniPC, Wan's) or euler")
	fs.Int64Var(&r.Seed, "seed", 42, "seed of the noise's generator (< 0: random)")
	fs.StringVar(&r.RNG, "rng", video.DefaultRNG, "noise generator: cpu (torch's CPU generator, as Wan draws it) or cuda (Philox, torch's CUDA generator)")
	fs.Int64Var(&r.Seed, "s", 42, "short for --seed")
	fs.IntVar(&r.Heads, "heads", 0, "DiT attention heads (0: Wan's 128-wide heads)")
	fs.IntVar(&r.FPS, "fps", video.DefaultFPS, "frames per second of the MP4")
}

func runVideo(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "video", videoUsage)
	var r video.Request
	var ids [2]string
	var o imageJobOpts
	videoFlags(fs, &r, &ids)
	cfg := float64(video.DefaultCFG)
	fs.Float64Var(&cfg, "cfg-scale", cfg, "classifier-free guidance scale (1: no negative pass)")
	ffmpeg := fs.String("ffmpeg", "", "the ffmpeg executable (default: ffmpeg in PATH)")
	budget := fs.String("mem-budget", "", "memory the job may use, e.g. 6GiB (default: what the machine has available)")
	fs.BoolVar(&r.RoundFrames, "round-frames", false, "round --frames to the nearest 4n+1 (the larger on a tie) with a warning, instead of refusing it")
	jobFlags(fs, &o)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || r.DiT == "" || r.T5 == "" || r.VAE == "" || (r.Prompt == "" && ids[0] == "") {
		fs.Usage()
		return errUsage
	}
	if cfg > math.MaxFloat32 || cfg < 0 {
		return fmt.Errorf("plan: --cfg-scale %g: want a finite number ≥ 0", cfg)
	}
	r.CFGScale = float32(cfg)
	for i, p := range []*[]int32{&r.PromptIDs, &r.NegativeIDs} {
		if ids[i] == "" {
			continue
		}
		v, err := parseIDs(ids[i])
		if err != nil {
			return err
		}
		for _, id := range v {
			if id > math.MaxInt32 {
				return fmt.Errorf("encode: token id %d is too large", id)
			}
			*p = append(*p, int32(id))
		}
	}
	// Journaled absolute, so glassbox decode JOB finds them from anywhere.
	for _, p := range []*string{&r.DiT, &r.T5, &r.VAE, &r.Spiece, &r.Out, &r.FramesDir} {
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	r.Threads = o.threads
	r.Seed = engimage.ResolveSeed(r.Seed) // journaled as used
	if *budget != "" {
		if r.Budget, err = plan.ParseBytes(*budget); err != nil {
			return fmt.Errorf("plan: --mem-budget: %w", err)
		}
	}
	res, err := runImageJob(ctx, env, &o, "video", r.DiT, r, func(ctx context.Context, id, dir string) (any, error) {
		return (&video.Engine{FFmpeg: *ffmpeg}).Run(ctx, r, id, dir)
	})
	if err != nil || res == nil {
		return err
	}
	if !o.json {
		printVideo(env, res.(*video.Result))
	}
	return nil
}

func printVideo(env *cmdEnv, v *video.Result) {
	out := v.Video
	if out == "" {
		out = "(no MP4)"
	}
	fmt.Fprintf(env.stdout, "%s: %d frames, seed %d (latents %s)\n", out, v.Frames, v.Seed, v.Latents)
	if v.FramesDir != "" {
		fmt.Fprintf(env.stdout, "frames: %s\n", v.FramesDir)
	}
}

// kindVideoDecode is the job kind of glassbox decode on a video job.
const kindVideoDecode = "video-decode"

// videoDecodeParams is a video-decode job's request, as journaled.
type videoDecodeParams struct {
	video.Request
	RetryOf string `json:"retry_of"`
	Latents string `json:"latents"`
}

// redecodeVideo decodes a video job's saved latent again as a new job.
func redecodeVideo(ctx context.Context, env *cmdEnv, o *imageJobOpts, job api.Job, home, out, vaeFile string) error {
	var p videoDecodeParams
	if err := json.Unmarshal(job.Params, &p); err != nil {
		return pipeline.Errorf(pipeline.StagePlan, "", "job %s: parameters: %w", job.ID, err)
	}
	// A job of glassbox serve journals the engine's request beside its
	// own; its MP4 goes in the job's folder.
	var served struct {
		Engine *video.Request `json:"engine"`
	}
	if job.Kind == "video" && json.Unmarshal(job.Params, &served) == nil && served.Engine != nil {
		p.Request = *served.Engine
		p.Out = filepath.Join(home, "jobs", job.ID, "video.mp4")
	}
	if job.Kind == "video" {
		p.RetryOf, p.Latents = job.ID, video.LatentsPath(filepath.Join(home, "jobs", job.ID))
	}
	if _, err := os.Stat(p.Latents); err != nil {
		return pipeline.Errorf(pipeline.StageLoad, "the job did not finish sampling; run it again", "job %s saved no latent: %w", p.RetryOf, err)
	}
	if out != "" {
		p.Out = out
	}
	if vaeFile != "" {
		p.VAE = vaeFile
	}
	if o.threads != 0 {
		p.Threads = o.threads
	}
	if !o.json {
		fmt.Fprintf(env.stderr, "decoding the latent of job %s (%s, state %s)\n", p.RetryOf, filepath.Base(job.Model), job.State)
	}
	res, err := runImageJob(ctx, env, o, kindVideoDecode, p.DiT, p, func(ctx context.Context, id, _ string) (any, error) {
		return (&video.Engine{}).Decode(ctx, p.Request, p.Latents, id)
	})
	if err != nil || res == nil {
		return err
	}
	if !o.json {
		printVideo(env, res.(*video.Result))
	}
	return nil
}
