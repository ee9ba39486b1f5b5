package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
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

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runFlags are the flags of glassbox run.
type runFlags struct {
	model                      string
	maxTokens                  int
	temp, topP, minP, repeat   float64
	freqPen, presPen           float64
	topK, lastN, logprobs      int
	seed                       int64
	stops                      stringList
	chat, noBOS, json, verbose bool
	noPull                     bool
	draft                      string
	draftMax                   int
	draftMinProb               float64
	interactive                bool
	noJournal                  bool
	system, promptIDs, format  string
	suffix                     string // fill in the middle: the text after the cursor
	memBudget                  string
	session                    *sessionOpts
}

func runRun(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "run", "-m MODEL [flags] [PROMPT] (the prompt is read from stdin when absent)")
	var f runFlags
	fs.StringVar(&f.model, "m", "", "model file path or store name (a name of Ollama's registry the store lacks is pulled first)")
	fs.StringVar(&f.draft, "draft", "", "a smaller model of the same vocabulary that proposes tokens for the model to check in one pass (speculative decoding: the same output, faster when it guesses well)")
	fs.IntVar(&f.draftMax, "draft-max", 3, "tokens the draft proposes per step (with --draft; the model checks them and its pick in one pass of up to 4 rows, its cheapest batch)")
	fs.Float64Var(&f.draftMinProb, "draft-p-min", 0, "stop a proposal where the draft gives its choice less than this probability (with --draft; 0: always propose --draft-max)")
	fs.BoolVar(&f.noPull, "no-pull", false, "fail, rather than pull, when -m names a model of Ollama's registry the store lacks")
	fs.IntVar(&f.maxTokens, "n", -1, "maximum tokens to generate (-1: until end of generation or a full context)")
	fs.IntVar(&f.maxTokens, "max-tokens", -1, "same as -n")
	fs.Float64Var(&f.temp, "temp", 0.8, "temperature (0: greedy)")
	fs.IntVar(&f.topK, "top-k", 40, "keep the k most likely tokens (0: off)")
	fs.Float64Var(&f.topP, "top-p", 0.95, "nucleus sampling mass (1: off)")
	fs.Float64Var(&f.minP, "min-p", 0.05, "drop tokens below min-p × the top probability (0: off)")
	fs.Float64Var(&f.repeat, "repeat-penalty", 1.0, "penalty for recently seen tokens (1: off)")
	fs.Float64Var(&f.freqPen, "frequency-penalty", 0, "subtracted once per occurrence in the penalty window")
	fs.Float64Var(&f.presPen, "presence-penalty", 0, "subtracted once if the token is in the penalty window")
	fs.IntVar(&f.lastN, "repeat-last-n", sample.DefaultPenaltyLastN, "penalty window in tokens (-1: whole history)")
	fs.Int64Var(&f.seed, "seed", -1, "random seed (-1: pick one; same seed and settings give the same text)")
	fs.Var(&f.stops, "stop", "stop when this text appears (repeatable); it is not printed")
	fs.BoolVar(&f.chat, "chat", false, "apply the model's chat template to the prompt")
	fs.BoolVar(&f.interactive, "i", false, "chat interactively: read messages line by line, keep the model and its KV cache between turns (the default with no prompt on a terminal)")
	fs.BoolVar(&f.interactive, "interactive", false, "same as -i")
	fs.StringVar(&f.system, "system", "", "system message (with --chat)")
	fs.StringVar(&f.suffix, "suffix", "", "fill in the middle: generate what goes between the prompt (the code before the cursor) and this text, with the model's FIM tokens")
	fs.BoolVar(&f.noBOS, "no-bos", false, "do not add the BOS token")
	fs.BoolVar(&f.json, "json", false, "print one JSON event per line instead of text")
	fs.StringVar(&f.format, "format", "", `"json": generate one JSON object (JSON mode); a JSON schema, or @FILE holding one: generate a value it allows`)
	fs.BoolVar(&f.verbose, "verbose", false, "print the job's explanation (as 'glassbox explain') and its memory on stderr at the end")
	fs.StringVar(&f.memBudget, "mem-budget", "", "refuse the job in stage plan, before loading, when it needs more memory than this (e.g. 2GiB)")
	fs.StringVar(&f.promptIDs, "prompt-ids", "", "the prompt as space-separated token ids instead of text")
	fs.BoolVar(&f.noJournal, "no-journal", false, "do not record the job in the journal of the glassbox home")
	fs.IntVar(&f.logprobs, "logprobs", -1, "report each token's probability under the model and its N most likely alternatives (0-20; -1: off): on the token events with --json, else as a table on stderr at the end")
	f.session = sessionFlags(fs)
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

