package sched

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Event kinds.
const (
	EventLoad       = "load"        // a model was loaded; Reason says why (first use, reload after eviction)
	EventLoadFailed = "load_failed" // the loader returned an error
	EventReuse      = "reuse"       // a request was served by a resident model (or joined its load)
	EventWait       = "wait"        // a request waits for running jobs to release memory
	EventEvict      = "evict"       // an idle model was unloaded to make room for another
	EventExpire     = "expire"      // an idle model's keep-alive ran out
	EventUnload     = "unload"      // unloaded on request: keep-alive 0, Unload or Close
	EventResize     = "resize"      // a resident model now holds another amount of memory (Lease.Resize)
)

// Event is one residency change, with its reason in words.
type Event struct {
	Kind     string        `json:"kind"`
	Model    string        `json:"model"`
	Bytes    int64         `json:"bytes"`
	Reason   string        `json:"reason"`
	Time     time.Time     `json:"time"`
	Duration time.Duration `json:"duration_ns,omitempty"` // load time, or how long the model was idle
}

func (e Event) String() string { return fmt.Sprintf("%s %s: %s", e.Kind, e.Model, e.Reason) }

// KeepAlive is how long a model stays resident once no job uses it. The
// zero value means the residency's default.
type KeepAlive struct {
	d   time.Duration
	set bool
}

// Keep returns a keep-alive of d: 0 unloads as soon as the model is
// released, a negative d keeps it until it is evicted or unloaded.
func Keep(d time.Duration) KeepAlive { return KeepAlive{d: d, set: true} }

// KeepForever keeps a model resident until evicted or unloaded.
var KeepForever = Keep(-1)

// DefaultKeepAlive applies when neither the request nor the Config sets one.
const DefaultKeepAlive = 5 * time.Minute

// IsSet reports whether k was given (the zero value is not).
func (k KeepAlive) IsSet() bool { return k.set }

// Duration is k's duration: negative means forever.
func (k KeepAlive) Duration() time.Duration { return k.d }

func (k KeepAlive) String() string {
	switch {
	case !k.set:
		return "default"
	case k.d < 0:
		return "forever"
	case k.d == 0:
		return "0 (unload when done)"
	}
	return k.d.String()
}

// ParseKeepAlive reads a keep-alive as Ollama's keep_alive does: a Go
// duration ("5m", "1h30m", "0"), or a plain number of seconds; negative
// values mean forever. The empty string is the default.
func ParseKeepAlive(s string) (KeepAlive, error) {
	if s == "" {
		return KeepAlive{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return Keep(d), nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(secs, 0) && !math.IsNaN(secs) && math.Abs(secs) < 1e9 {
		return Keep(time.Duration(secs * float64(time.Second))), nil
	}
	return KeepAlive{}, fmt.Errorf("keep-alive %q: want a duration such as 5m, 0 or -1", s)
}

// fmtBytes prints a size in binary units ("9.8 GiB").
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.3g %s", f, [...]string{"B", "KiB", "MiB", "GiB", "TiB"}[i])
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
