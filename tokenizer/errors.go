package tokenizer

import (
	"errors"
	"fmt"
)

// Stage is the pipeline stage every error of this package belongs to.
const Stage = "encode"

// Sentinel causes, for errors.Is.
var (
	ErrMissing     = errors.New("tokenizer metadata missing")
	ErrInvalid     = errors.New("invalid tokenizer metadata")
	ErrUnsupported = errors.New("unsupported tokenizer")
	ErrNoToken     = errors.New("no token can represent the text")
	ErrTooLong     = errors.New("text too long")
)

// Error is a tokenizer failure: what was being done, the metadata key or
// token involved, and the cause.
type Error struct {
	Op  string // "load" or "encode"
	Key string // metadata key, if any
	Err error  // the cause
}

// Stage reports the pipeline stage the error belongs to ("encode").
func (e *Error) Stage() string { return Stage }

func (e *Error) Error() string {
	s := "encode: tokenizer " + e.Op
	if e.Key != "" {
		s += " " + e.Key
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func loadErr(key string, sentinel error, format string, args ...any) error {
	return &Error{Op: "load", Key: key, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
