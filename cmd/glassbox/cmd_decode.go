package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
)

func init() {
	register(&command{name: "decode", summary: "retry the decode stage of an image or video job from its saved latents", run: runDecode})
}

// runDecode re-runs a vae-decode job from the latents it saved before
// decoding, as a new job; flags override the tiling, budget and output.
func runDecode(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "decode", "JOB [-o OUT.png] [--vae FILE] [--tile PX] [--mem-budget SIZE]")
	var o imageJobOpts
	out := fs.String("o", "", "output PNG or MP4 (default: the job's)")
	tile := fs.Int("tile", -1, "tile size in pixels (default: the job's)")
	budget := fs.String("mem-budget", "", "memory budget (default: the job's)")
	vaeFile := fs.String("vae", "", "image and video jobs: decode with this VAE file instead of the job's")
	jobFlags(fs, &o)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	id := pos[0]
	dir := o.home
	if dir == "" {
		dir = home.Home()
	}
	jr, err := openJournalRO(dir)
	if err != nil {
		return err
	}
	job, err := jr.Job(id)
	jr.Close()
	if err != nil {
		return err
	}
	if job.Kind == "image" || job.Kind == kindImageDecode {
		return redecodeImage(ctx, env, &o, job, dir, *out, *vaeFile)
	}
	if job.Kind == "video" || job.Kind == kindVideoDecode {
		return redecodeVideo(ctx, env, &o, job, dir, *out, *vaeFile)
	}
	if job.Kind != "vae-decode" {
		return pipeline.Errorf(pipeline.StagePlan, "", "job %s is a %q job; only image, video and vae-decode jobs can be retried with decode", id, job.Kind)
	}
	var p vaeDecodeParams
	if err := json.Unmarshal(job.Params, &p); err != nil {
		return pipeline.Errorf(pipeline.StagePlan, "", "job %s: parameters: %w", id, err)
	}
	p.SavedLatents = filepath.Join(dir, "jobs", id, "latents.f32")
	if _, err := os.Stat(p.SavedLatents); err != nil {
		return pipeline.Errorf(pipeline.StageLoad, "the job did not reach its decode stage; run it again",
			"job %s saved no latents: %w", id, err)
	}
	p.RetryOf = id
	if *out != "" {
		p.Out = *out
	}
	if *tile >= 0 {
		p.TilePX = *tile
	}
	if *budget != "" {
		if p.Budget, err = plan.ParseBytes(*budget); err != nil {
			return pipeline.Wrap(pipeline.StagePlan, err, "")
		}
	}
	if o.threads != 0 {
		p.Threads = o.threads
	}
	if !o.json {
		fmt.Fprintf(env.stderr, "retrying the decode of job %s (%s, state %s)\n", id, job.Model, job.State)
	}
	return runDecodeJob(ctx, env, &o, &p)
}
