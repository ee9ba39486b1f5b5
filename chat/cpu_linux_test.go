package chat

import "syscall"

// threadCPU is the CPU time the calling thread has used, in nanoseconds.
func threadCPU() int64 {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
