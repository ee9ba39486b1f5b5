//go:build unix

package wan

import (
	"syscall"
	"time"
)

// cpuTime returns the process's user+system CPU time, so benchmarks on a
// shared, oversubscribed machine can report the work done next to the
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
