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
	checkRoPE(x, numHeads, headDim, ropeDim, freqFactors)
	for i := range ropeDim / 2 {
		s, c := ropeAngle(i, pos, ropeDim, base, freqFactors)
		rotatePair(x, numHeads, headDim, ropeDim, i, neox, s, c)
	}
}

// Rotary is RoPE with its angles kept for the next call: the heads of q
// and k in every layer of a decode step turn by the same angles, which
// RoPE recomputes per call (a power and a sine and cosine per pair: 0.12 of
// the 0.15 ms that RoPE took per step of a 1B model, 16 layers). Apply
// gives RoPE's bits. The zero value is ready to use; a Rotary is not for
// concurrent use (a session owns one).
type Rotary struct {
	pos, dim int
	base     float32
	ff       []float32
	sin, cos []float32
}

// Apply is RoPE(x, numHeads, headDim, ropeDim, pos, base, neox,
// freqFactors), computing the angles only when pos, ropeDim, base or
// freqFactors differ from the last call's.
func (r *Rotary) Apply(x []float32, numHeads, headDim, ropeDim, pos int, base float32, neox bool, freqFactors []float32) {
	checkRoPE(x, numHeads, headDim, ropeDim, freqFactors)
	half := ropeDim / 2
	if r.sin == nil || r.pos != pos || r.dim != ropeDim || r.base != base || !sameFloats(r.ff, freqFactors) {
		if cap(r.sin) < half {
			r.sin, r.cos = make([]float32, half), make([]float32, half)
		}
		r.sin, r.cos = r.sin[:half], r.cos[:half]
		for i := range half {
			r.sin[i], r.cos[i] = ropeAngle(i, pos, ropeDim, base, freqFactors)
		}
		r.pos, r.dim, r.base, r.ff = pos, ropeDim, base, freqFactors
	}
	for i := range half {
		rotatePair(x, numHeads, headDim, ropeDim, i, neox, r.sin[i], r.cos[i])
	}
}

// sameFloats reports whether a and b are the same slice (a model's
// frequency factors are one slice for every call).
func sameFloats(a, b []float32) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func checkRoPE(x []float32, numHeads, headDim, ropeDim int, freqFactors []float32) {
	if ropeDim <= 0 || ropeDim > headDim || ropeDim%2 != 0 || len(x) < numHeads*headDim ||
		(freqFactors != nil && len(freqFactors) < ropeDim/2) {
		panic(fmt.Sprintf("compute: RoPE: x %d floats, %d heads × %d, ropeDim %d, %d freq factors do not fit",
			len(x), numHeads, headDim, ropeDim, len(freqFactors)))
	}
}

// ropeAngle returns the sine and cosine of pair i's angle at pos.
func ropeAngle(i, pos, ropeDim int, base float32, freqFactors []float32) (sin, cos float32) {
	theta := float64(pos) * math.Pow(float64(base), -2*float64(i)/float64(ropeDim))
	if freqFactors != nil {
		theta /= float64(freqFactors[i])
	}
	s, c := math.Sincos(theta)
	return float32(s), float32(c)
}

// rotatePair turns pair i of every head by the angle of sine s, cosine c.
func rotatePair(x []float32, numHeads, headDim, ropeDim, i int, neox bool, s, c float32) {
	a, b := 2*i, 2*i+1
	if neox {
		a, b = i, i+ropeDim/2
	}
	for h := range numHeads {
		hx := x[h*headDim : h*headDim+ropeDim]
		x0, x1 := hx[a], hx[b]
		hx[a] = x0*c - x1*s
		hx[b] = x0*s + x1*c
	}
}
