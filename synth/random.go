package synth

import "math/rand/v2"

// noise draws approximately normal numbers with integer arithmetic only,
// so the weights are bit-identical on every platform: each value is the
// sum of four independent uniform 16-bit integers (one PCG output),
// centred and scaled to the wanted standard deviation. By the central
// limit theorem the sum is close to normal (Irwin–Hall with n = 4), and
// it is bounded at ±√12 ≈ 3.46σ, which suits weights.
type noise struct {
	r     *rand.PCG
	scale float64 // std / std(sum of four uniforms)
}

// sumStd is the standard deviation of the sum of four uniform integers in
// [0, 65535]: sqrt(4 · (65536² − 1) / 12).
const sumStd = 37837.22656571238

func newNoise(seed, stream uint64, std float64) *noise {
	return &noise{r: rand.NewPCG(seed, stream), scale: std / sumStd}
}

// fill sets x[i] = offset + N(0, std²)-ish.
func (n *noise) fill(x []float32, offset float32) {
	for i := range x {
		u := n.r.Uint64()
		s := int64(u&0xffff) + int64(u>>16&0xffff) + int64(u>>32&0xffff) + int64(u>>48)
		x[i] = offset + float32(float64(2*s-4*65535)*0.5*n.scale)
	}
}
