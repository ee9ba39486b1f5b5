package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/vae"
)

func init() {
	register(&command{name: "vae", summary: "encode an image to latents or decode latents to a PNG (TAEF2 autoencoder)", run: runVAE})
}

const vaeUsage = `encode -m taef2_encoder.pth IMAGE -o LATENTS.f32    (also writes LATENTS.json)
       glassbox vae decode -m taef2_decoder.pth LATENTS.f32 [--shape 32,H,W] -o OUT.png [--tile PX]`

func runVAE(ctx context.Context, env *cmdEnv, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "encode":
			return vaeEncodeCmd(ctx, env, args[1:])
		case "decode":
			return vaeDecodeCmd(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(env.stderr, "Usage: glassbox vae %s\n\nRun 'glassbox vae encode -h' or 'glassbox vae decode -h' for flags.\n", vaeUsage)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return nil
	}
	return errUsage
}

func jobFlags(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
	IntVar(*int, string, int, string)
}, o *imageJobOpts) {
	fs.StringVar(&o.home, "home", "", "glassbox home for the journal and job files (default $GLASSBOX_HOME or ~/.glassbox)")
	fs.BoolVar(&o.noJournal, "no-journal", false, "do not record the job in the journal")
	fs.BoolVar(&o.json, "json", false, "print the job's events as JSON lines")
	fs.BoolVar(&o.verbose, "verbose", false, "print progress and the stage timeline on stderr")
	fs.IntVar(&o.threads, "threads", 0, "compute threads (0: one per physical core)")
}

// vaeEncodeParams is the request of a vae-encode job, as journaled.
type vaeEncodeParams = engimage.TAEF2EncodeRequest

func vaeEncodeCmd(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "vae encode", "-m taef2_encoder.pth IMAGE -o LATENTS.f32")
	var p vaeEncodeParams
	var o imageJobOpts
	fs.StringVar(&p.Model, "m", "", "encoder checkpoint (.pth)")
	fs.StringVar(&p.Out, "o", "", "output latents file (raw float32, [32][H/8][W/8])")
	budget := fs.String("mem-budget", "", "memory the encode may use, e.g. 2GiB (default: half the available RAM)")
	jobFlags(fs, &o)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || p.Model == "" || p.Out == "" {
		fs.Usage()
		return errUsage
	}
	if *budget != "" {
		if p.Budget, err = plan.ParseBytes(*budget); err != nil {
			return pipeline.Wrap(pipeline.StagePlan, err, "")
		}
	}
	p.Image, p.Threads = pos[0], o.threads
	res, err := runImageJob(ctx, env, &o, "vae-encode", p.Model, p, func(ctx context.Context, id, _ string) (any, error) {
		return engimage.TAEF2Encode(ctx, &p, resolveModel)
	})
	if err != nil || res == nil {
		return err
	}
	r := res.(engimage.TAEF2EncodeResult)
	if !o.json {
		fmt.Fprintf(env.stdout, "%s: latents [%d %d %d], described in %s\n", r.Out, r.Shape[0], r.Shape[1], r.Shape[2], vae.SidecarPath(r.Out))
	}
	return nil
}

// vaeDecodeParams is the request of a vae-decode job, as journaled; the
// job's copy of the latents (SavedLatents) is what glassbox decode JOB
// retries from.
type vaeDecodeParams = engimage.TAEF2DecodeRequest

func vaeDecodeCmd(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "vae decode", "-m taef2_decoder.pth LATENTS.f32 [--shape 32,H,W] -o OUT.png [--tile PX]")
	var p vaeDecodeParams
	var o imageJobOpts
	var shape, budget string
	fs.StringVar(&p.Model, "m", "", "decoder checkpoint (.pth)")
	fs.StringVar(&shape, "shape", "", "latent shape C,H,W (C = 32; the image is 8W×8H); default: from LATENTS.json beside the file")
	fs.StringVar(&p.Out, "o", "", "output PNG")
	fs.StringVar(&p.Raw, "raw", "", "also write the unclamped decoder output here (raw float32 [3][8H][8W])")
	fs.IntVar(&p.TilePX, "tile", 0, "decode in tiles of this many pixels (a multiple of 8; 0: untiled unless the memory budget needs tiles)")
	fs.IntVar(&p.OverlapPX, "overlap", 8*vae.DefaultOverlap, "pixels adjacent tiles share (a multiple of 8)")
	fs.StringVar(&budget, "mem-budget", "", "memory the decode may use, e.g. 2GiB (default: half the available RAM)")
	jobFlags(fs, &o)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || p.Model == "" || p.Out == "" {
		fs.Usage()
		return errUsage
	}
	p.Latents, p.Threads = pos[0], o.threads
	if shape == "" {
		info, err := vae.ReadLatentInfo(p.Latents)
		if err != nil {
			return pipeline.Wrap(pipeline.StageLoad, err, "give --shape 32,H,W")
		}
		p.Shape = [3]int{info.Shape[0], info.Shape[1], info.Shape[2]}
	} else if p.Shape, err = parseShape(shape); err != nil {
		return err
	}
	if budget != "" {
		if p.Budget, err = plan.ParseBytes(budget); err != nil {
			return pipeline.Wrap(pipeline.StagePlan, err, "")
		}
	}
	return runDecodeJob(ctx, env, &o, &p)
}

func runDecodeJob(ctx context.Context, env *cmdEnv, o *imageJobOpts, p *vaeDecodeParams) error {
	if p.TilePX%8 != 0 || p.OverlapPX%8 != 0 || p.TilePX < 0 || p.OverlapPX < 0 {
		return pipeline.Errorf(pipeline.StagePlan, "use multiples of 8", "--tile %d and --overlap %d must be non-negative multiples of 8 pixels", p.TilePX, p.OverlapPX)
	}
	res, err := runImageJob(ctx, env, o, "vae-decode", p.Model, p, func(ctx context.Context, id, dir string) (any, error) {
		return engimage.TAEF2Decode(ctx, id, dir, p, resolveModel)
	})
	if err != nil || res == nil {
		return err
	}
	r := res.(engimage.TAEF2DecodeResult)
	if !o.json {
		fmt.Fprintf(env.stdout, "%s: %dx%d PNG (%s)\n", r.Out, r.Width, r.Height, r.Plan)
	}
	return nil
}

func parseShape(s string) ([3]int, error) {
	var sh [3]int
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return sh, pipeline.Errorf(pipeline.StagePlan, "e.g. --shape 32,64,64", "--shape %q: want C,H,W", s)
	}
	for i, f := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return sh, pipeline.Errorf(pipeline.StagePlan, "", "--shape %q: %q is not a positive integer", s, f)
		}
		sh[i] = v
	}
	if sh[0] != vae.LatentChannels {
		return sh, pipeline.Errorf(pipeline.StagePlan, "TAEF2 latents have 32 channels", "--shape %q: %d channels", s, sh[0])
	}
	if sh[1] > 1<<14 || sh[2] > 1<<14 {
		return sh, pipeline.Errorf(pipeline.StagePlan, "", "--shape %q: at most 16384 latent pixels per side", s)
	}
	return sh, nil
}
