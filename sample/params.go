package sample

import (
	"fmt"
	"math"
)

// Stage is the pipeline stage sampling errors belong to.
const Stage = "infer"

// Params configures a Sampler. The zero value is greedy decoding with no
// penalties. Every filter is off at its zero value.
type Params struct {
	// Temperature divides the logits; 0 means greedy (argmax).
	Temperature float32
	// TopP keeps the smallest set of top candidates with mass ≥ TopP;
	// 0 or ≥ 1 disables it.
	TopP float32
	// MinP drops candidates whose probability is below MinP × the top
	// probability; 0 disables it (values above 1 act as 1).
	MinP float32
	// RepeatPenalty scales the logits of recently seen tokens (see the
	// package doc); 0 or 1 disables it.
	RepeatPenalty float32
	// FreqPenalty is subtracted once per occurrence in the window.
	FreqPenalty float32
	// PresencePenalty is subtracted once if the token is in the window.
	PresencePenalty float32
	// TopK keeps the k highest logits; 0 disables it.
	TopK int
	// PenaltyLastN is the penalty window: the last N ids of the history.
	// As in llama.cpp (repeat_last_n), 0 disables the penalties and -1
	// (any negative value) means the whole history; Defaults sets 64.
	PenaltyLastN int
	// Seed seeds the random draw.
	Seed uint64
	// LogitBias is added to the logits of its token ids before anything
	// else (OpenAI's logit_bias; −100 in practice bans a token, +100
	// forces it). Ids outside the vocabulary are ignored here; a caller
	// that knows the vocabulary checks them (engine.Text.Prepare).
	LogitBias map[int]float32
}

// DefaultPenaltyLastN is llama.cpp's default penalty window (repeat_last_n).
const DefaultPenaltyLastN = 64

// Defaults returns llama.cpp's default sampling settings (common.h):
// temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, penalties off
// (repeat 1.0 over the last 64 tokens), with the given seed.
func Defaults(seed uint64) Params {
	return Params{
		Temperature:   0.8,
		TopK:          40,
		TopP:          0.95,
		MinP:          0.05,
		RepeatPenalty: 1,
		PenaltyLastN:  DefaultPenaltyLastN,
		Seed:          seed,
	}
}

// Validate reports the first setting out of range, so a command line can
// refuse it before the model is loaded. New accepts any Params (it
// normalises out-of-range values as documented on each field), so
// Validate is the only place where a typo becomes an error.
func (p Params) Validate() error {
	bad := func(name string, v float32, want string) error {
		return fmt.Errorf("%s: sample: %s = %v is out of range (want %s)", Stage, name, v, want)
	}
	finite := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	switch {
	case !finite(p.Temperature) || p.Temperature < 0:
		return bad("temperature", p.Temperature, "≥ 0; 0 is greedy")
	case !finite(p.TopP) || p.TopP < 0 || p.TopP > 1:
		return bad("top_p", p.TopP, "0..1; 0 or 1 disables it")
	case !finite(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return bad("min_p", p.MinP, "0..1; 0 disables it")
	case !finite(p.RepeatPenalty) || p.RepeatPenalty < 0:
		return bad("repeat_penalty", p.RepeatPenalty, "> 0; 1 disables it")
	case !finite(p.FreqPenalty):
		return bad("frequency_penalty", p.FreqPenalty, "a finite number")
	case !finite(p.PresencePenalty):
		return bad("presence_penalty", p.PresencePenalty, "a finite number")
	case p.TopK < 0:
		return fmt.Errorf("%s: sample: top_k = %d is out of range (want ≥ 0; 0 disables it)", Stage, p.TopK)
	}
	for id, b := range p.LogitBias {
		if !finite(b) || id < 0 {
			return fmt.Errorf("%s: sample: logit_bias %d: %v is out of range (want a token id ≥ 0 and a finite bias)", Stage, id, b)
		}
	}
	return nil
}

// normalized maps out-of-range and disabling values to their canonical
// "off" form, so the chain needs only one test per filter.
func (p Params) normalized() Params {
	nan := func(v float32) bool { return v != v }
	if nan(p.Temperature) || p.Temperature < 0 {
		p.Temperature = 0
	}
	if nan(p.TopP) || p.TopP <= 0 || p.TopP >= 1 {
		p.TopP = 1
	}
	if nan(p.MinP) || p.MinP < 0 {
		p.MinP = 0
	}
	if p.MinP > 1 {
		p.MinP = 1 // keeps only the top candidate(s), never none
	}
	if nan(p.RepeatPenalty) || p.RepeatPenalty <= 0 {
		p.RepeatPenalty = 1
	}
	if nan(p.FreqPenalty) {
		p.FreqPenalty = 0
	}
	if nan(p.PresencePenalty) {
		p.PresencePenalty = 0
	}
	if p.TopK < 0 {
		p.TopK = 0
	}
	return p
}

// penalties reports whether any penalty is active.
func (p Params) penalties() bool {
	return p.PenaltyLastN != 0 && (p.RepeatPenalty != 1 || p.FreqPenalty != 0 || p.PresencePenalty != 0)
}
