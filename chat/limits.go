package chat

import (
	"fmt"
	"time"
)

// Limits bounds one render of a template. A template comes from a model
// file, so it may try to build a string of terabytes, loop forever or
// recurse until the stack is gone; with these limits it fails instead, in
// the encode stage, with a *LimitError naming the limit and the numbers.
// The zero value of a field means its default (DefaultLimits). Memory is
// bounded by a small multiple of MaxBuilt plus MaxOutput, whatever the
// template does.
type Limits struct {
	// MaxOutput bounds the prompt, in bytes.
	MaxOutput int64
	// MaxValue bounds any one string the template builds or prints
	// (concatenation, repetition, join, replace, a macro's output, a list
	// printed), in bytes.
	MaxValue int64
	// MaxItems bounds any one list or dict the template builds (range(),
	// +, append, split, list of a string, …), in items.
	MaxItems int64
	// MaxBuilt bounds the bytes built in all by one render: strings,
	// list and dict items (32 bytes each), the text of loop and macro
	// bodies. What is no longer used is garbage, so this bounds memory
	// from above, not what a render holds at once.
	MaxBuilt int64
	// MaxSteps bounds the work: operations, loop iterations, values
	// visited when comparing or printing, and every 4 KiB of text scanned.
	MaxSteps int64
	// MaxDepth bounds how deeply macro calls nest, and values: a list
	// holding itself is printed as nested without end.
	MaxDepth int
	// MaxTime bounds the wall time of a render (Template.Now is the clock).
	MaxTime time.Duration
}

// DefaultLimits are the limits a zero Limits field stands for: far above
// what real templates need (a 21-message conversation takes the templates
// of testdata/templates 270 to 440 steps and has them build 10 to 36 kB),
// far below what would hurt a server.
var DefaultLimits = Limits{
	MaxOutput: 16 << 20,
	MaxValue:  16 << 20,
	MaxItems:  1 << 20,
	MaxBuilt:  256 << 20,
	MaxSteps:  1 << 20,
	MaxDepth:  200,
	MaxTime:   10 * time.Second,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	pick := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&l.MaxOutput, d.MaxOutput)
	pick(&l.MaxValue, d.MaxValue)
	pick(&l.MaxItems, d.MaxItems)
	pick(&l.MaxBuilt, d.MaxBuilt)
	pick(&l.MaxSteps, d.MaxSteps)
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxTime <= 0 {
		l.MaxTime = d.MaxTime
	}
	return l
}

// LimitError is a render stopped by a limit.
type LimitError struct {
	Limit string // the Limits field: "MaxValue", "MaxSteps", …
	Line  int    // the template line of the operation, 0 if unknown
	What  string // what would have passed the limit: "~ would build a string of"
	Need  int64  // how much, in the limit's unit
	Unit  string // "bytes", "items", "steps", "levels deep", "ms"
	Max   int64  // the limit
}

// Error reads like "line 1: ~ would build a string of 20971520 bytes;
// chat.Limits.MaxValue is 16777216".
func (e *LimitError) Error() string {
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf("line %d: ", e.Line)
	}
	return fmt.Sprintf("%s%s %d %s; chat.Limits.%s is %d", at, e.What, e.Need, e.Unit, e.Limit, e.Max)
}
