//go:build amd64 && !purego

package sample

import (
	"os"

	"golang.org/x/sys/cpu"
)

// useExpSumAsm: AVX2 is there and the generic kernels were not asked for
// (GLASSBOX_NOASM=1 or GLASSBOX_KERNEL=generic, as for package kernel);
// useAVX512 also unless GLASSBOX_KERNEL=avx2 keeps the AVX2 tier.
var (
	useExpSumAsm = cpu.X86.HasAVX2 && !noAsm()
	useAVX512    = useExpSumAsm && cpu.X86.HasAVX512F && os.Getenv("GLASSBOX_KERNEL") != "avx2"
)

func noAsm() bool {
	v := os.Getenv("GLASSBOX_NOASM")
	return (v != "" && v != "0") || os.Getenv("GLASSBOX_KERNEL") == "generic"
}

// expSumAsm computes expSumGeneric's w[i] and running sum for the longest
// prefix of whole vectors of candidates (eight with AVX-512, four with
// AVX2) whose arguments all lie in [-700, 700]; it returns that prefix's
// length and the sum so far.
func expSumAsm(c []cand, mx, invT float64, w []float64, total float64) (int, float64) {
	n := min(len(c), len(w))
	if useAVX512 && n >= 8 {
		return expSumAVX512(&c[0], n&^7, mx, invT, &w[0], total)
	}
	if n < 4 {
		return 0, total
	}
	return expSumAVX2(&c[0], n&^3, mx, invT, &w[0], total)
}

//go:noescape
func expSumAVX2(c *cand, n int, mx, invT float64, w *float64, total float64) (done int, sum float64)

//go:noescape
func expSumAVX512(c *cand, n int, mx, invT float64, w *float64, total float64) (done int, sum float64)
