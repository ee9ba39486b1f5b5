package compute

import (
	"fmt"
	"math"
)

// RoPE rotates, in place, the first ropeDim dimensions of each head of x
// ([numHeads][headDim]) for position pos (Su et al. 2021, "RoFormer").
// Pair i (i < ropeDim/2) turns by θ_i = pos · base^(-2i/ropeDim) /
// freqFactors[i] (freqFactors nil = all 1, as Llama 3.1's rope_freqs).
// Normal mode pairs adjacent dims (x[2i], x[2i+1]); NeoX mode pairs
// (x[i], x[i+ropeDim/2]). Dimensions past ropeDim are left unchanged.
func RoPE(x []float32, numHeads, headDim, ropeDim, pos int, base float32, neox bool, freqFactors []float32) {
	if ropeDim <= 0 || ropeDim > headDim || ropeDim%2 != 0 || len(x) < numHeads*headDim ||
		(freqFactors != nil && len(freqFactors) < ropeDim/2) {
		panic(fmt.Sprintf("compute: RoPE: x %d floats, %d heads × %d, ropeDim %d, %d freq factors do not fit",
			len(x), numHeads, headDim, ropeDim, len(freqFactors)))
	}
	half := ropeDim / 2
	for i := range half {
		theta := float64(pos) * math.Pow(float64(base), -2*float64(i)/float64(ropeDim))
		if freqFactors != nil {
			theta /= float64(freqFactors[i])
		}
		sin, cos := math.Sincos(theta)
		s, c := float32(sin), float32(cos)
		for h := range numHeads {
			hx := x[h*headDim : h*headDim+ropeDim]
			a, b := 2*i, 2*i+1
			if neox {
				a, b = i, i+half
			}
			x0, x1 := hx[a], hx[b]
			hx[a] = x0*c - x1*s
			hx[b] = x0*s + x1*c
		}
	}
}
