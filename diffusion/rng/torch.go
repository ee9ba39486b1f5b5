package rng

import "math"

// Kernel is the Box–Muller kernel torch.randn uses for float32 tensors of
// 16 values or more. The kernels differ in the last bit of about a third of
// the values (torch built for x86-64 picks AVX2 on every CPU that has it).
type Kernel int

const (
	// KernelAVX2 is torch's normal_fill_16_AVX2
	// (aten/src/ATen/native/cpu/DistributionTemplates.h): float32
	// throughout, log and sincos from avx_mathfun.h (Cephes polynomials),
	// with the multiply-adds GCC fused. Bit for bit what torch on x86-64
	// draws; the zero Kernel.
	KernelAVX2 Kernel = iota
	// KernelScalar is torch's portable normal_fill_16<float> (the DEFAULT
	// CPU capability): float32 logf/cosf/sinf, θ computed in float64. Here
	// those three functions are float32(math.F(float64(x))), which differs
	// from glibc's in the last bit for about 1% of inputs, so this kernel is
	// close to torch's DEFAULT kernel but not bit-exact.
	KernelScalar
	// KernelSDCPP is stable-diffusion.cpp's port of the scalar kernel
	// (src/core/rng_mt19937.hpp: MT19937RNG::normal_fill_16, its --rng
	// cpu): as KernelScalar but with θ = float32(2π)·u2 in float32. It
	// differs from both torch kernels in 16-27% of values; with Go's
	// functions in place of glibc's it is close to sd.cpp's, not bit-exact.
	KernelSDCPP
)

func (k Kernel) String() string {
	switch k {
	case KernelAVX2:
		return "avx2"
	case KernelScalar:
		return "scalar"
	case KernelSDCPP:
		return "sdcpp"
	}
	return "unknown"
}

// TorchCPU is torch's CPU generator (aten/src/ATen/core/MT19937RNGEngine.h,
// CPUGeneratorImpl) with torch.randn's CPU algorithm
// (aten/src/ATen/native/cpu/DistributionTemplates.h: normal_kernel) for a
// contiguous float32 tensor. Each Randn is one torch.randn call of
// len(dst) values: n >= 16 draws n float uniforms, turns each block of 16
// into normals (Box–Muller over the pairs j, j+8) and, when n is not a
// multiple of 16, redraws the last 16 and transforms them again; n < 16
// draws pairs of 53-bit double uniforms, one normal per element, the pair's
// second normal kept in the generator for the next element (also across
// calls, until Seed).
type TorchCPU struct {
	Kernel Kernel

	mt        mt19937
	nextGauss float64
	hasGauss  bool
}

// NewTorchCPU returns torch's CPU generator after torch.manual_seed(seed).
func NewTorchCPU(seed uint64, k Kernel) *TorchCPU {
	g := &TorchCPU{Kernel: k}
	g.Seed(seed)
	return g
}

// Seed resets the generator as torch.manual_seed does: MT19937 from the
// seed's low 32 bits (only those count: 42 and 42+2^32 give the same
// noise), the cached normal dropped.
func (g *TorchCPU) Seed(seed uint64) {
	g.mt.seed(uint32(seed))
	g.hasGauss = false
}

// Uint32 returns the engine's next raw 32-bit output.
func (g *TorchCPU) Uint32() uint32 { return g.mt.next() }

// uniform32 is uniform_real_distribution<float>(0, 1): the low 24 bits of
// one draw times 2^-24 (exact).
func (g *TorchCPU) uniform32() float32 {
	return float32(g.mt.next()&(1<<24-1)) * (1.0 / (1 << 24))
}

// uniform64 is uniform_real_distribution<double>(0, 1): the low 53 bits of
// a 64-bit draw (first 32-bit draw high, second low) times 2^-53.
func (g *TorchCPU) uniform64() float64 {
	hi := uint64(g.mt.next())
	lo := uint64(g.mt.next())
	return float64((hi<<32|lo)&(1<<53-1)) * (1.0 / (1 << 53))
}

// Randn fills dst with the values of torch.randn(len(dst)).
func (g *TorchCPU) Randn(dst []float32) {
	n := len(dst)
	if n < 16 {
		for i := range dst {
			dst[i] = float32(g.normal64())
		}
		return
	}
	for i := range dst {
		dst[i] = g.uniform32()
	}
	fill := fill16AVX2
	switch g.Kernel {
	case KernelScalar:
		fill = fill16Scalar
	case KernelSDCPP:
		fill = fill16SDCPP
	}
	for i := 0; i+16 <= n; i += 16 {
		fill((*[16]float32)(dst[i:]))
	}
	if n%16 != 0 {
		tail := (*[16]float32)(dst[n-16:])
		for i := range tail {
			tail[i] = g.uniform32()
		}
		fill(tail)
	}
}

