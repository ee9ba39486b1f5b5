package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/kprobe"
	"github.com/glassbox-ai/glassbox/compute/roofline"
	"github.com/glassbox-ai/glassbox/plan"
)

// autoProbe lets 'glassbox plan' measure what this machine's cache lacks
// (the roofline once per machine, the kernel speeds once per build and
// thread count) before planning. Run and serve only read the caches: a
// probe inside a job would add its buffers to the job's peak memory.
// Tests turn it off (they must not write the user's glassbox home).
var autoProbe = true

// kprobeOptions and rooflineOptions tune the probes 'glassbox plan' runs
// (tests shrink them).
var (
	kprobeOptions   kprobe.Options
	rooflineOptions roofline.Options
)

// probeThreads are the thread counts whose kernel speeds a plan of this
// machine uses: one thread, the engine's default, and the job's.
func probeThreads(job int) []int {
	ts := []int{1}
	for _, t := range []int{compute.PhysicalCores(), job} {
		if t > 0 && !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	return ts
}

// measureLocal runs the probes whose results this machine's caches lack
// for a job on threads workers, saying so on w (a few seconds, once).
func measureLocal(w io.Writer, threads int) error {
	if _, err := roofline.Load(0); err != nil {
		path, _ := roofline.CachePath()
		fmt.Fprintf(w, "plan: measuring this machine's memory bandwidth once (cached in %s) ...\n", path)
		if _, _, err := roofline.Get(0, false, rooflineOptions); err != nil {
			return fmt.Errorf("plan: roofline probe: %w", err)
		}
	}
	for _, t := range probeThreads(threads) {
		if _, err := kprobe.Load(t); err == nil {
			continue
		}
		fmt.Fprintf(w, "plan: measuring glassbox's kernels on %d thread(s) once for this build (cached in %s) ...\n", t, kprobe.CachePath())
		if _, _, err := kprobe.Get(t, false, kprobeOptions); err != nil {
			return fmt.Errorf("plan: kernel probe: %w", err)
		}
	}
	return nil
}

// localKernels returns the cached kernel speeds of this machine and build
// for the thread counts a plan may ask for, each with the read bandwidth
// at its thread count: the roofline's one-thread and N-thread figures
// (linear between them, the N-thread figure above N). Without a cached
// roofline the device's (estimated) bandwidth stands in.
func localKernels(dev *plan.Device, threads int) []plan.Kernels {
	r, rerr := roofline.Load(0)
	if rerr != nil {
		var ok bool
		if r, ok = newestRoofline(); ok {
			rerr = nil
		}
	}
	bandwidth := func(t int) (float64, string) {
		if rerr != nil || r.ReadGBs1 <= 0 || r.ReadGBsN <= 0 {
			return dev.Bandwidth, "estimated bandwidth"
		}
		b1, bn := r.ReadGBs1*1e9, r.ReadGBsN*1e9
		switch {
		case t <= 1:
			return b1, "roofline 1 thread"
		case t >= r.Threads:
			return bn, fmt.Sprintf("roofline %d threads", r.Threads)
		}
		return b1 + (bn-b1)*float64(t-1)/float64(r.Threads-1), fmt.Sprintf("roofline, between 1 and %d threads", r.Threads)
	}
	var out []plan.Kernels
	for _, t := range probeThreads(threads) {
		k, err := kprobe.Load(t)
		if err != nil {
			continue
		}
		bw, bsrc := bandwidth(t)
		pk := plan.Kernels{Threads: t, Bandwidth: bw, MatMul: map[string]float64{}, MatMulRowS: map[string]float64{}, Prefill: map[string]float64{}, CallS: k.CallSeconds,
			AttnKVBytesPerS: k.AttnKVBytesPerS, AttnElemsPerS: k.AttnElemsPerS, AttnCallS: k.AttnCallSeconds, AttnQ8KVBytesPerS: k.AttnQ8KVBytesPerS, VecElemsPerS: k.VecElemsPerS,
			Source: fmt.Sprintf("kernel probe of %s, %s; %s", k.Measured.Format("2006-01-02 15:04"), k.KernelImpl, bsrc)}
		for _, f := range k.Formats {
			pk.MatMul[f.Type] = f.BytesPerS
			pk.MatMulRowS[f.Type] = f.RowSeconds
			if f.PrefillOpsPerS > 0 {
				pk.Prefill[f.Type] = f.PrefillOpsPerS
			}
		}
		out = append(out, pk)
	}
	return out
}
