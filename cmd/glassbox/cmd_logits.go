package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
	_ "github.com/glassbox-ai/glassbox/model/all" // register every architecture
	"github.com/glassbox-ai/glassbox/pipeline"
)

func init() {
	register(&command{name: "logits", summary: "evaluate token ids and write every position's logits (float32)", run: runLogits})
	supportedArchitectures = model.Supported
}

func runLogits(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "logits", "-m MODEL --ids \"1 403 407 ...\" -o FILE [--one-by-one]")
	modelArg := fs.String("m", "", "model file path or store name")
	idsArg := fs.String("ids", "", "space-separated token ids, evaluated from position 0")
	outPath := fs.String("o", "", "output file: little-endian float32, [positions][vocab]")
	oneByOne := fs.Bool("one-by-one", false, "evaluate one token at a time through the KV cache instead of one batch")
	so := sessionFlags(fs)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *outPath == "" {
		fs.Usage()
		return fmt.Errorf("deliver: no output file (use -o FILE)")
	}
	ids, err := parseIDs(*idsArg)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return pipeline.Errorf(pipeline.StageEncode, "use --ids \"1 403 407\"", "no token ids given")
	}
	t, err := loadText(ctx, *modelArg)
	if err != nil {
		return err
	}
	defer t.Close()
	m := t.Model
	opts := so.options()
	if opts.CtxLen == 0 {
		opts.CtxLen = max(len(ids), min(m.Config().CtxLen, model.DefaultCtxLen))
	}
	if *oneByOne {
		opts.Batch = 1
	} else if opts.Batch == 0 {
		opts.Batch = len(ids)
	}
	s, err := m.NewSession(opts)
	if err != nil {
		return err
	}
	defer s.Close()
	vocab := m.Config().VocabSize
	if len(ids) > s.Options().CtxLen {
		return pipeline.Errorf(pipeline.StagePrefill, fmt.Sprintf("try --ctx %d", len(ids)),
			"%d ids do not fit the context of %d", len(ids), s.Options().CtxLen).
			With("tokens", int64(len(ids))).With("ctx", int64(s.Options().CtxLen))
	}
	logits := make([]float32, len(ids)*vocab)
	batch := s.Options().Batch
	for done := 0; done < len(ids); {
		n := min(batch, len(ids)-done)
		if err := s.Forward(ctx, ids[done:done+n], done, logits[done*vocab:(done+n)*vocab]); err != nil {
			return pipeline.Wrap(pipeline.StagePrefill, err, "")
		}
		done += n
	}
	return writeF32(*outPath, logits)
}

// writeF32 writes v as raw little-endian float32.
func writeF32(path string, v []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return pipeline.Wrap(pipeline.StageDeliver, err, "")
	}
	w := bufio.NewWriter(f)
	var b [4]byte
	for _, x := range v {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return pipeline.Wrap(pipeline.StageDeliver, err, "")
	}
	return pipeline.Wrap(pipeline.StageDeliver, f.Close(), "")
}

// sessionOpts are the flags every model-running command shares.
type sessionOpts struct {
	ctx, batch, threads *int
	exact, kvF32        *bool
	kv                  model.SessionOptions // the KV cache type --kv chose
}

func sessionFlags(fs *flag.FlagSet) *sessionOpts {
	o := &sessionOpts{
		ctx:     fs.Int("ctx", 0, "context length in tokens (default: min(model's trained context, 4096))"),
		batch:   fs.Int("batch", 0, "prompt tokens per forward pass (default 512)"),
		threads: fs.Int("threads", 0, "worker threads (default: physical cores)"),
		exact:   fs.Bool("exact", false, "dequantize weights to F32 and multiply in F32 (slow reference path)"),
		kvF32:   fs.Bool("kv-f32", false, "F32 KV cache instead of F16 (the same as --kv f32)"),
	}
	fs.Func("kv", "KV cache type: f16 (default), q8_0 (half of f16's memory; scores and values rounded to 8 bits) or f32", o.kv.SetKV)
	return o
}

func (o *sessionOpts) options() model.SessionOptions {
	threads := *o.threads
	if threads <= 0 {
		threads = compute.PhysicalCores()
	}
	return model.SessionOptions{CtxLen: *o.ctx, Batch: *o.batch, Threads: threads, Exact: *o.exact,
		KVF32: *o.kvF32 || o.kv.KVF32, KVQ8: o.kv.KVQ8}
}

// loadText resolves a -m argument, maps the file and binds its
// architecture (the load stage, reported through the trace in ctx).
func loadText(ctx context.Context, arg string) (*engine.Text, error) {
	path, err := resolveModel(arg)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	return engine.LoadText(ctx, path)
}

// loadModel is loadText for callers that want the parts: the bound model,
// the open file and the function that closes it.
func loadModel(ctx context.Context, arg string) (model.Model, *gguf.File, func(), error) {
	t, err := loadText(ctx, arg)
	if err != nil {
		return nil, nil, nil, err
	}
	return t.Model, t.File, func() { t.Close() }, nil
}

// parseIDs parses space- or comma-separated token ids.
func parseIDs(s string) ([]int, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' })
	ids := make([]int, 0, len(fields))
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, pipeline.Errorf(pipeline.StageEncode, "", "token id %d of %d is %q, not a non-negative integer", i+1, len(fields), f)
		}
		ids = append(ids, n)
	}
	return ids, nil
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