// normal64 is at::normal_distribution<double> (DistributionsHelper.h): two
// uniforms u1, u2, r = sqrt(-2·log1p(-u2)), θ = 2π·u1; it returns r·cos θ
// and keeps r·sin θ for the next call.
func (g *TorchCPU) normal64() float64 {
	if g.hasGauss {
		g.hasGauss = false
		return g.nextGauss
	}
	u1 := g.uniform64()
	u2 := g.uniform64()
	r := math.Sqrt(-2 * math.Log1p(-u2))
	theta := 2 * math.Pi * u1
	g.nextGauss, g.hasGauss = r*math.Sin(theta), true
	return r * math.Cos(theta)
}

// fill16Scalar is normal_fill_16<float> with mean 0 and std 1: float32
// log/sqrt/cos/sin, θ rounded from a float64 product.
func fill16Scalar(d *[16]float32) { fill16Libm(d, true) }

// fill16SDCPP is sd.cpp's normal_fill_16 with mean 0 and std 1: as
// fill16Scalar with θ a float32 product.
func fill16SDCPP(d *[16]float32) { fill16Libm(d, false) }

// fill16Libm is the Box–Muller of the scalar kernels, with the C library's
// float functions as float32(math.F(float64(x))); the +0 turns a -0 into
// +0 as the kernels' "· std + mean" does.
func fill16Libm(d *[16]float32, thetaF64 bool) {
	const twoPi = float32(2 * math.Pi)
	for j := 0; j < 8; j++ {
		u1 := 1 - d[j]
		u2 := d[j+8]
		r := float32(math.Sqrt(float64(-2 * float32(math.Log(float64(u1))))))
		theta := float32(twoPi * u2)
		if thetaF64 {
			theta = float32(2 * math.Pi * float64(u2))
		}
		d[j] = float32(r*float32(math.Cos(float64(theta)))) + 0
		d[j+8] = float32(r*float32(math.Sin(float64(theta)))) + 0
	}
}

// fill16AVX2 is normal_fill_16_AVX2 with mean 0 and std 1, lane by lane:
// u1 = 1 - u (float32), r = sqrt(-2·log256(u1)), θ = float32(2π)·u2,
// outputs fma(r·cos θ, 1, 0) and fma(r·sin θ, 1, 0) (the fma turns -0
// into +0).
func fill16AVX2(d *[16]float32) {
	const twoPi = float32(2 * math.Pi)
	for j := 0; j < 8; j++ {
		u1 := 1 - d[j]
		u2 := d[j+8]
		r := float32(math.Sqrt(float64(-2 * logCephes(u1))))
		s, c := sincosCephes(float32(twoPi * u2))
		d[j] = fma32(float32(r*c), 1, 0)
		d[j+8] = fma32(float32(r*s), 1, 0)
	}
}

// mt19937 is the 32-bit Mersenne Twister (Matsumoto & Nishimura, 1998) as
// torch keeps it: init_genrand seeding, the state regenerated 624 words at
// a time, standard tempering.
type mt19937 struct {
	state [624]uint32
	left  int
	pos   int
}

const (
	mtN       = 624
	mtM       = 397
	mtMatrixA = 0x9908b0df
	mtUpper   = 0x80000000
	mtLower   = 0x7fffffff
)

func (m *mt19937) seed(s uint32) {
	m.state[0] = s
	for j := 1; j < mtN; j++ {
		p := m.state[j-1]
		m.state[j] = 1812433253*(p^(p>>30)) + uint32(j)
	}
	m.left, m.pos = 1, 0
}

func (m *mt19937) twist() {
	for k := 0; k < mtN; k++ {
		y := m.state[k]&mtUpper | m.state[(k+1)%mtN]&mtLower
		v := y >> 1
		if y&1 != 0 {
			v ^= mtMatrixA
		}
		m.state[k] = m.state[(k+mtM)%mtN] ^ v
	}
	m.left, m.pos = mtN, 0
}

func (m *mt19937) next() uint32 {
	m.left--
	if m.left == 0 {
		m.twist()
	}
	y := m.state[m.pos]
	m.pos++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}
