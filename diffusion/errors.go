package diffusion

import (
	"errors"
	"fmt"
)

// Error is a bad argument to this package: a schedule, a strength, a σ
// list or a latent that cannot be sampled.
type Error struct{ Err error }

func (e *Error) Error() string { return "generate: " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Stage reports the pipeline stage the error belongs to.
func (e *Error) Stage() string { return "generate" }

func argErrorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// ErrNonFinite marks a step that made a NaN or an infinity in the latent.
var ErrNonFinite = errors.New("non-finite latent")

// StepError is a sampling step that failed: its denoiser call failed or
// was cancelled (Err is that error), or it made a non-finite latent (Err is
// ErrNonFinite, Index the first bad element, Count how many).
type StepError struct {
	Method      Method
	Step, Steps int     // 1-based
	Sigma       float32 // the step's σ
	Index       int
	Value       float32
	Count       int
	Err         error
}

func (e *StepError) Error() string {
	where := fmt.Sprintf("generate: %s step %d/%d (sigma %.6g)", e.Method, e.Step, e.Steps, e.Sigma)
	if errors.Is(e.Err, ErrNonFinite) {
		return fmt.Sprintf("%s made a non-finite latent: x[%d] = %g (%d of the values)", where, e.Index, e.Value, e.Count)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Stage reports the pipeline stage the error belongs to.
func (e *StepError) Stage() string { return "generate" }
