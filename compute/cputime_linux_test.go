package compute

import (
	"syscall"
	"time"
)

// procCPU returns the CPU time this process has used. Benchmarks divide
// work by it (and multiply by their thread count) to report rates that do
// not depend on how busy the shared machine is.
func procCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
