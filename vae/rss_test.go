//go:build linux

package vae

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/internal/testhome"
)

// rssHelperEnv makes the test binary decode once and exit (see
// TestTiledDecodeRSS): the parent measures the child's peak RSS.
const rssHelperEnv = "GLASSBOX_VAE_RSS_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(rssHelperEnv); spec != "" {
		os.Exit(rssHelper(spec))
	}
	if spec := os.Getenv(klRSSHelperEnv); spec != "" {
		os.Exit(klRSSHelper(spec))
	}
	if spec := os.Getenv(wanRSSHelperEnv); spec != "" {
		os.Exit(wanRSSHelper(spec))
	}
	testhome.Main(m)
}

// rssHelper decodes an n×n latent with the given tile ("n,tile").
func rssHelper(spec string) int {
	var n, tile int
	if _, err := fmt.Sscanf(spec, "%d,%d", &n, &tile); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dir := os.Getenv("GLASSBOX_SHARED")
	dec, err := OpenDecoder(dir + "/models/taef2/taef2_decoder.pth")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	z := make([]float32, LatentChannels*n*n)
	for i := range z {
		z[i] = float32(i%7)/3 - 1
	}
	if _, err := dec.Decode(context.Background(), z, n, n, Options{Runner: testPool, Tile: tile}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The peak of this process's own address space: the parent's rusage
	// of a child also counts the parent's memory, which the child shares
	// between the fork and the exec.
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Println(line)
		}
	}
	return 0
}

// vmHWM returns the bytes of the "VmHWM: N kB" line in out.
func vmHWM(out []byte) (int64, error) {
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM line in the helper's output %q", out)
}

// TestTiledDecodeRSS runs a tiled decode in a child process and checks its
// peak resident memory against the plan: activations + output + weights,
// plus a fixed allowance for the Go runtime, the binary and the load
// stage's temporaries. The untiled plan exceeds that bound, so the check
// can fail. 512×512 by default, 1024×1024 with GLASSBOX_LONG=1.
func TestTiledDecodeRSS(t *testing.T) {
	if conv.Kernel() == "generic" {
		t.Skip("generic kernels: too slow for this size")
	}
	_, dec := models(t) // also checks the shared data is there
	dir, err := sharedDir()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ n, tile int }{{64, 48}}
	if os.Getenv("GLASSBOX_LONG") != "" {
		cases = append(cases, struct{ n, tile int }{128, 80})
	}
	const allowance = 64 << 20
	for _, c := range cases {
		t.Run(strconv.Itoa(Scale*c.n), func(t *testing.T) {
			tiled, _ := PlanDecode(c.n, c.n, c.tile, 0)
			whole, _ := PlanDecode(c.n, c.n, 0, 0)
			bound := tiled.Total + dec.WeightBytes() + allowance
			if whole.Total <= bound {
				t.Fatalf("untiled plan %d fits the tiled bound %d: the test could not fail", whole.Total, bound)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), rssHelperEnv+"="+fmt.Sprintf("%d,%d", c.n, c.tile), "GLASSBOX_SHARED="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v: %s", err, out)
			}
			rss, err := vmHWM(out)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v: peak RSS %d MiB, bound %d MiB (untiled plan %d MiB)", tiled, rss>>20, bound>>20, whole.Total>>20)
			if rss > bound {
				t.Errorf("peak RSS %d bytes exceeds the plan's %d + weights %d + allowance %d", rss, tiled.Total, dec.WeightBytes(), allowance)
			}
		})
	}
}

func sharedDir() (string, error) { return shared.Dir() }
