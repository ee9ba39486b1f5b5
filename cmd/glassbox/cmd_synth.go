package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/synth"
	"github.com/glassbox-ai/glassbox/tensor"
)

func init() {
	register(&command{name: "synth", summary: "write a model with random weights (benchmark presets 1b, 134m; any architecture, weight format)", run: runSynth})
}

func runSynth(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "synth", "-o OUT.gguf --preset "+strings.Join(synth.PresetNames(), "|")+" --type FORMAT [--arch NAME] [--yarn FACTOR] [--seed N] [--vocab FILE]\n"+
		"       glassbox synth --arch sd1 [--type f16|f32] -o OUT.safetensors\n"+
		"       glassbox synth --arch wan --kind "+strings.Join(synth.WanKinds(), "|")+" [--seed N] [--type f32|f16] -o OUT.safetensors")
	out := fs.String("o", "", "output GGUF file (written through a temporary file, renamed when complete)")
	preset := fs.String("preset", "", "model shape: "+strings.Join(synth.PresetNames(), ", "))
	format := fs.String("type", "F16", "weight format: "+strings.Join(synth.Formats(), ", "))
	arch := fs.String("arch", "", "architecture: "+strings.Join(synth.Archs(), ", ")+" (the mixtures of experts need an experts preset such as moe-tiny; default: the preset's, llama); "+
		"sd1 writes the random-weight SD 1.5 checkpoint sd15-rand (.safetensors, no preset; --type f16 or f32); "+
		"wan writes a random-weight Wan 2.1 file of spec glassbox-wan-init-v1 (--kind)")
	kind := fs.String("kind", "", "with --arch wan: the file, "+strings.Join(synth.WanKinds(), ", ")+" (--seed and --type default to the golden file's: 1001, 3001, 4001, 2001, and 5001 for umt5-xxl, which has none; F32)")
	seed := fs.Uint64("seed", 1, "random seed (same seed and flags = same file)")
	std := fs.Float64("std", 0, "standard deviation of the random weights (0 = 0.02; 0.2 makes the outputs peaked enough for a cross-check with another runtime to see soft-caps, multipliers and windows)")
	vocab := fs.String("vocab", "", "copy the tokenizer.* keys (and vocabulary size) from this GGUF instead of a synthetic 32000-token SentencePiece vocabulary")
	threads := fs.Int("threads", 0, "generation/quantization threads (0 = all cores; the file does not depend on it)")
	quiet := fs.Bool("q", false, "no progress on standard error")
	// Shape overrides on top of the preset (0 keeps the preset's value).
	var over synth.Config
	fs.IntVar(&over.Dim, "dim", 0, "override the embedding width")
	fs.IntVar(&over.Layers, "layers", 0, "override the number of layers")
	fs.IntVar(&over.NumHeads, "heads", 0, "override the number of attention heads")
	fs.IntVar(&over.NumKVHeads, "kv-heads", 0, "override the number of KV heads")
	fs.IntVar(&over.HiddenDim, "ffn", 0, "override the FFN width")
	fs.IntVar(&over.VocabSize, "vocab-size", 0, "override the synthetic vocabulary size")
	fs.IntVar(&over.CtxLen, "ctx", 0, "override the trained context length")
	fs.IntVar(&over.Experts, "experts", 0, "override the number of experts (a mixture of experts: Mixtral's layout)")
	fs.IntVar(&over.ExpertsUsed, "experts-used", 0, "override the experts each token goes through")
	fs.IntVar(&over.SlidingWindow, "window", 0, "override the sliding window of gemma2's and gemma3's local layers (tiny presets 8, else 4096 gemma2, 1024 gemma3)")
	fs.IntVar(&over.SlidingWindowPattern, "window-pattern", 0, "override gemma3's layers per global layer (tiny presets 2, else 6)")
	yarn := fs.Float64("yarn", 0, "YaRN RoPE scaling by this factor (> 1): the context is the extended one, context/FACTOR the original")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	usage := func(msg string) error {
		fmt.Fprintf(env.stderr, "glassbox synth: %s\n\n", msg)
		fs.Usage()
		return errUsage
	}
	switch {
	case len(pos) > 0:
		return usage(fmt.Sprintf("unexpected argument %q", pos[0]))
	case *arch == "sd1":
		if *out == "" {
			return usage("-o OUT.safetensors is required")
		}
		if *preset != "" {
			return usage("--arch sd1 has one shape (SD 1.5): drop --preset")
		}
		return synthSD1(ctx, env, *out, *format, *threads, *quiet)
	case *arch == "wan":
		if *out == "" {
			return usage("-o OUT.safetensors is required")
		}
		if *preset != "" {
			return usage("--arch wan has its shapes by --kind: drop --preset")
		}
		// Unset, --seed and --type default to the golden file's (F32).
		s, t := wanGoldenSeeds[*kind], "f32"
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "seed":
				s = *seed
			case "type":
				t = *format
			}
		})
		return synthWan(ctx, env, *out, *kind, s, t, *quiet)
	case *out == "":
		return usage("-o OUT.gguf is required")
	case *preset == "":
		return usage("--preset is required (" + strings.Join(synth.PresetNames(), ", ") + ")")
	}
	cfg, ok := synth.Presets[*preset]
	if !ok {
		return usage(fmt.Sprintf("unknown preset %q (have %s)", *preset, strings.Join(synth.PresetNames(), ", ")))
	}
	for _, f := range []struct {
		dst *int
		v   int
	}{
		{&cfg.Dim, over.Dim}, {&cfg.Layers, over.Layers}, {&cfg.NumHeads, over.NumHeads}, {&cfg.NumKVHeads, over.NumKVHeads},
		{&cfg.HiddenDim, over.HiddenDim}, {&cfg.VocabSize, over.VocabSize}, {&cfg.CtxLen, over.CtxLen},
		{&cfg.Experts, over.Experts}, {&cfg.ExpertsUsed, over.ExpertsUsed},
		{&cfg.SlidingWindow, over.SlidingWindow}, {&cfg.SlidingWindowPattern, over.SlidingWindowPattern},
	} {
		if f.v < 0 {
			return usage(fmt.Sprintf("shape overrides must be positive, got %d", f.v))
		}
		if f.v > 0 {
			*f.dst = f.v
			cfg.Name = "synth-custom"
		}
	}
	// The name stays the preset's: llama.cpp gives a file whose name holds
	// "phi3" Phi-3's special-token attributes, which need its vocabulary.
	if *arch != "" {
		cfg.Arch = *arch
	}
	if *yarn != 0 {
		cfg.YaRNFactor = float32(*yarn)
	}
	o := synth.Options{Config: cfg, Format: *format, Seed: *seed, WeightStd: *std, Workers: *threads}
	if *vocab != "" {
		f, err := gguf.Open(*vocab)
		if err != nil {
			return err
		}
		defer f.Close()
		o.VocabFrom = f
	}
	start := time.Now()
	if !*quiet {
		next := int64(0)
		o.Progress = func(done, total int64) {
			if done >= next || done == total {
				fmt.Fprintf(env.stderr, "\rsynth: %s %s: %5.1f%% of %s (%.0fs)", cfg.Name, *format,
					100*float64(done)/float64(total), humanBytes(total), time.Since(start).Seconds())
				next = done + total/50
			}
		}
	}
	err = synth.WriteFile(ctx, *out, o)
	if !*quiet {
		fmt.Fprintln(env.stderr)
	}
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(env.stderr, "synth: wrote %s (%s, %d parameters, %s, seed %d) in %.1fs\n", *out, cmp.Or(o.Config.Arch, "llama"), o.Config.Params(), *format, *seed, time.Since(start).Seconds())
	}
	return nil
}

