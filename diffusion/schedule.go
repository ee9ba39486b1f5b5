package diffusion

import (
	"math"
	"strings"
)

// Scheduler names a rule for the σ list of n steps, as sd.cpp's
// --scheduler spells it.
type Scheduler string

const (
	Discrete    Scheduler = "discrete"    // n timesteps evenly spaced from 999 to 0 (sd.cpp's default)
	Karras      Scheduler = "karras"      // Karras et al. 2022, eq. 5, ρ = 7
	Exponential Scheduler = "exponential" // log σ evenly spaced from σ_max to σ_min
	Simple      Scheduler = "simple"      // every 1000/n-th timestep from 999 down (ddim_trailing's default)
	LCMSchedule Scheduler = "lcm"         // LCM's 50-step training schedule, subsampled (lcm's default)
)

// Schedulers are the schedulers Schedule knows.
var Schedulers = []Scheduler{Discrete, Karras, Exponential, Simple, LCMSchedule}

// ParseScheduler returns the scheduler called name, or an error listing
// the known ones.
func ParseScheduler(name string) (Scheduler, error) {
	for _, s := range Schedulers {
		if string(s) == name {
			return s, nil
		}
	}
	names := make([]string, len(Schedulers))
	for i, s := range Schedulers {
		names[i] = string(s)
	}
	return "", argErrorf("unknown scheduler %q (known: %s)", name, strings.Join(names, ", "))
}

// Schedule returns the σ list of n sampling steps under scheduler s: n+1
// values, decreasing, the last 0 (sd.cpp src/runtime/denoiser.hpp:
// DiscreteScheduler, KarrasScheduler, ExponentialScheduler,
// SimpleScheduler, LCMScheduler :: get_sigmas). n must be at least 1.
// Karras and exponential with n = 1 divide 0 by 0 in sd.cpp (the σ list
// is NaN); they are refused here instead.
func (d *CompVis) Schedule(s Scheduler, n int) ([]float32, error) {
	if n < 1 {
		return nil, argErrorf("steps = %d, want at least 1", n)
	}
	if n == 1 && (s == Karras || s == Exponential) {
		return nil, argErrorf("the %s scheduler needs at least 2 steps (with 1 its step 0/0 is NaN in stable-diffusion.cpp)", s)
	}
	sig := make([]float32, n+1) // sig[n] = 0
	switch s {
	case Discrete:
		if n == 1 {
			sig[0] = d.TToSigma(Timesteps - 1)
			break
		}
		step := float32(Timesteps-1) / float32(n-1)
		for i := range n {
			sig[i] = d.TToSigma(Timesteps - 1 - float32(step*float32(i)))
		}
	case Karras:
		const rho = 7
		sMin := max(d.SigmaMin(), 1e-6)
		invRho := float64(float32(1.0 / rho)) // 1.f/rho in float32
		minInv := float32(math.Pow(float64(sMin), invRho))
		maxInv := float32(math.Pow(float64(d.SigmaMax()), invRho))
		for i := range n {
			frac := float32(i) / (float32(n) - 1)
			sig[i] = float32(math.Pow(float64(maxInv+float32(frac*(minInv-maxInv))), rho))
		}
	case Exponential:
		lmin, lmax := logf(d.SigmaMin()), logf(d.SigmaMax())
		step := (lmax - lmin) / float32(n-1)
		for i := range n {
			sig[i] = expf(lmax - float32(step*float32(i)))
		}
	case Simple:
		factor := float32(Timesteps) / float32(n)
		for i := range n {
			t := max(Timesteps-1-int(float32(i)*factor), 0)
			sig[i] = d.TToSigma(float32(t))
		}
	case LCMSchedule:
		const originalSteps, k = 50, Timesteps / 50
		for i := range n {
			index := i * originalSteps / n
			sig[i] = d.TToSigma(float32((originalSteps-index)*k - 1))
		}
	default:
		_, err := ParseScheduler(string(s))
		return nil, err
	}
	return sig, nil
}

// StartAt is img2img's start on a σ list of steps = len(sigmas)-1 steps
// for a denoising strength in (0, 1] (sd.cpp src/stable-diffusion.cpp,
// generate_image's IMG2IMG branch): strength 1 keeps the whole list;
// otherwise t_enc = int(float32(steps)·strength) (truncated, one less if
// it reaches steps) steps are kept after the first, which is
// sigmas[steps-t_enc-1]. It returns the index of the first σ; the sampler
// runs sigmas[start:], t_enc+1 steps.
func StartAt(sigmas []float32, strength float32) (start int, err error) {
	steps := len(sigmas) - 1
	if steps < 1 {
		return 0, argErrorf("a σ list of %d values has no step", len(sigmas))
	}
	if !(strength > 0 && strength <= 1) {
		return 0, argErrorf("strength = %g, want a value in (0, 1]", strength)
	}
	if strength == 1 {
		return 0, nil
	}
	tEnc := int(float32(steps) * strength)
	if tEnc == steps {
		tEnc--
	}
	return steps - tEnc - 1, nil
}
