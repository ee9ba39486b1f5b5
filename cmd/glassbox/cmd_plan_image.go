package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/glassbox-ai/glassbox/checkpoint"
	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/plan"
)

// imagePlanFlags are plan's flags for a diffusion checkpoint.
type imagePlanFlags struct {
	width, height, steps, batch int
	sampler, scheduler          string
	cfg                         float32
	negative                    bool
}

func (f *imagePlanFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.width, "width", 0, "checkpoints: image width in pixels (default 512)")
	fs.IntVar(&f.height, "height", 0, "checkpoints: image height in pixels (default 512)")
	fs.IntVar(&f.steps, "steps", engimage.DefaultSteps, "checkpoints: sampling steps")
	fs.IntVar(&f.batch, "batch-count", 1, "checkpoints: images")
	fs.StringVar(&f.sampler, "sampler", string(engimage.DefaultSampler), "checkpoints: sampler")
	fs.StringVar(&f.scheduler, "scheduler", "", "checkpoints: scheduler (default: the sampler's)")
	f.cfg = engimage.DefaultCFG
	fs.Var(float32Flag{&f.cfg}, "cfg-scale", "checkpoints: guidance scale (1: one UNet call a step)")
}

// runImagePlan answers "can I make this image here, and how long will it
// take?" from the checkpoint's header and this machine's history.
func runImagePlan(env *cmdEnv, c *planConfig, dev *plan.Device) error {
	path, err := resolveModel(c.model)
	if err != nil {
		return err
	}
	m, err := engimage.OpenModel(path, "")
	if err != nil {
		return err
	}
	defer m.Close()
	f := c.image
	s, err := engimage.Resolve(engimage.Request{Model: path, Out: "plan.png", Width: f.width, Height: f.height, Steps: f.steps,
		Batch: f.batch, Sampler: f.sampler, Scheduler: f.scheduler, CFGScale: f.cfg, Threads: c.opts.Threads}, 0, 0)
	if err != nil {
		return err
	}
	var budget int64
	if c.budget != "" {
		if budget, err = plan.ParseBytes(c.budget); err != nil {
			return fmt.Errorf("plan: --mem-budget: %w", err)
		}
	}
	var obs []engimage.Observation
	if !c.noCalib {
		obs, _ = engimage.DefaultHistory().Load()
	}
	p, err := engimage.PlanJob(m.Components, s, dev, obs, budget)
	if err != nil {
		return err
	}
	admitErr := p.Admit()
	if c.json {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			return err
		}
		return admitErr
	}
	writeImagePlan(env, m.Components, s, p, admitErr == nil)
	return admitErr
}

func writeImagePlan(env *cmdEnv, comp *checkpoint.Components, s *engimage.Settings, p *engimage.Plan, fits bool) {
	w := env.stdout
	fmt.Fprintf(w, "checkpoint %s: %s\n", filepath.Base(s.Model), comp.Detection)
	fmt.Fprintf(w, "image %dx%d, %d steps of %s (%s), cfg %g: %d UNet calls an image\n", s.Width, s.Height, p.Steps, s.Method, s.Schedule, s.CFGScale, p.Calls)
	fmt.Fprintf(w, "memory:\n")
	row := func(name string, n int64, note string) {
		fmt.Fprintf(w, "  %-22s %10s  %s\n", name, plan.FormatBytes(n), note)
	}
	row("text encoder", p.TextBytes, comp.TextEncoder.DTypeList()+" weights, used in place")
	row("UNet", p.UNetBytes, comp.UNet.DTypeList()+" weights, convolutions packed as F16")
	row("VAE", p.VAEBytes, comp.VAE.DTypeList()+" weights, convolutions packed as F32")
	row("runtime", p.Runtime, "the process before any model")
	row("UNet call", p.UNetActivations, fmt.Sprintf("activations at %dx%d latent", s.LatentW(), s.LatentH()))
	tiles := "untiled"
	if p.DecodeTile > 0 {
		tiles = fmt.Sprintf("%d tiles of %d px", p.DecodeTiles, 8*p.DecodeTile)
	}
	row("VAE decode", p.DecodeBytes, tiles)
	verdict := "fits"
	if !fits {
		verdict = "does not fit"
	}
	corr := ""
	if p.MemoryRuns > 0 {
		corr = fmt.Sprintf(" (×%.2f from %d measured run(s))", p.MemoryFactor, p.MemoryRuns)
	}
	fmt.Fprintf(w, "  %-22s %10s  of %s available%s: %s\n", "peak", plan.FormatBytes(p.Total), plan.FormatBytes(p.Budget), corr, verdict)
	if p.SecPerStep > 0 {
		fmt.Fprintf(w, "time: %.2f s/step, %d steps ≈ %.0f s", p.SecPerStep, p.Steps, p.Seconds)
		if p.DecodeSeconds > 0 {
			fmt.Fprintf(w, " + decode %.1f s", p.DecodeSeconds)
		}
		fmt.Fprintf(w, " (%s)\n", p.Source)
	} else {
		fmt.Fprintf(w, "time: %s\n", p.Source)
	}
}