// params is the request as the journal records it.
func (f *runFlags) params(prompt string, p sample.Params) map[string]any {
	return map[string]any{"prompt": prompt, "prompt_ids": f.promptIDs, "chat": f.chat, "system": f.system, "suffix": f.suffix,
		"max_tokens": f.maxTokens, "temperature": p.Temperature, "top_k": p.TopK, "top_p": p.TopP, "min_p": p.MinP,
		"repeat_penalty": p.RepeatPenalty, "seed": p.Seed, "stop": []string(f.stops), "ctx": *f.session.ctx,
		"kv": f.session.options().KVName(), "mem_budget": f.memBudget, "format": f.format}
}

func (f *runFlags) sampling() sample.Params {
	seed := uint64(f.seed)
	if f.seed < 0 {
		seed = rand.Uint64() >> 1
	}
	return sample.Params{
		Temperature: float32(f.temp), TopK: f.topK, TopP: float32(f.topP), MinP: float32(f.minP),
		RepeatPenalty: float32(f.repeat), FreqPenalty: float32(f.freqPen), PresencePenalty: float32(f.presPen),
		PenaltyLastN: f.lastN, Seed: seed,
	}
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

// validate checks the sampling flags: an out-of-range value is an error
// that names its flag, never silently normalised by the sampler.
func (f *runFlags) validate(p sample.Params) error {
	checks := []struct {
		flag string
		p    sample.Params
	}{
		{"temp", sample.Params{Temperature: p.Temperature}},
		{"top-k", sample.Params{TopK: p.TopK}},
		{"top-p", sample.Params{TopP: p.TopP}},
		{"min-p", sample.Params{MinP: p.MinP}},
		{"repeat-penalty", sample.Params{RepeatPenalty: p.RepeatPenalty}},
		{"frequency-penalty", sample.Params{FreqPenalty: p.FreqPenalty}},
		{"presence-penalty", sample.Params{PresencePenalty: p.PresencePenalty}},
	}
	for _, c := range checks {
		if err := c.p.Validate(); err != nil {
			return fmt.Errorf("--%s: %w", c.flag, err)
		}
	}
	if f.logprobs < -1 || f.logprobs > engine.MaxTopLogprobs {
		return fmt.Errorf("--logprobs: %s: %d alternatives is out of range (0 to %d, or -1 for none)", sample.Stage, f.logprobs, engine.MaxTopLogprobs)
	}
	if f.draftMax < 1 || f.draftMax > 64 {
		return fmt.Errorf("--draft-max: generate: %d proposals per step is out of range (1 to 64)", f.draftMax)
	}
	if f.draftMinProb < 0 || f.draftMinProb >= 1 {
		return fmt.Errorf("--draft-p-min: generate: %v is not a probability below 1", f.draftMinProb)
	}
	if f.lastN < -1 {
		return fmt.Errorf("--repeat-last-n: %s: sample: penalty window %d is out of range (want -1 for the whole history, 0 for none, or a number of tokens)",
			sample.Stage, f.lastN)
	}
	if name, ok := strings.CutPrefix(f.format, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("--format: %s: reading the schema: %w", sample.Stage, err)
		}
		f.format = string(b)
	}
	if _, err := engine.OutputSchema(f.format); err != nil {
		return fmt.Errorf("--format: %s: %w", sample.Stage, err)
	}
	return p.Validate()
}
