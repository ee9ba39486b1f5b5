package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/glassbox-ai/glassbox/api"
)

// Error is a failure attributed to a stage: the cause, the numbers behind
// it and a hint for what to try. Its message is one line:
//
//	encode: prompt has 5000 tokens but the context holds 4096 (try --ctx 8192)
type Error struct {
	Stage   Stage
	Err     error            // the cause
	Hint    string           // what to try, without "try" capitalised; may be empty
	Numbers map[string]int64 // e.g. {"tokens": 5000, "ctx": 4096}
}

// Sentinel causes, for errors.Is.
var (
	// ErrInternal marks a bug in glassbox: a panic recovered inside a stage.
	ErrInternal = errors.New("internal error")
	// ErrInterrupted marks a job that was running when its process stopped.
	ErrInterrupted = errors.New("interrupted by shutdown")
	// ErrSettings marks a job whose settings are invalid, or do not fit its
	// model (a negative context, an unknown or unusable KV cache type): the
	// request is at fault, not the machine.
	ErrSettings = errors.New("invalid settings")
)

// Errorf returns an *Error for stage with a cause formatted as fmt.Errorf
// does (so %w wraps) and the given hint.
func Errorf(stage Stage, hint string, format string, args ...any) *Error {
	return &Error{Stage: stage, Err: fmt.Errorf(format, args...), Hint: hint}
}

// Wrap attributes err to stage. An error that already has a stage (an
// *Error, or one with a Stage() string method anywhere in its chain) keeps
// it; a nil err stays nil.
func Wrap(stage Stage, err error, hint string) error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		if pe.Hint == "" && hint != "" {
			pe.Hint = hint
		}
		return err
	}
	if s, ok := StageOf(err); ok {
		stage = s
	}
	return &Error{Stage: stage, Err: err, Hint: hint}
}

// With records a number behind the error (requested vs available bytes,
// tokens vs context) and returns e, for chaining.
func (e *Error) With(name string, v int64) *Error {
	if e.Numbers == nil {
		e.Numbers = map[string]int64{}
	}
	e.Numbers[name] = v
	return e
}

// Cause is the message of the cause alone, without the stage prefix that
// stage-aware causes (gguf errors) carry themselves.
func (e *Error) Cause() string {
	if e.Err == nil {
		return "unknown error"
	}
	msg := e.Err.Error()
	return strings.TrimPrefix(msg, string(e.Stage)+": ")
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Stage))
	b.WriteString(": ")
	b.WriteString(e.Cause())
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// StageOf returns the stage an error belongs to: that of the first *Error
// in its chain, or of the first error with a Stage() string method (as
// gguf.Error has: "load").
func StageOf(err error) (Stage, bool) {
	for err != nil {
		if pe, ok := err.(*Error); ok {
			return pe.Stage, true
		}
		if s, ok := err.(interface{ Stage() string }); ok {
			return Stage(s.Stage()), true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if s, ok := StageOf(e); ok {
					return s, true
				}
			}
			return "", false
		default:
			return "", false
		}
	}
	return "", false
}

// APIError converts err to its wire form. The stage is err's own (StageOf)
// or, failing that, fallback.
func APIError(err error, fallback Stage) *api.Error {
	if err == nil {
		return nil
	}
	stage, ok := StageOf(err)
	if !ok {
		stage = fallback
	}
	out := &api.Error{Stage: string(stage), Message: oneLine(err.Error())}
	var pe *Error
	if errors.As(err, &pe) {
		out.Cause = oneLine(pe.Cause())
		out.Hint = pe.Hint
		out.Numbers = maps.Clone(pe.Numbers)
		if !strings.HasPrefix(out.Message, string(stage)+": ") {
			out.Message = string(stage) + ": " + out.Message
		}
	} else {
		out.Cause = strings.TrimPrefix(out.Message, string(stage)+": ")
		out.Message = string(stage) + ": " + out.Cause
	}
	out.Internal = errors.Is(err, ErrInternal)
	return out
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
