package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/quantize"
	"github.com/glassbox-ai/glassbox/gguf"
)

func init() {
	register(&command{name: "quantize", summary: "rewrite a GGUF model with its weight matrices in another format", run: runQuantize})
}

func runQuantize(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "quantize", "IN.gguf OUT.gguf TYPE [-t THREADS] [--json]   (TYPE: "+quantize.TypeNames()+")")
	threads := fs.Int("t", 0, "threads (0: physical cores)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		fs.Usage()
		return errUsage
	}
	inPath, outPath := pos[0], pos[1]
	opt, err := quantize.Parse(pos[2])
	if err != nil {
		return err
	}
	if abs1, err1 := filepath.Abs(inPath); err1 == nil {
		if abs2, err2 := filepath.Abs(outPath); err2 == nil && abs1 == abs2 {
			return fmt.Errorf("quantize: output %s is the input file", outPath)
		}
	}
	in, err := gguf.Open(inPath)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := outPath + ".partial"
	fh, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	pool := compute.NewPool(*threads)
	defer pool.Close()
	opt.Pool = pool
	rep, err := quantize.File(ctx, in, fh, opt)
	if cerr := fh.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("quantize: %w", cerr)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, outPath); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("quantize: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	w := env.stdout
	for _, t := range rep.Tensors {
		switch {
		case t.From == t.To:
			fmt.Fprintf(w, "  %-28s %-6s copied\n", t.Name, t.FromName)
		default:
			fmt.Fprintf(w, "  %-28s %-6s → %-6s NRMSE %.4f %s\n", t.Name, t.FromName, t.ToName, t.NRMSE, t.Note)
		}
	}
	fmt.Fprintf(w, "wrote %s: %s (file_type %d), tensor data %.2f MiB → %.2f MiB\n",
		outPath, rep.Type, rep.FileType, float64(rep.InBytes)/(1<<20), float64(rep.OutBytes)/(1<<20))
	return nil
}
