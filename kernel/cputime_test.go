package kernel

import "runtime"

// cpuRate runs f reps times on one locked thread and returns reps per
// CPU-second.
func cpuRate(reps int, f func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	for range reps {
		f()
	}
	return float64(reps) / (threadCPU() - t0).Seconds()
}
