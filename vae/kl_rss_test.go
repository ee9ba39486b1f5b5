//go:build linux

package vae

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
)

// klRSSHelperEnv makes the test binary bind the KL VAE of the checkpoint
// in GLASSBOX_KL_CHECKPOINT, decode once and print its memory (see
// TestKLDecodeRSS).
const klRSSHelperEnv = "GLASSBOX_VAE_KL_RSS_HELPER"

// procStatus returns a "Vm…: N kB" field of /proc/self/status in bytes.
func procStatus(field string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// klRSSHelper ("n,tile,overlap") binds the VAE, closes the checkpoint, returns
// what the Go heap no longer needs to the system, resets the resident
// high-water mark (clear_refs 5) and decodes an n×n latent; it prints the
// resident bytes before the decode and the high-water mark after.
func klRSSHelper(spec string) int {
	var n, tile, overlap int
	if _, err := fmt.Sscanf(spec, "%d,%d,%d", &n, &tile, &overlap); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 2 }
	f, err := checkpoint.Open(os.Getenv("GLASSBOX_KL_CHECKPOINT"))
	if err != nil {
		return fail(err)
	}
	c, err := checkpoint.SD1Components(f, nil)
	if err != nil {
		return fail(err)
	}
	k, err := NewKL(c.VAE.Source)
	if err != nil {
		return fail(err)
	}
	f.Close()
	z := randLatent(n, n, 9)
	runtime.GC()
	debug.FreeOSMemory()
	base, err := procStatus("VmRSS")
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fail(err)
	}
	if _, err := k.Decode(context.Background(), testPool, z, n, n, KLDecodeOptions{Tile: tile, Overlap: overlap}); err != nil {
		return fail(err)
	}
	hwm, err := procStatus("VmHWM")
	if err != nil {
		return fail(err)
	}
	fmt.Printf("base %d hwm %d\n", base, hwm)
	return 0
}

// TestKLDecodeRSS decodes in a child process and checks the growth of its
// resident memory over the decode against the plan: within 10 % above it
// (the Go runtime's spans and the pool's stacks), and not far below. 256²
// untiled by default; with GLASSBOX_LONG=1 also 512² untiled and in tiles.
func TestKLDecodeRSS(t *testing.T) {
	skipGeneric(t)
	path := sdtest.SD15(t, "f16")
	cases := []struct{ n, tile, overlap int }{{32, 0, 0}}
	if os.Getenv("GLASSBOX_LONG") != "" {
		cases = append(cases, struct{ n, tile, overlap int }{64, 0, 0}, struct{ n, tile, overlap int }{64, 40, 8})
	}
	for _, c := range cases {
		p, err := PlanKLDecode(c.n, c.n, c.tile, c.overlap)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%d-tile%d", Scale*c.n, c.tile), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), klRSSHelperEnv+"="+fmt.Sprintf("%d,%d,%d", c.n, c.tile, c.overlap), "GLASSBOX_KL_CHECKPOINT="+path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v: %s", err, out)
			}
			var base, hwm int64
			if _, err := fmt.Sscanf(string(out), "base %d hwm %d", &base, &hwm); err != nil {
				t.Fatalf("helper said %q: %v", out, err)
			}
			grew := hwm - base
			t.Logf("%v: resident %d MiB before, peak %d MiB: +%d MiB (plan %d MiB)", p, base>>20, hwm>>20, grew>>20, p.Total>>20)
			if float64(grew) > 1.1*float64(p.Total) || float64(grew) < 0.8*float64(p.Total) {
				t.Errorf("the decode grew the resident set by %d bytes, plan %d", grew, p.Total)
			}
		})
	}
}
