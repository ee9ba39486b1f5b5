package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/glassbox-ai/glassbox/api"
	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// kindImageDecode is the kind of a job that re-decodes an image job.
const kindImageDecode = "image-decode"

// imageDecodeParams is an image-decode job's request, as journaled.
type imageDecodeParams struct {
	engimage.Request
	RetryOf string   `json:"retry_of"` // the image job whose latents these are
	Latents []string `json:"latents"`
}

// redecodeImage decodes the latents an image job saved (or, for an
// image-decode job, the latents it decoded) as a new job: the decode and
// deliver stages again, with another VAE and output if asked.
func redecodeImage(ctx context.Context, env *cmdEnv, o *imageJobOpts, job api.Job, home, out, vaeFile string) error {
	var p imageDecodeParams
	if err := json.Unmarshal(job.Params, &p); err != nil {
		return pipeline.Errorf(pipeline.StagePlan, "", "job %s: parameters: %w", job.ID, err)
	}
	// A job of glassbox serve journals the engine's request beside its
	// own; its images go in the job's folder.
	var served struct {
		Engine *engimage.Request `json:"engine"`
	}
	if job.Kind == "image" && json.Unmarshal(job.Params, &served) == nil && served.Engine != nil {
		p.Request = *served.Engine
		dir := filepath.Join(home, "jobs", job.ID)
		p.Out = filepath.Join(dir, "image.png")
		if p.InitImage != "" {
			p.InitImage = filepath.Join(dir, p.InitImage)
		}
	}
	if job.Kind == "image" {
		p.RetryOf, p.Latents = job.ID, nil
		batch := max(p.Batch, 1)
		for b := range batch {
			p.Latents = append(p.Latents, engimage.LatentsPath(filepath.Join(home, "jobs", job.ID), b))
		}
	}
	for _, l := range p.Latents {
		if _, err := os.Stat(l); err != nil {
			return pipeline.Errorf(pipeline.StageLoad, "the job did not finish sampling; run it again",
				"job %s saved no latents: %w", p.RetryOf, err)
		}
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
	p.Batch = len(p.Latents)
	if !o.json {
		fmt.Fprintf(env.stderr, "decoding the latents of job %s (%s, state %s)\n", p.RetryOf, filepath.Base(job.Model), job.State)
	}
	res, err := runImageJob(ctx, env, o, kindImageDecode, p.Model, p, func(ctx context.Context, id, _ string) (any, error) {
		iw, ih := 0, 0
		if p.InitImage != "" {
			iw, ih = p.Width, p.Height // the image was read by the job; its size is the job's
		}
		s, err := engimage.Resolve(p.Request, iw, ih)
		if err != nil {
			return nil, err
		}
		return (&engimage.Engine{}).Decode(ctx, s, id, p.RetryOf, p.Latents)
	})
	if err != nil || res == nil {
		return err
	}
	if !o.json {
		printImages(env, res.(*engimage.Result))
	}
	return nil
}
