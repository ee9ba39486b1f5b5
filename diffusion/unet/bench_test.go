package unet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/compute"
)

// benchEps times one Eps call on an h×w latent with one context window,
// at 1 and 2 threads; cpu-s/op is the process's CPU time per call (the
// wall time on a shared machine is noisy).
func benchEps(b *testing.B, h, w int) {
	u := openUNet(b, "f16")
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, latentChannels*h*w)
	cond := make([]float32, 77*ctxDim)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range cond {
		cond[i] = float32(rng.NormFloat64())
	}
	eps := make([]float32, len(x))
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			p := compute.NewPool(threads)
			defer p.Close()
			if err := u.Eps(context.Background(), p, x, h, w, 500, cond, 77, eps); err != nil { // warm: the state, the weights' pages
				b.Fatal(err)
			}
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				if err := u.Eps(context.Background(), p, x, h, w, 500, cond, 77, eps); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
			if hwm, ok := peakRSS(); ok {
				b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MiB")
			}
		})
	}
}

// peakRSS returns the process's peak resident set (VmHWM, Linux): the
// weights (packed on the heap, plus the file's pages the matrices alias
// and the load read) and the working memory.
func peakRSS() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// BenchmarkEps256 is one UNet call for a 256×256 image (32×32 latent).
func BenchmarkEps256(b *testing.B) { benchEps(b, 32, 32) }

// BenchmarkEps512 is one UNet call for a 512×512 image (64×64 latent).
func BenchmarkEps512(b *testing.B) { benchEps(b, 64, 64) }
