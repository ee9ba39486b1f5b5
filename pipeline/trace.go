package pipeline

import (
	"context"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// Trace is a set of hooks an engine calls as a job moves through the
// stages, carried in a context like net/http/httptrace.ClientTrace. Every
// hook is optional. Hooks are called on the job's goroutine, in order, and
// must return quickly: they only record.
type Trace struct {
	StageStart   func(s Stage)
	StageDone    func(s Stage, st StageStats)
	StageSkipped func(s Stage, reason string) // e.g. load: "model already loaded, 0 ms"
	// Progress reports load bytes, prefill tokens, generated tokens,
	// diffusion steps; for StageQueued, done is the position (0 = next) and
	// total the queue length. total is 0 when unknown.
	Progress func(s Stage, done, total int64)
	Token    func(tok api.Token) // a generated token, with its logprob when asked for
	Warning  func(code, message string)
	// PartDone reports a finished part of stage s: a component loaded
	// ("UNet"), a sampling step ("step 3/20"), with its time and numbers.
	PartDone func(s Stage, part string, d time.Duration, st StageStats)
	// Preview is a cheap picture of an image being made.
	Preview func(p api.Preview)

	mu     sync.Mutex
	warned map[string]bool // codes of the warnings reported (see Warned)
	parts  [2]*Trace       // a composed trace's two traces
}

type traceKey struct{}

// WithTrace returns a context carrying t. If ctx already carries a trace,
// both are called, t's hooks first (as httptrace composes traces).
func WithTrace(ctx context.Context, t *Trace) context.Context {
	if t == nil {
		return ctx
	}
	if old, ok := ctx.Value(traceKey{}).(*Trace); ok && old != nil {
		t = compose(t, old)
	}
	return context.WithValue(ctx, traceKey{}, t)
}

// OnlyTrace returns a context carrying t alone: the hooks of a trace ctx
// already carries are not called (WithTrace would call both). A caller
// uses it to pass on only some of a job's hooks, as a backend does when
// the residency it asks for memory reports its own stage skips.
func OnlyTrace(ctx context.Context, t *Trace) context.Context {
	if t == nil {
		t = noTrace
	}
	return context.WithValue(ctx, traceKey{}, t)
}

// noTrace is returned when a context carries none; all its hooks are nil.
var noTrace = &Trace{}

// TraceFrom returns the trace in ctx, never nil: with no trace, every hook
// is a no-op.
func TraceFrom(ctx context.Context) *Trace {
	if ctx != nil {
		if t, ok := ctx.Value(traceKey{}).(*Trace); ok && t != nil {
			return t
		}
	}
	return noTrace
}

// OnStageStart calls the StageStart hook, if any. The On methods are safe
// on a nil *Trace.
func (t *Trace) OnStageStart(s Stage) {
	if t != nil && t.StageStart != nil {
		t.StageStart(s)
	}
}

// OnStageDone calls the StageDone hook, if any.
func (t *Trace) OnStageDone(s Stage, st StageStats) {
	if t != nil && t.StageDone != nil {
		t.StageDone(s, st)
	}
}

// OnStageSkipped calls the StageSkipped hook, if any.
func (t *Trace) OnStageSkipped(s Stage, reason string) {
	if t != nil && t.StageSkipped != nil {
		t.StageSkipped(s, reason)
	}
}

// OnProgress calls the Progress hook, if any.
func (t *Trace) OnProgress(s Stage, done, total int64) {
	if t != nil && t.Progress != nil {
		t.Progress(s, done, total)
	}
}

// OnToken calls the Token hook, if any, with a token and its text.
func (t *Trace) OnToken(id int, text string) { t.OnTokenInfo(api.Token{ID: id, Text: text}) }

// OnTokenInfo calls the Token hook, if any.
func (t *Trace) OnTokenInfo(tok api.Token) {
	if t != nil && t.Token != nil {
		t.Token(tok)
	}
}

// OnPartDone calls the PartDone hook, if any.
func (t *Trace) OnPartDone(s Stage, part string, d time.Duration, st StageStats) {
	if t != nil && t.PartDone != nil {
		t.PartDone(s, part, d, st)
	}
}

// OnPreview calls the Preview hook, if any.
func (t *Trace) OnPreview(p api.Preview) {
	if t != nil && t.Preview != nil {
		t.Preview(p)
	}
}

// OnWarning calls the Warning hook, if any, and remembers the code.
func (t *Trace) OnWarning(code, message string) {
	if t == nil {
		return
	}
	if t.parts[0] == nil && t != noTrace { // a composed trace's parts remember
		t.mu.Lock()
		if t.warned == nil {
			t.warned = map[string]bool{}
		}
		t.warned[code] = true
		t.mu.Unlock()
	}
	if t.Warning != nil {
		t.Warning(code, message)
	}
}

// Warned reports whether a warning with this code was reported through t
// (so that a later stage does not repeat one an earlier stage gave).
func (t *Trace) Warned(code string) bool {
	if t == nil || t == noTrace {
		return false
	}
	if t.parts[0] != nil {
		return t.parts[0].Warned(code) || t.parts[1].Warned(code)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.warned[code]
}

// compose returns a trace calling a's hooks, then b's.
func compose(a, b *Trace) *Trace {
	return &Trace{
		StageStart: func(s Stage) { a.OnStageStart(s); b.OnStageStart(s) },
		StageDone:  func(s Stage, st StageStats) { a.OnStageDone(s, st); b.OnStageDone(s, st) },
		StageSkipped: func(s Stage, reason string) {
			a.OnStageSkipped(s, reason)
			b.OnStageSkipped(s, reason)
		},
		Progress: func(s Stage, done, total int64) { a.OnProgress(s, done, total); b.OnProgress(s, done, total) },
		Token:    func(tok api.Token) { a.OnTokenInfo(tok); b.OnTokenInfo(tok) },
		Warning:  func(code, message string) { a.OnWarning(code, message); b.OnWarning(code, message) },
		PartDone: func(s Stage, part string, d time.Duration, st StageStats) {
			a.OnPartDone(s, part, d, st)
			b.OnPartDone(s, part, d, st)
		},
		Preview: func(p api.Preview) { a.OnPreview(p); b.OnPreview(p) },
		parts:   [2]*Trace{a, b},
	}
}
