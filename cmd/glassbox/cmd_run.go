package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/journal"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sample"
)

func init() {
	register(&command{name: "run", summary: "generate text from a prompt, streamed to stdout", run: runRun})
}

func runRun(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "run", "-m MODEL [flags] [PROMPT] (the prompt is read from stdin when absent)")
	var f runFlags
	f.define(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := pullMissing(ctx, env, &f); err != nil {
		return err
	}
	if err := applyProfile(env, fs, &f); err != nil {
		return err
	}
	params := f.sampling()
	if err := f.validate(params); err != nil {
		return err
	}
	var budget int64
	if f.memBudget != "" {
		if budget, err = plan.ParseBytes(f.memBudget); err != nil {
			return fmt.Errorf("plan: --mem-budget: %w", err)
		}
	}
	prompt := strings.Join(pos, " ")
	if !f.interactive && len(pos) == 0 && f.promptIDs == "" && isTerminal(env.stdin) && !f.json {
		f.interactive = true
	}
	if f.interactive {
		switch {
		case f.json:
			return errors.New("-i: an interactive chat prints text; --json is for one generation")
		case f.promptIDs != "":
			return errors.New("-i: an interactive chat reads messages; --prompt-ids is for one generation")
		case f.logprobs >= 0:
			return errors.New("-i: --logprobs is for one generation")
		case f.suffix != "":
			return errors.New("-i: --suffix (fill in the middle) is for one generation")
		}
		return runInteractive(ctx, env, &f, prompt, params, budget)
	}
	if len(pos) == 0 && f.promptIDs == "" {
		b, err := io.ReadAll(env.stdin)
		if err != nil {
			return pipeline.Wrap(pipeline.StageEncode, fmt.Errorf("read the prompt from stdin: %w", err), "")
		}
		prompt = strings.TrimSuffix(string(b), "\n")
	}

	return runJob(ctx, env, &f, prompt, params, budget)
}

// runJob runs the generation as a pipeline job recorded in the journal (so
// 'glassbox jobs', 'events' and 'explain' see it): its events (stages,
// progress, tokens, warnings, the result or the error) are what --json
// prints, numbered and timed as the server and the journal see them.
func runJob(ctx context.Context, env *cmdEnv, f *runFlags, prompt string, params sample.Params, budget int64) error {
	// This process has loaded nothing yet: the device is inventoried now,
	// so its resident memory is the runtime's share of the job's peak.
	dev, devErr := planDevice("", true)
	sinks, closeSinks := f.journalSinks(env, "job")
	defer closeSinks()
	rec := newRunRecorder(env)
	mgr := pipeline.NewManager(pipeline.Options{Sinks: sinks})
	job := mgr.Submit(pipeline.WithTrace(ctx, rec.trace(!f.json)), pipeline.Params{Kind: "text", Model: f.model, Params: f.params(prompt, params)},
		func(ctx context.Context) (any, error) {
			res, err := generate(ctx, env, f, prompt, params, rec, dev, devErr, budget)
			if err != nil {
				return nil, err
			}
			return runResult(res), nil
		})
	if f.json {
		events, stop := job.Subscribe(0)
		enc := json.NewEncoder(env.stdout)
		for ev := range events {
			enc.Encode(ev)
		}
		stop()
	}
	_, err := job.Wait(context.Background()) // the job ends soon after ctx does
	if f.verbose {
		fmt.Fprintln(env.stderr)
		job.Explain(env.stderr)
		rec.memory(env.stderr)
	}
	return err
}

// journalSinks opens the journal for run's jobs (none with --no-journal,
// or with a warning naming what will not be journaled when it cannot be
// opened); close closes it.
func (f *runFlags) journalSinks(env *cmdEnv, what string) (sinks []pipeline.Sink, close func()) {
	if f.noJournal {
		return nil, func() {}
	}
	jr, err := journal.OpenDefault(journal.Options{})
	if err != nil {
		fmt.Fprintf(env.stderr, "glassbox run: warning: the %s will not be journaled: %v\n", what, err)
		return nil, func() {}
	}
	return []pipeline.Sink{jr}, func() { jr.Close() }
}

// generate is plan → load → encode → prefill → generate for one prompt.
func generate(ctx context.Context, env *cmdEnv, f *runFlags, prompt string, params sample.Params, rec *runRecorder,
	dev *plan.Device, devErr error, budget int64) (*engine.Result, error) {
	path, err := resolveModel(f.model)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	draftPath := ""
	if f.draft != "" {
		if draftPath, err = resolveModel(f.draft); err != nil {
			return nil, errors.New("load: --draft: " + strings.TrimPrefix(err.Error(), "load: "))
		}
	}
	p, err := admitRun(ctx, path, draftPath, f, dev, devErr, budget)
	if err != nil {
		return nil, err
	}
	rec.plan = p
	t, draft, err := engine.LoadTextDraft(ctx, path, draftPath)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if draft != nil {
		defer draft.Close()
	}
	req := engine.TextRequest{
		Prompt: prompt, Chat: f.chat, System: f.system, NoBOS: f.noBOS,
		Sampling: params, MaxTokens: f.maxTokens, Stops: f.stops, Session: f.session.options(), Format: f.format,
		Logprobs: f.logprobs >= 0, TopLogprobs: max(f.logprobs, 0), SplitThinking: f.chat,
		Draft: draft, DraftMax: f.draftMax, DraftMinProb: f.draftMinProb,
	}
	req.Roofline, req.Limiter = generateRoofline(p, t.Model.WeightBytes(), req.Session.Threads)
	if f.promptIDs != "" {
		if req.PromptIDs, err = parseIDs(f.promptIDs); err != nil {
			return nil, err
		}
	}
	if f.suffix != "" {
		if f.chat || f.promptIDs != "" || draft != nil {
			return nil, errors.New("--suffix (fill in the middle) takes a text prompt, without --chat, --prompt-ids or --draft")
		}
		req.FIM = &engine.FIM{Suffix: f.suffix}
	}
	if !f.json {
		req.OnToken = func(_ int, text string) error {
			_, err := io.WriteString(env.stdout, text)
			return err
		}
	}
	res, err := t.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	rec.result, rec.seed, rec.weightBytes, rec.peakRSS = res, params.Seed, t.Model.WeightBytes(), plan.PeakRSS()
	if c := t.Model.Config(); c.Experts > 0 {
		rec.experts = fmt.Sprintf("; %d of %d experts per token", c.ExpertsUsed, c.Experts)
	}
	if !f.json && isTerminal(env.stdout) {
		fmt.Fprintln(env.stdout)
	}
	if !f.json && req.Logprobs {
		printLogprobs(env.stderr, res.Logprobs)
	}
	if recordRuns && !*f.session.exact && draft == nil { // the calibration history is of one model's runs
		if err := recordRun(p, res); err != nil {
			pipeline.TraceFrom(ctx).OnWarning("calibration", "the run was not stored in the calibration history: "+err.Error())
		}
	}
	return res, nil
}

