//go:build !linux

package compute

import "time"

var testStart = time.Now()

// procCPU is wall time elsewhere (no process CPU clock in package syscall
// on every OS): the benchmarks' "cpu" rates are then the wall-clock rate
// times their thread count, not a measure apart from the neighbours.
func procCPU() time.Duration { return time.Since(testStart) }
