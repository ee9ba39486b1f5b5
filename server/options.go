package server

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits on options: anything outside is refused as absurd rather than
// handed to the engine.
const (
	maxCtx        = 1 << 20 // tokens
	maxPredict    = 1 << 20 // tokens
	maxTopK       = 1 << 20 // vocabulary entries
	maxStops      = 16
	maxStopBytes  = 1024
	maxTemp       = 100
	maxPenalty    = 100
	maxThreads    = 1024
	maxBatch      = 1 << 16
	maxLastN      = 1 << 20
	maxKeepAliveS = 100 * 365 * 24 * 3600
)

// ollamaDefaults are Ollama's documented defaults
// (https://github.com/ollama/ollama/blob/main/docs/modelfile.md#valid-parameters-and-values).
func ollamaDefaults() Options {
	return Options{NumPredict: -1, Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0,
		RepeatPenalty: 1.1, RepeatLastN: 64}
}

// nativeDefaults are glassbox run's defaults (llama.cpp's sampling chain
// defaults), so a job from the UI and one from the CLI sample alike.
func nativeDefaults() Options {
	return Options{NumPredict: -1, Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05,
		RepeatPenalty: 1, RepeatLastN: 64}
}

// openAIDefaults are OpenAI's: temperature 1, top_p 1, no other filter.
func openAIDefaults() Options {
	return Options{NumPredict: -1, Temperature: 1, TopP: 1, RepeatPenalty: 1, RepeatLastN: 64}
}

// maxTopLogprobs is the most alternatives a token's logprob may list
// (OpenAI's limit; engine.MaxTopLogprobs).
const maxTopLogprobs = 20

// setLogprobs checks a request's logprobs settings (field names the
// alternatives' field) and applies them to o.
func setLogprobs(o *Options, logprobs bool, top int, field string) *Error {
	if top < 0 || top > maxTopLogprobs {
		return badRequest("invalid_value", field, "%s is %d, outside 0..%d", field, top, maxTopLogprobs)
	}
	if top > 0 && !logprobs {
		return badRequest("invalid_value", field, "%s needs logprobs: true", field)
	}
	o.Logprobs, o.TopLogprobs = logprobs, top
	return nil
}

// tokenBytes is a logprob's token as bytes (OpenAI's and Ollama's
// "bytes": the piece may be part of a character).
func tokenBytes(piece string, raw []byte) []int {
	if raw == nil {
		raw = []byte(piece)
	}
	out := make([]int, len(raw))
	for i, b := range raw {
		out[i] = int(b)
	}
	return out
}

// optionNames are the options applyOllamaOptions reads, by Ollama's names.
var optionNames = []string{"num_ctx", "num_predict", "temperature", "top_k", "top_p", "min_p", "repeat_penalty",
	"repeat_last_n", "frequency_penalty", "presence_penalty", "seed", "stop", "num_batch", "num_thread",
	"mirostat", "typical_p", "tfs_z"}

// ollamaOptionNames are every option Ollama's API has had (its api.Options
// and api.Runner): optionNames, and those glassbox has no use for (GPU
// placement, memory mapping and locking, NUMA, mirostat's tuning, the
// prompt tokens kept on a context shift, ...).
var ollamaOptionNames = append(slices.Clone(optionNames), "num_keep", "mirostat_tau", "mirostat_eta",
	"penalize_newline", "numa", "num_gpu", "main_gpu", "num_gqa", "low_vram", "f16_kv", "logits_all",
	"vocab_only", "use_mmap", "use_mlock", "embedding_only", "rope_frequency_base", "rope_frequency_scale")

// isOption reports whether applyOllamaOptions reads name.
func isOption(name string) bool { return slices.Contains(optionNames, name) }

// isOllamaOption reports whether name is one of Ollama's options.
func isOllamaOption(name string) bool { return slices.Contains(ollamaOptionNames, name) }

