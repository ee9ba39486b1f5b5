package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/glassbox-ai/glassbox/compute/roofline"
	"github.com/glassbox-ai/glassbox/model"
)

func init() {
	register(&command{name: "bench", summary: "measure this machine's roofline (--roofline) or a model's speed (-m)", run: runBench})
}

// benchConfig is everything 'glassbox bench' was asked for.
type benchConfig struct {
	Model    string               // -m: model path or store name; empty with --roofline
	Prompt   int                  // -p: prompt tokens to process (prefill)
	Gen      int                  // -n: tokens to generate
	Depth    int                  // -d: tokens of context filled before each test (llama-bench's -d)
	KV       model.SessionOptions // --kv: the KV cache type (llama-bench's -ctk/-ctv)
	Threads  int                  // -t: worker threads (0: physical cores)
	Reps     int                  // -r: repetitions
	JSON     bool                 // --json: one JSON object on stdout
	Roofline bool                 // --roofline: measure (or show the cached) machine limits
	Fresh    bool                 // --fresh: re-measure the roofline even if cached
	Profile  string               // --cpuprofile: write a Go CPU profile of the run here
}

// modelBench runs a model benchmark; the inference engine sets it. nil
// means model benchmarks are not built into this binary.
var modelBench func(ctx context.Context, env *cmdEnv, cfg benchConfig) error

func runBench(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "bench", "--roofline [--json] [--fresh] [-t THREADS] | -m MODEL [-p 128] [-n 64] [-d 0] [-t THREADS] [-r 5] [--json] [--cpuprofile FILE]")
	var cfg benchConfig
	fs.StringVar(&cfg.Model, "m", "", "model file path or store name")
	fs.IntVar(&cfg.Prompt, "p", 128, "prompt tokens to process")
	fs.IntVar(&cfg.Gen, "n", 64, "tokens to generate")
	fs.IntVar(&cfg.Depth, "d", 0, "tokens of context in the KV cache before each test (pp and tg then run at positions d, d+1, ...)")
	fs.IntVar(&cfg.Threads, "t", 0, "threads (0: physical cores)")
	fs.Func("kv", "KV cache type: f16 (default), q8_0 or f32", cfg.KV.SetKV)
	fs.IntVar(&cfg.Reps, "r", 5, "repetitions")
	fs.BoolVar(&cfg.JSON, "json", false, "print JSON")
	fs.BoolVar(&cfg.Roofline, "roofline", false, "measure read bandwidth and the int8, f32 and bf16 peaks (cached per machine)")
	fs.BoolVar(&cfg.Fresh, "fresh", false, "with --roofline: measure again even if cached")
	fs.StringVar(&cfg.Profile, "cpuprofile", "", "write a CPU profile (go tool pprof) of the benchmark to this file")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if cfg.Model == "" && len(pos) == 1 {
		cfg.Model = pos[0]
	} else if len(pos) > 0 {
		return fmt.Errorf("bench: unexpected arguments %q", pos)
	}
	if cfg.Threads < 0 || cfg.Prompt < 0 || cfg.Gen < 0 || cfg.Depth < 0 || cfg.Reps < 1 {
		return fmt.Errorf("bench: -t %d, -p %d, -n %d, -d %d, -r %d: counts must be >= 0 and -r >= 1", cfg.Threads, cfg.Prompt, cfg.Gen, cfg.Depth, cfg.Reps)
	}
	switch {
	case cfg.Roofline && cfg.Model != "":
		return errors.New("bench: give either --roofline or -m MODEL, not both")
	case cfg.Roofline:
		return benchRoofline(env, cfg)
	case cfg.Model == "":
		fs.Usage()
		return errUsage
	case modelBench == nil:
		return errors.New("bench: model benchmarks are not built in")
	}
	if cfg.Profile != "" {
		stop, err := startProfile(cfg.Profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	return modelBench(ctx, env, cfg)
}

// startProfile starts a CPU profile written to path; stop ends it.
func startProfile(path string) (stop func(), err error) {
	fh, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(fh); err != nil {
		fh.Close()
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); fh.Close() }, nil
}

func benchRoofline(env *cmdEnv, cfg benchConfig) error {
	if !cfg.JSON {
		fmt.Fprintln(env.stderr, "measuring the roofline (reads a 1 GiB buffer; about 10 s) unless cached ...")
	}
	r, cached, err := roofline.Get(cfg.Threads, cfg.Fresh, roofline.Options{})
	if err != nil {
		return err
	}
	if cfg.JSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			roofline.Result
			Cached bool `json:"cached"`
		}{r, cached})
	}
	src := "measured now"
	if cached {
		src = "cached from " + r.Measured.Format("2006-01-02 15:04 UTC") + " (--fresh to re-measure)"
	}
	w := env.stdout
	fmt.Fprintf(w, "roofline of %s, %d threads, %s\n", r.Machine, r.Threads, src)
	fmt.Fprintf(w, "  read bandwidth   %7.1f GB/s (1 thread)  %7.1f GB/s (%d threads)  over %d MiB\n",
		r.ReadGBs1, r.ReadGBsN, r.Threads, r.BufferBytes>>20)
	fmt.Fprintf(w, "  int8 peak        %7.0f GOPS  (%s)\n", r.Int8GOPS, r.Int8Kernel)
	fmt.Fprintf(w, "  f32 peak         %7.0f GFLOPS (%s)\n", r.F32GFLOPS, r.F32Kernel)
	if r.BF16Kernel != "" {
		fmt.Fprintf(w, "  bf16 peak        %7.0f GFLOPS (%s, into f32)\n", r.BF16GFLOPS, r.BF16Kernel)
	} else {
		fmt.Fprintf(w, "  bf16 peak              — (no AVX-512 BF16 on this CPU)\n")
	}
	fmt.Fprintf(w, "  kernels          %s\n", r.KernelImpl)
	return nil
}
