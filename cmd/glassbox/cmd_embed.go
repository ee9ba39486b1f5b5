package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
)

func init() {
	register(&command{name: "embed", summary: "turn texts into embedding vectors (one JSON array per line)", run: runEmbed})
}

// embedParams is the request of an embed job, as journaled.
type embedParams struct {
	Model      string `json:"model"`
	Inputs     int    `json:"inputs"`
	Pooling    string `json:"pooling,omitempty"`
	Normalize  bool   `json:"normalize"`
	Dimensions int    `json:"dimensions,omitempty"`
	Truncate   bool   `json:"truncate,omitempty"`
	Ctx        int    `json:"ctx,omitempty"`
	Threads    int    `json:"threads"`
}

func runEmbed(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "embed", "-m MODEL [--pooling mean|last|cls] [--dimensions N] [--truncate] [--raw] TEXT... | -f FILE")
	modelArg := fs.String("m", "", "model file path or store name")
	pooling := fs.String("pooling", "", "how a text's hidden states make its vector: mean, last or cls (default: the model's pooling_type, else mean)")
	dims := fs.Int("dimensions", 0, "keep each vector's first N values (then normalized)")
	truncate := fs.Bool("truncate", false, "cut an input longer than the context to its first tokens (default: an error)")
	raw := fs.Bool("raw", false, "print the vectors as the model gives them, not normalized to length 1")
	file := fs.String("f", "", "read the inputs from FILE, one per line ('-': standard input)")
	ctxLen := fs.Int("ctx", 0, "context length in tokens: the longest input (default: min(model's trained context, 4096))")
	batch := fs.Int("batch", 0, "tokens per forward pass (default 512)")
	var o imageJobOpts
	jobFlags(fs, &o)
	texts, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *file != "" {
		more, err := readLines(env, *file)
		if err != nil {
			return err
		}
		texts = append(texts, more...)
	}
	if len(texts) == 0 {
		fs.Usage()
		return pipeline.Errorf(pipeline.StageEncode, "give texts as arguments or -f FILE", "no inputs to embed")
	}
	threads := o.threads
	if threads <= 0 {
		threads = compute.PhysicalCores()
	}
	req := engine.EmbedRequest{Inputs: texts, Pooling: *pooling, Truncate: *truncate, Normalize: !*raw, Dimensions: *dims,
		Session: model.SessionOptions{CtxLen: *ctxLen, Batch: *batch, Threads: threads}}
	params := embedParams{Model: *modelArg, Inputs: len(texts), Pooling: *pooling, Normalize: !*raw, Dimensions: *dims,
		Truncate: *truncate, Ctx: *ctxLen, Threads: threads}
	res, err := runImageJob(ctx, env, &o, "embed", *modelArg, params, func(ctx context.Context, _, _ string) (any, error) {
		t, err := loadText(ctx, *modelArg)
		if err != nil {
			return nil, err
		}
		defer t.Close()
		return t.Embed(ctx, req)
	})
	if err != nil || o.json {
		return err
	}
	w := bufio.NewWriter(env.stdout)
	for _, v := range res.(*engine.EmbedResult).Embeddings {
		b, _ := json.Marshal(v) // floats: cannot fail
		w.Write(b)
		w.WriteByte('\n')
	}
	return pipeline.Wrap(pipeline.StageDeliver, w.Flush(), "")
}

// readLines reads the non-empty lines of path ("-": standard input).
func readLines(env *cmdEnv, path string) ([]string, error) {
	var r io.Reader = env.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StageEncode, err, "")
		}
		defer f.Close()
		r = f
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		if l := strings.TrimRight(sc.Text(), "\r"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, pipeline.Wrap(pipeline.StageEncode, fmt.Errorf("reading %s: %w", path, err), "")
	}
	return lines, nil
}
