//go:build unix

package tokenizer

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time: on a shared, loaded
// machine, throughput per CPU-second varies far less than per wall second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