// wanGoldenSeeds are the seeds of the golden set's files (README §1);
// umt5-xxl has no golden file; its default seed 5001 continues the series.
var wanGoldenSeeds = map[string]uint64{"dit-tiny": 1001, "vae": 2001, "dit-1.3b": 3001, "umt5-tiny": 4001, "umt5-xxl": 5001}

// synthWan writes a random-weight Wan file (shared/golden/wan/README.md §1).
func synthWan(ctx context.Context, env *cmdEnv, out, kind string, seed uint64, format string, quiet bool) error {
	dt := tensor.F32
	switch strings.ToLower(format) {
	case "f32":
	case "f16":
		dt = tensor.F16
	default:
		fmt.Fprintf(env.stderr, "glassbox synth: --arch wan writes F32 or F16 weights, not %q\n", format)
		return errUsage
	}
	if !slices.Contains(synth.WanKinds(), kind) {
		fmt.Fprintf(env.stderr, "glassbox synth: --arch wan needs --kind %s (got %q)\n", strings.Join(synth.WanKinds(), " or "), kind)
		return errUsage
	}
	start := time.Now()
	if err := synth.WriteWanFile(ctx, out, kind, seed, dt); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(env.stderr, "synth: wrote %s (Wan %s, %s, seed %d, spec %s) in %.1fs\n", out, kind, dt, seed, synth.WanSpec, time.Since(start).Seconds())
	}
	return nil
}

// synthSD1 writes sd15-rand (shared/golden/sd15/README.md §2), F16 or its
// F32 widening.
func synthSD1(ctx context.Context, env *cmdEnv, out, format string, threads int, quiet bool) error {
	o := synth.SD1Options{Workers: threads}
	switch strings.ToLower(format) {
	case "f16":
	case "f32":
		o.F32 = true
	default:
		fmt.Fprintf(env.stderr, "glassbox synth: --arch sd1 writes F16 or F32 weights, not %q\n", format)
		return errUsage
	}
	dt := map[bool]string{false: "F16", true: "F32"}[o.F32]
	start := time.Now()
	if !quiet {
		next := int64(0)
		o.Progress = func(done, total int64) {
			if done >= next || done == total {
				fmt.Fprintf(env.stderr, "\rsynth: sd15-rand %s: %5.1f%% of %s (%.0fs)", dt, 100*float64(done)/float64(total), humanBytes(total), time.Since(start).Seconds())
				next = done + total/50
			}
		}
	}
	err := synth.WriteSD1File(ctx, out, o)
	if !quiet {
		fmt.Fprintln(env.stderr)
	}
	if err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(env.stderr, "synth: wrote %s (SD 1.5 sd15-rand-v1, %d tensors, %d parameters, %s) in %.1fs\n", out, len(synth.SD1Tensors()), synth.SD1Params(), dt, time.Since(start).Seconds())
	}
	return nil
}
