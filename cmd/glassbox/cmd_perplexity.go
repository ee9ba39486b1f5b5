package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/pipeline"
)

func init() {
	register(&command{name: "perplexity", summary: "score a text file: perplexity over windows of --ctx tokens", run: runPerplexity})
}

func runPerplexity(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "perplexity", "-m MODEL -f FILE [--ctx N] [--json]")
	modelArg := fs.String("m", "", "model file path or store name")
	file := fs.String("f", "", "text file to score (UTF-8)")
	idsFile := fs.String("ids-file", "", "score these space-separated token ids instead of -f (no tokenizer involved)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	so := sessionFlags(fs)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*file == "") == (*idsFile == "") {
		fs.Usage()
		return fmt.Errorf("encode: give exactly one of -f FILE or --ids-file FILE")
	}
	t, err := loadText(ctx, *modelArg)
	if err != nil {
		return err
	}
	defer t.Close()
	m, cfg := t.Model, t.Model.Config()

	ids, bos, err := perplexityIDs(t, *file, *idsFile)
	if err != nil {
		return err
	}
	opts := so.options()
	if opts.CtxLen <= 0 {
		opts.CtxLen = min(512, max(cfg.CtxLen, 4))
	}
	if opts.Batch <= 0 {
		opts.Batch = opts.CtxLen
	}
	for _, id := range ids {
		if id >= cfg.VocabSize {
			return pipeline.Errorf(pipeline.StageEncode, "", "token id %d is outside the vocabulary of %d", id, cfg.VocabSize)
		}
	}
	s, err := m.NewSession(opts)
	if err != nil {
		return pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	defer s.Close()
	onWindow := func(w, n int, ppl float64) {
		if !*asJSON {
			fmt.Fprintf(env.stdout, "[%d/%d] %.4f\n", w+1, n, ppl)
		}
	}
	res, err := engine.Perplexity(ctx, s, cfg.VocabSize, ids, opts.CtxLen, bos, onWindow)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"ppl": round4(res.PPL), "stderr": round4(res.StdErr), "ctx": opts.CtxLen,
			"tokens": len(ids), "windows": len(res.Cumulative), "scored": res.Scored, "dropped": res.Dropped,
			"cumulative": res.Cumulative,
		})
	}
	fmt.Fprintf(env.stdout, "Final estimate: PPL = %.4f +/- %.5f (%d tokens, %d windows of %d, %d scored, %d dropped)\n",
		res.PPL, res.StdErr, len(ids), len(res.Cumulative), opts.CtxLen, res.Scored, res.Dropped)
	return nil
}

// perplexityIDs reads the ids to score and the id that starts each window
// (-1: keep the text's own first id): a text file is tokenized with BOS
// and without its final newline, as llama-perplexity does; an ids file
// is used as is, each window starting with the file's first id.
func perplexityIDs(t *engine.Text, file, idsFile string) (ids []int, bos int, err error) {
	if idsFile != "" {
		b, err := os.ReadFile(idsFile)
		if err != nil {
			return nil, 0, pipeline.Wrap(pipeline.StageEncode, err, "")
		}
		if ids, err = parseIDs(string(b)); err != nil {
			return nil, 0, err
		}
		if len(ids) == 0 {
			return nil, 0, pipeline.Errorf(pipeline.StageEncode, "", "%s holds no token ids", idsFile)
		}
		return ids, ids[0], nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, 0, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	tok, err := t.Tokenizer()
	if err != nil {
		return nil, 0, err
	}
	if ids, err = tok.Encode(strings.TrimSuffix(string(b), "\n"), true, false); err != nil {
		return nil, 0, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	bos = -1
	if tok.AddBOS() {
		bos = tok.BOS()
	}
	return ids, bos, nil
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