// applyOllamaOptions reads Ollama's "options" object into o, checking
// types and ranges. Keys it does not read (optionNames) are ignored, as
// Ollama ignores those it does not know; the native API refuses them
// first (checkJobFields).
func applyOllamaOptions(o *Options, raw map[string]any) *Error {
	for k, v := range raw {
		param := "options." + k
		var err *Error
		switch k {
		case "num_ctx":
			err = intOpt(&o.NumCtx, v, param, 1, maxCtx)
		case "num_predict":
			err = intOpt(&o.NumPredict, v, param, -2, maxPredict)
			if o.NumPredict < 0 {
				o.NumPredict = -1 // -2 (fill the context) is the same here
			}
		case "temperature":
			err = floatOpt(&o.Temperature, v, param, 0, maxTemp)
		case "top_k":
			err = intOpt(&o.TopK, v, param, 0, maxTopK)
		case "top_p":
			err = floatOpt(&o.TopP, v, param, 0, 1)
		case "min_p":
			err = floatOpt(&o.MinP, v, param, 0, 1)
		case "repeat_penalty":
			err = floatOpt(&o.RepeatPenalty, v, param, 0, maxPenalty)
			if err == nil && o.RepeatPenalty == 0 {
				o.RepeatPenalty = 1 // 0 means off in Ollama's Modelfile docs
			}
		case "repeat_last_n":
			err = intOpt(&o.RepeatLastN, v, param, -1, maxLastN)
		case "frequency_penalty":
			err = floatOpt(&o.FrequencyPenalty, v, param, -2, maxPenalty)
		case "presence_penalty":
			err = floatOpt(&o.PresencePenalty, v, param, -2, maxPenalty)
		case "seed":
			err = seedOpt(&o.Seed, v, param)
		case "stop":
			err = stopOpt(&o.Stop, v, param)
		case "num_batch":
			err = intOpt(&o.NumBatch, v, param, 1, maxBatch)
		case "num_thread":
			err = intOpt(&o.NumThread, v, param, 0, maxThreads)
		case "mirostat", "typical_p", "tfs_z":
			// Samplers glassbox does not have: their "off" values (which
			// clients send by default) are fine, any other is refused
			// rather than ignored.
			off := map[string]float64{"mirostat": 0, "typical_p": 1, "tfs_z": 1}[k]
			if f, ok := v.(float64); !ok || f != off {
				err = badRequest("unsupported", param, "%s %v is not supported (only %v, off; the samplers are temperature, top_k, top_p, min_p and the penalties)", param, v, off)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func number(v any, param string) (float64, *Error) {
	f, ok := v.(float64)
	if !ok {
		return 0, badRequest("invalid_option", param, "%s must be a number, got %s", param, jsonKind(v))
	}
	return f, nil
}

func intOpt(dst *int, v any, param string, lo, hi int) *Error {
	f, err := number(v, param)
	if err != nil {
		return err
	}
	if f != math.Trunc(f) {
		return badRequest("invalid_option", param, "%s must be a whole number, got %v", param, f)
	}
	if f < float64(lo) || f > float64(hi) {
		return badRequest("invalid_option", param, "%s is %v, outside the allowed range %d..%d", param, f, lo, hi)
	}
	*dst = int(f)
	return nil
}

func floatOpt(dst *float32, v any, param string, lo, hi float64) *Error {
	f, err := number(v, param)
	if err != nil {
		return err
	}
	if f < lo || f > hi {
		return badRequest("invalid_option", param, "%s is %v, outside the allowed range %v..%v", param, f, lo, hi)
	}
	*dst = float32(f)
	return nil
}

// seedOpt takes a whole-number seed; a negative one (Ollama's -1) means a
// fresh seed per request.
func seedOpt(dst **uint64, v any, param string) *Error {
	f, err := number(v, param)
	if err != nil {
		return err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<63 {
		return badRequest("invalid_option", param, "%s must be a whole number below 2^63, got %v", param, f)
	}
	if f < 0 {
		*dst = nil
		return nil
	}
	u := uint64(f)
	*dst = &u
	return nil
}

// stopOpt takes a string or an array of strings.
func stopOpt(dst *[]string, v any, param string) *Error {
	var stops []string
	switch x := v.(type) {
	case nil:
	case string:
		stops = []string{x}
	case []any:
		for i, s := range x {
			str, ok := s.(string)
			if !ok {
				return badRequest("invalid_option", param, "%s[%d] must be a string, got %s", param, i, jsonKind(s))
			}
			stops = append(stops, str)
		}
	default:
		return badRequest("invalid_option", param, "%s must be a string or an array of strings, got %s", param, jsonKind(v))
	}
	if len(stops) > maxStops {
		return badRequest("invalid_option", param, "%s has %d entries, at most %d are allowed", param, len(stops), maxStops)
	}
	for i, s := range stops {
		if s == "" {
			return badRequest("invalid_option", param, "%s[%d] is empty", param, i)
		}
		if len(s) > maxStopBytes {
			return badRequest("invalid_option", param, "%s[%d] is %d bytes, at most %d are allowed", param, i, len(s), maxStopBytes)
		}
	}
	*dst = stops
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// parseKeepAlive reads Ollama's keep_alive: a duration string ("5m",
// "1h30m", "-1s"), or a number of seconds (as a JSON number or a string).
// Absent: nil. Negative: forever. 0: unload at once.
func parseKeepAlive(raw json.RawMessage) (*time.Duration, *Error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	bad := func() (*time.Duration, *Error) {
		return nil, badRequest("invalid_keep_alive", "keep_alive",
			"keep_alive %s is neither a duration (\"5m\") nor a number of seconds", s)
	}
	var secs float64
	if s[0] == '"' {
		var str string
		if err := json.Unmarshal(raw, &str); err != nil {
			return bad()
		}
		if d, err := time.ParseDuration(str); err == nil {
			return clampKeepAlive(d), nil
		}
		f, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return bad()
		}
		secs = f
	} else if err := json.Unmarshal(raw, &secs); err != nil {
		return bad()
	}
	if math.Abs(secs) > maxKeepAliveS {
		secs = math.Copysign(maxKeepAliveS, secs)
	}
	return clampKeepAlive(time.Duration(secs * float64(time.Second))), nil
}

func clampKeepAlive(d time.Duration) *time.Duration {
	if d < 0 {
		d = -1
	}
	return &d
}
