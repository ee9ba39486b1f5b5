package pth

import (
	"errors"
	"fmt"
	"strings"
)

// Stage is the pipeline stage every error of this package belongs to.
const Stage = "load"

// Sentinel causes, for errors.Is.
var (
	ErrNotZip       = errors.New("not a PyTorch zip checkpoint")
	ErrCompressed   = errors.New("compressed archive entry (only stored entries are supported)")
	ErrGlobal       = errors.New("pickle refers to a global that is not allowed")
	ErrOpcode       = errors.New("unsupported pickle opcode")
	ErrPickle       = errors.New("malformed pickle")
	ErrTruncated    = errors.New("truncated")
	ErrNoTensor     = errors.New("tensor not found")
	ErrNotContig    = errors.New("tensor is not contiguous")
	ErrStorage      = errors.New("bad tensor storage")
	ErrByteOrder    = errors.New("unsupported byte order")
	ErrWrongDType   = errors.New("tensor has an unsupported dtype")
	ErrLimitReached = errors.New("pickle exceeds a safety limit")
)

// maxNameText bounds a tensor or entry name in an error's text (names come
// from the file and may be of any length).
const maxNameText = 256

func clip(name string) string {
	if len(name) > maxNameText {
		return name[:maxNameText] + "…"
	}
	return name
}

// Error is a checkpoint failure with its location.
type Error struct {
	Path   string // file path, if known
	Entry  string // archive entry, if any
	Offset int64  // byte offset inside Entry, -1 if not applicable
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
	if e.Entry != "" {
		fmt.Fprintf(&b, "entry %q: ", clip(e.Entry))
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "at byte %d: ", e.Offset)
	}
	if e.Tensor != "" {
		fmt.Fprintf(&b, "tensor %q: ", clip(e.Tensor))
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

func wrapf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
