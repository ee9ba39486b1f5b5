package diffusion

import "math"

// Timesteps is the number of training timesteps of SD 1.x (and 2.x).
const Timesteps = 1000

// AlphasCumprod is SD 1.x's ᾱ table as sd.cpp computes it in float32
// (src/stable-diffusion.cpp: calculate_alphas_cumprod): the "scaled linear"
// β schedule β_i = (sqrt(0.00085) + (sqrt(0.012)-sqrt(0.00085))·i/999)²
// and ᾱ_i = Π_{j<=i} (1-β_j), accumulated in float32.
func AlphasCumprod() [Timesteps]float32 {
	lsSqrt := float32(math.Sqrt(float64(float32(0.00085))))
	leSqrt := float32(math.Sqrt(float64(float32(0.012))))
	amount := leSqrt - lsSqrt
	var ac [Timesteps]float32
	product := float32(1)
	for i := range ac {
		beta := lsSqrt + float32(amount*(float32(i)/(Timesteps-1)))
		product *= 1 - float32(beta*beta) // powf(beta, 2) is exact-then-rounded, as beta*beta
		ac[i] = product
	}
	return ac
}

// CompVis is the ε-prediction denoiser of SD 1.x (sd.cpp
// src/runtime/denoiser.hpp: CompVisDenoiser): a network that predicts the
// noise ε in x = x0 + σ·ε, fed x·c_in and the training timestep t of σ.
type CompVis struct {
	Sigmas    [Timesteps]float32 // σ_t = sqrt((1-ᾱ_t)/ᾱ_t)
	LogSigmas [Timesteps]float32 // log σ_t
}

// NewCompVis builds the σ tables from an ᾱ table (nil: AlphasCumprod), as
// sd.cpp's refresh_compvis_denoiser_sigmas does; a checkpoint's own
// alphas_cumprod tensor replaces the computed one there. It refuses a table
// of another length or with values outside (0, 1].
func NewCompVis(alphasCumprod []float32) (*CompVis, error) {
	if alphasCumprod == nil {
		ac := AlphasCumprod()
		alphasCumprod = ac[:]
	}
	if len(alphasCumprod) != Timesteps {
		return nil, argErrorf("alphas_cumprod has %d values, want %d", len(alphasCumprod), Timesteps)
	}
	d := &CompVis{}
	for i, a := range alphasCumprod {
		if !(a > 0 && a <= 1) {
			return nil, argErrorf("alphas_cumprod[%d] = %g, want a value in (0, 1]", i, a)
		}
		d.Sigmas[i] = sqrtf((1 - a) / a)
		d.LogSigmas[i] = logf(d.Sigmas[i])
	}
	return d, nil
}

// SigmaMin is σ of timestep 0.
func (d *CompVis) SigmaMin() float32 { return d.Sigmas[0] }

// SigmaMax is σ of the last timestep.
func (d *CompVis) SigmaMax() float32 { return d.Sigmas[Timesteps-1] }

// TToSigma is σ at a fractional timestep t in [0, 999]: log σ interpolated
// linearly between the neighbouring timesteps, then exp. t outside the
// range is clamped; NaN gives NaN.
func (d *CompVis) TToSigma(t float32) float32 {
	if t != t {
		return t
	}
	t = min(max(t, 0), Timesteps-1)
	lo := int(math.Floor(float64(t)))
	hi := int(math.Ceil(float64(t)))
	w := t - float32(lo)
	return expf(float32((1-w)*d.LogSigmas[lo]) + float32(w*d.LogSigmas[hi]))
}

// SigmaToT is the fractional timestep the network is fed for σ: log σ
// placed between the two table entries that bracket it (the number of
// entries at or below it, minus one, kept within [0, 998]) and
// interpolated linearly, the weight clamped to [0, 1]. σ beyond the table
// gives 0 or 999; σ = 0 gives 0.
func (d *CompVis) SigmaToT(sigma float32) float32 {
	ls := logf(sigma)
	low := 0
	for _, l := range d.LogSigmas {
		if ls-l >= 0 {
			low++
		}
	}
	low = min(max(low-1, 0), Timesteps-2)
	lo, hi := d.LogSigmas[low], d.LogSigmas[low+1]
	w := (lo - ls) / (lo - hi)
	w = cmax(0, cmin(1, w))
	return float32((1-w)*float32(low)) + float32(w*float32(low+1))
}

// Scalings are the CompVis ε-prediction scalings of σ
// (CompVisDenoiser::get_scalings): denoised = c_skip·x + c_out·ε(c_in·x)
// with c_skip = 1, c_out = -σ, c_in = 1/sqrt(σ²+1).
func (d *CompVis) Scalings(sigma float32) (cSkip, cOut, cIn float32) {
	return 1, -sigma, 1 / sqrtf(float32(sigma*sigma)+1)
}

// NoiseScaling writes the sampler's starting latent into dst:
// init + noise·σ (CompVisDenoiser::noise_scaling). A nil init is zeros
// (txt2img).
func NoiseScaling(dst, init, noise []float32, sigma float32) {
	for i := range dst {
		var a float32
		if init != nil {
			a = init[i]
		}
		dst[i] = a + float32(noise[i]*sigma)
	}
}

// logf and expf are glibc's float32 functions as Go can have them: the
// float64 function rounded to float32 (glibc's are within 1 ulp of that;
// shared/golden/sd15/README.md 4.3 measured 1 timestep in 352 that differs).
func logf(x float32) float32  { return float32(math.Log(float64(x))) }
func expf(x float32) float32  { return float32(math.Exp(float64(x))) }
func sqrtf(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// cmin and cmax are std::min and std::max: cmin(a, b) = b < a ? b : a, so
// a NaN b gives a, and cmax(a, b) = a < b ? b : a.
func cmin(a, b float32) float32 {
	if b < a {
		return b
	}
	return a
}

func cmax(a, b float32) float32 {
	if a < b {
		return b
	}
	return a
}
