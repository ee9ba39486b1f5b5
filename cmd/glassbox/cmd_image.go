package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/plan"
)

func init() {
	register(&command{name: "image", summary: "make an image from a prompt with a Stable Diffusion 1.x checkpoint", run: runImage})
}

const imageUsage = `-m MODEL -p TEXT [-n TEXT] [--steps N] [--cfg-scale F] [--sampler NAME] [--scheduler NAME] [-s SEED]
       [-W W -H H] [-i INIT.png --strength F] [--rng cuda|cpu] [--clip-skip N] [--batch-count N]
       [--vae FILE] [--save-latents FILE] [-o OUT.png] [--json] [--verbose]`

// float32Flag is a flag.Value for a float32 setting.
type float32Flag struct{ p *float32 }

func (f float32Flag) String() string {
	if f.p == nil || *f.p == 0 {
		return "" // flag prints no default for a zero
	}
	return strconv.FormatFloat(float64(*f.p), 'g', -1, 32)
}

func (f float32Flag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		return err
	}
	*f.p = float32(v)
	return nil
}

// imageFlags registers the request's flags, with stable-diffusion.cpp's
// short spellings as aliases.
func imageFlags(fs *flag.FlagSet, r *engimage.Request) {
	alias := func(long, short, value, usage string, p *string) {
		fs.StringVar(p, long, value, usage)
		if short != "" {
			fs.StringVar(p, short, value, "short for --"+long)
		}
	}
	alias("model", "m", "", "SD 1.x checkpoint (.safetensors, .ckpt) or a store name", &r.Model)
	alias("prompt", "p", "", "the prompt (A1111 emphasis: (word), (word:1.3), [word], BREAK)", &r.Prompt)
	alias("negative-prompt", "n", "", "the negative prompt", &r.Negative)
	alias("init-img", "i", "", "img2img: the init image (PNG or JPEG of the output's size)", &r.InitImage)
	alias("output", "o", "output.png", "the PNG to write (a batch: OUT-2.png, ...)", &r.Out)
	fs.StringVar(&r.VAE, "vae", "", "a VAE file replacing the checkpoint's")
	fs.StringVar(&r.SaveLatents, "save-latents", "", "also write the final latent here (raw float32 [4][H/8][W/8]) with its JSON")
	fs.IntVar(&r.Steps, "steps", engimage.DefaultSteps, "sampling steps")
	r.CFGScale = engimage.DefaultCFG
	fs.Var(float32Flag{&r.CFGScale}, "cfg-scale", "classifier-free guidance scale (1: no negative pass)")
	names := func(n int, f func(int) string) string {
		var s []string
		for i := range n {
			s = append(s, f(i))
		}
		return strings.Join(s, ", ")
	}
	fs.StringVar(&r.Sampler, "sampler", string(engimage.DefaultSampler), "sampler: "+names(len(diffusion.Methods), func(i int) string { return string(diffusion.Methods[i]) }))
	fs.StringVar(&r.Sampler, "sampling-method", string(engimage.DefaultSampler), "stable-diffusion.cpp's name for --sampler")
	fs.StringVar(&r.Scheduler, "scheduler", "", "scheduler: "+names(len(diffusion.Schedulers), func(i int) string { return string(diffusion.Schedulers[i]) })+" (default: the sampler's)")
	fs.Int64Var(&r.Seed, "seed", 42, "the first image's seed (< 0: random)")
	fs.Int64Var(&r.Seed, "s", 42, "short for --seed")
	fs.IntVar(&r.Width, "width", 0, "width in pixels, a multiple of 64 (default: the init image's, else 512)")
	fs.IntVar(&r.Width, "W", 0, "short for --width")
	fs.IntVar(&r.Height, "height", 0, "height in pixels, a multiple of 64")
	fs.IntVar(&r.Height, "H", 0, "short for --height")
	fs.Var(float32Flag{&r.Strength}, "strength", "img2img: how much of the init image is noised away, in (0, 1] (default 0.75)")
	fs.StringVar(&r.RNG, "rng", "cuda", "noise generator: "+strings.Join(rng.Names, " (Philox, as A1111 and sd.cpp), ")+" (torch's CPU generator, as ComfyUI)")
	fs.IntVar(&r.ClipSkip, "clip-skip", 1, "stop CLIP this many layers from the end (1: all)")
	fs.IntVar(&r.Batch, "batch-count", 1, "images to make, seeds SEED…SEED+N-1")
	fs.IntVar(&r.Batch, "b", 1, "short for --batch-count")
}

func runImage(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "image", imageUsage)
	var r engimage.Request
	var o imageJobOpts
	imageFlags(fs, &r)
	budget := fs.String("mem-budget", "", "memory the job may use, e.g. 6GiB (default: what the machine has available)")
	jobFlags(fs, &o)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || r.Model == "" {
		fs.Usage()
		return errUsage
	}
	r.Threads = o.threads
	r.Seed = engimage.ResolveSeed(r.Seed) // journaled as used
	if *budget != "" {
		if r.Budget, err = plan.ParseBytes(*budget); err != nil {
			return fmt.Errorf("plan: --mem-budget: %w", err)
		}
	}
	if r.Model, err = resolveModel(r.Model); err != nil {
		return err
	}
	res, err := runImageJob(ctx, env, &o, "image", r.Model, r, func(ctx context.Context, id, dir string) (any, error) {
		iw, ih := 0, 0
		if r.InitImage != "" {
			if iw, ih, err = engimage.ImageSize(r.InitImage); err != nil {
				return nil, err
			}
		}
		s, err := engimage.Resolve(r, iw, ih)
		if err != nil {
			return nil, err
		}
		return (&engimage.Engine{}).Run(ctx, s, id, dir)
	})
	if err != nil || res == nil {
		return err
	}
	if !o.json {
		printImages(env, res.(*engimage.Result))
	}
	return nil
}

func printImages(env *cmdEnv, r *engimage.Result) {
	for _, im := range r.Images {
		fmt.Fprintf(env.stdout, "%s: seed %d (latents %s)\n", im.Path, im.Seed, im.Latents)
	}
}
