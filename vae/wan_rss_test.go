//go:build linux

package vae

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
)

// wanRSSHelperEnv makes the test binary bind the Wan VAE decoder of the
// file in GLASSBOX_WAN_VAE, decode once and print its memory (see
// TestWanDecodeRSS).
const wanRSSHelperEnv = "GLASSBOX_VAE_WAN_RSS_HELPER"

// wanRSSHelper ("t,n") binds the decoder, returns what the heap no longer
// needs, resets the resident high-water mark and decodes a t-frame n×n
// latent, dropping each frame; it prints the resident bytes before and the
// high-water mark after.
func wanRSSHelper(spec string) int {
	var tt, n int
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 2 }
	if _, err := fmt.Sscanf(spec, "%d,%d", &tt, &n); err != nil {
		return fail(err)
	}
	f, err := checkpoint.Open(os.Getenv("GLASSBOX_WAN_VAE"))
	if err != nil {
		return fail(err)
	}
	v, err := NewWanVAE(f)
	if err != nil {
		return fail(err)
	}
	f.Close()
	z := wanRandLatent(tt, n, n, 9)
	runtime.GC()
	debug.FreeOSMemory()
	base, err := procStatus("VmRSS")
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fail(err)
	}
	if err := v.DecodeFrames(context.Background(), testPool, z, tt, n, n, nil, func(int, []float32) error { return nil }); err != nil {
		return fail(err)
	}
	hwm, err := procStatus("VmHWM")
	if err != nil {
		return fail(err)
	}
	fmt.Printf("base %d hwm %d\n", base, hwm)
	return 0
}

// TestWanDecodeRSS decodes 2 and 5 latent frames (5 and 17 video frames)
// of a 12×12 latent in child processes: the resident set grows by the
// same amount for both (within 10 % of the plan) and by no more than the
// plan and 10 % (the Go runtime's spans and stacks).
func TestWanDecodeRSS(t *testing.T) {
	path := wanVAEFile(t)
	const n = 12
	plan := WanDecodeBytes(5, n, n)
	grew := map[int]int64{}
	for _, tt := range []int{2, 5} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), wanRSSHelperEnv+"="+fmt.Sprintf("%d,%d", tt, n), "GLASSBOX_WAN_VAE="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v: %s", err, out)
		}
		var base, hwm int64
		if _, err := fmt.Sscanf(string(out), "base %d hwm %d", &base, &hwm); err != nil {
			t.Fatalf("helper said %q: %v", out, err)
		}
		grew[tt] = hwm - base
		t.Logf("%d latent frames of %dx%d: resident %d MiB before, peak %d MiB: +%.1f MiB (plan %.1f MiB)", tt, n, n, base>>20, hwm>>20, float64(grew[tt])/(1<<20), float64(plan)/(1<<20))
		if float64(grew[tt]) > 1.1*float64(plan) {
			t.Errorf("%d frames: the decode grew the resident set by %d bytes, plan %d", tt, grew[tt], plan)
		}
	}
	if d := grew[5] - grew[2]; float64(d) > 0.1*float64(plan) {
		t.Errorf("5 latent frames grew the resident set %d bytes more than 2", d)
	}
}
