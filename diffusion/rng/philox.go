package rng

import "math"

// Philox is the counter-based generator of torch's CUDA randn (Salmon et
// al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011: Philox
// 4×32 with 10 rounds), with the Box–Muller transform of A1111's
// rng_philox.py as sd.cpp ports it (src/core/rng_philox.hpp: PhiloxRNG).
// The zero value is seed 0, call 0.
type Philox struct {
	seed   uint64
	offset uint32 // the next call's number
}

// NewPhilox returns a Philox generator at call 0 of seed.
func NewPhilox(seed uint64) *Philox { return &Philox{seed: seed} }

// Seed resets the generator to call 0 of seed.
func (p *Philox) Seed(seed uint64) { p.seed, p.offset = seed, 0 }

// Call is the number of the next Randn call since Seed.
func (p *Philox) Call() uint32 { return p.offset }

// Randn fills dst with call Call()'s values and advances to the next call.
func (p *Philox) Randn(dst []float32) {
	for i := range dst {
		g0, g1 := philox(p.offset, uint32(i), p.seed)
		dst[i] = boxMuller(g0, g1)
	}
	p.offset++
}

// The Philox 4×32 constants: round multipliers and the key schedule's
// Weyl increments (the golden ratio and sqrt(3)-1 in 32-bit fixed point).
const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// philox returns the first two output words of Philox 4×32-10 for the
// counter (offset, 0, i, 0) and the key (seed low, seed high).
func philox(offset, i uint32, seed uint64) (uint32, uint32) {
	c0, c1, c2, c3 := offset, uint32(0), i, uint32(0)
	k0, k1 := uint32(seed), uint32(seed>>32)
	for r := 0; r < 10; r++ {
		if r > 0 {
			k0 += philoxW0
			k1 += philoxW1
		}
		v1 := uint64(c0) * philoxM0
		v2 := uint64(c2) * philoxM1
		c0, c1, c2, c3 = uint32(v2>>32)^c1^k0, uint32(v2), uint32(v1>>32)^c3^k1, uint32(v1)
	}
	return c0, c1
}

// Box–Muller constants as rng_philox.hpp computes them in float32: 2^-32
// (as written, rounded) and 2^-32·2π (a float32 product of float32
// constants). Variables, not constants: Go evaluates constant expressions
// exactly, the C++ rounds each product.
var (
	twoPow32Inv   float32 = 2.3283064e-10
	twoPow32Inv2P         = twoPow32Inv * float32(6.2831855)
)

// boxMuller is rng_philox.hpp's box_muller: u and v in float32 from the
// two words (each product rounded before the sum), then log, sqrt and sin
// in float64 (the unqualified C calls resolve to the double versions) with
// float32 roundings where the C++ assigns to float.
func boxMuller(g0, g1 uint32) float32 {
	u := float32(float32(g0)*twoPow32Inv) + twoPow32Inv/2
	v := float32(float32(g1)*twoPow32Inv2P) + twoPow32Inv2P/2
	s := float32(math.Sqrt(-2 * math.Log(float64(u))))
	return float32(float64(s) * math.Sin(float64(v)))
}
