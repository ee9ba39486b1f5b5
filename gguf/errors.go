package gguf

import (
	"errors"
	"fmt"
	"strings"
)

// Stage is the pipeline stage every error of this package belongs to.
const Stage = "load"

// Sentinel causes, for errors.Is.
var (
	ErrTruncated   = errors.New("file is truncated")
	ErrBadMagic    = errors.New("not a GGUF file")
	ErrVersion     = errors.New("unsupported GGUF version")
	ErrMissingKey  = errors.New("metadata key not found")
	ErrWrongType   = errors.New("metadata value has the wrong type")
	ErrNoTensor    = errors.New("tensor not found")
	ErrInvalid     = errors.New("invalid GGUF file")
	ErrUnknownType = errors.New("unknown type")
)

// Error is a GGUF failure with its location: the file, the byte offset where
// the offending item starts, and the metadata key or tensor name involved.
type Error struct {
	Path   string // file path, if known
	Offset int64  // byte offset in the file, -1 if not applicable
	Key    string // metadata key, if any
	Tensor string // tensor name, if any
	Err    error  // the cause
}

// Stage reports the pipeline stage the error belongs to ("load").
func (e *Error) Stage() string { return Stage }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(Stage)
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "at byte %d: ", e.Offset)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	if e.Tensor != "" {
		fmt.Fprintf(&b, "tensor %q: ", e.Tensor)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// wrapf builds a cause that matches sentinel with errors.Is.
func wrapf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
