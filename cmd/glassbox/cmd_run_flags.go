package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/sample"
)

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
	pull, noPull               bool
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

// define declares run's flags on fs, with their defaults.
func (f *runFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.model, "m", "", "model file path or store name (a name of Ollama's registry the store lacks is pulled with --pull, or asked about on a terminal)")
	fs.StringVar(&f.draft, "draft", "", "a smaller model of the same vocabulary that proposes tokens for the model to check in one pass (speculative decoding: the same output, faster when it guesses well)")
	fs.IntVar(&f.draftMax, "draft-max", 3, "tokens the draft proposes per step (with --draft; the model checks them and its pick in one pass of up to 4 rows, its cheapest batch)")
	fs.Float64Var(&f.draftMinProb, "draft-p-min", 0, "stop a proposal where the draft gives its choice less than this probability (with --draft; 0: always propose --draft-max)")
	fs.BoolVar(&f.pull, "pull", false, "download the model -m names from Ollama's registry when the store lacks it, without asking")
	fs.BoolVar(&f.noPull, "no-pull", false, "fail, without asking, when -m names a model the store lacks")
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
