package plan

import (
	"math"
	"os"
	"runtime/debug"
)

// Go's collector lets the heap grow to about twice what is live before it
// collects (GOGC=100), so a job whose plan is right about what it keeps
// can still take half as much again in garbage: the float32 copies a load
// packs and drops, a step's temporaries. A process that runs one planned
// job (the CLI's image and video commands) tells the runtime the plan's
// figure as its soft memory limit, and the collector works harder as the
// heap nears it instead (runtime/debug.SetMemoryLimit; the limit is soft:
// past it the collector spends at most about half the CPU, it never
// fails an allocation).

// HeapLimitMargin is the share above the plan's total the limit allows,
// and HeapLimitFloor the least margin: the plan's own error (it is within
// a few per cent when calibrated) and the runtime's own structures.
const (
	HeapLimitMargin = 0.25
	HeapLimitFloor  = 64 << 20
)

// setMemoryLimit is debug.SetMemoryLimit (tests replace it).
var setMemoryLimit = debug.SetMemoryLimit

// LimitHeap sets the process's soft memory limit to a job's planned total
// plus the margin, and returns the limit set; it sets nothing (0) when
// the user chose one with GOMEMLIMIT (including GOMEMLIMIT=off) or total
// is unknown.
func LimitHeap(total int64) int64 {
	if total <= 0 {
		return 0
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0
	}
	margin := max(int64(float64(total)*HeapLimitMargin), HeapLimitFloor)
	limit := total + margin
	if limit < total { // overflow
		limit = math.MaxInt64
	}
	setMemoryLimit(limit)
	return limit
}
