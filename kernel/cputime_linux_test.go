package kernel

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time the calling OS thread has used; callers
// lock the goroutine to its thread. On a busy shared machine this measures
// a kernel's speed where wall time would measure the neighbours.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