// printLogprobs writes --logprobs' table: each generated token with its
// probability under the model and the most likely alternatives.
func printLogprobs(w io.Writer, lps []api.Logprob) {
	fmt.Fprintf(w, "%5s  %-18s %8s  %s\n", "#", "token", "p", "most likely (p)")
	for i, lp := range lps {
		var alts []string
		for _, a := range lp.Top {
			alts = append(alts, fmt.Sprintf("%q %.3f", a.Piece, math.Exp(a.Logprob)))
		}
		fmt.Fprintf(w, "%5d  %-18q %8.4f  %s\n", i, lp.Piece, math.Exp(lp.Logprob), strings.Join(alts, ", "))
	}
}

// runResultJSON is the result event's payload.
type runResultJSON struct {
	Text         string  `json:"text"`
	Thinking     string  `json:"thinking,omitempty"`
	Tokens       []int   `json:"tokens"`
	StopReason   string  `json:"stop_reason"`
	StopDetail   string  `json:"stop_detail"`
	PromptTokens int     `json:"prompt_tokens"`
	PrefillMS    float64 `json:"prefill_ms"`
	GenerateMS   float64 `json:"generate_ms"`
	PrefillTPS   float64 `json:"prefill_tokens_per_s"`
	GenerateTPS  float64 `json:"generate_tokens_per_s"`
}

func runResult(r *engine.Result) runResultJSON {
	return runResultJSON{
		Text: r.Text, Thinking: r.Thinking, Tokens: r.Tokens, StopReason: r.StopReason, StopDetail: r.StopDetail,
		PromptTokens: r.PromptTokens,
		PrefillMS:    ms(r.PrefillTime), GenerateMS: ms(r.GenerateTime),
		PrefillTPS:  rate(r.PromptTokens, r.PrefillTime),
		GenerateTPS: r.DecodeRate(),
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// runRecorder keeps what --verbose prints after the explanation and, in
// text mode, prints warnings on stderr.
type runRecorder struct {
	env    *cmdEnv
	result *engine.Result
	seed   uint64
	plan   *plan.Plan

	weightBytes, peakRSS int64
	experts              string // a mixture of experts: how many a token reads
	thought              bool   // thinking was printed, the answer not yet
}

func newRunRecorder(env *cmdEnv) *runRecorder { return &runRecorder{env: env} }

func (r *runRecorder) trace(text bool) *pipeline.Trace {
	dim := isTerminal(r.env.stderr)
	return &pipeline.Trace{
		Warning: func(code, msg string) {
			if text {
				fmt.Fprintf(r.env.stderr, "glassbox run: warning: %s\n", msg)
			}
		},
		// In text mode a reasoning model's thinking (--chat) goes to
		// stderr as it comes, dimmed on a terminal, so that stdout holds
		// the answer only.
		Token: func(tok api.Token) {
			switch {
			case !text:
			case tok.Thinking == "":
				if tok.Text != "" && r.thought { // the answer starts on a line of its own
					fmt.Fprint(r.env.stderr, "\n\n")
					r.thought = false
				}
			case dim:
				fmt.Fprintf(r.env.stderr, "\x1b[2m%s\x1b[0m", tok.Thinking)
			default:
				io.WriteString(r.env.stderr, tok.Thinking)
			}
			if text && tok.Thinking != "" {
				r.thought = true
			}
		},
	}
}

// memory prints the stop reason and seed, what the job held in memory, and
// the plan's peak beside the measured one.
func (r *runRecorder) memory(w io.Writer) {
	if r.result == nil {
		return
	}
	fmt.Fprintf(w, "  stop: %s (%s); seed %d\n", r.result.StopReason, r.result.StopDetail, r.seed)
	fmt.Fprintf(w, "  memory: weights read per token %s (mapped%s), KV cache %s (%s), activations %s\n",
		formatBytes(r.weightBytes), r.experts, formatBytes(r.result.KVBytes), r.result.KVType, formatBytes(r.result.ArenaBytes))
	if r.plan != nil && r.peakRSS > 0 {
		fmt.Fprintf(w, "  peak resident: %s measured; the plan predicted %s for a full context of %d\n",
			formatBytes(r.peakRSS), formatBytes(r.plan.Memory.TotalBytes), r.plan.Options.Ctx)
	}
}
