package diffusion

import "math"

// The sampler loops, each as sd.cpp writes it in src/runtime/denoiser.hpp
// (the function named in its comment), element by element in float32 with
// sd.cpp's roundings: a scalar·tensor product rounds the scalar to float32
// first, and every tensor operation rounds once. Scalars sd.cpp computes
// with the unqualified (float64) log/exp are computed in float64 here.
// d = (x - denoised)/σ is the ODE's derivative dx/dσ (Karras et al. 2022,
// eq. 6 with σ(t) = t). Each step function gets the denoiser's output for
// (x, σ_i) from run.each, which checks and reports the step, and returns
// the step's last denoiser output.

// euler is sample_euler: x += d·(σ_{i+1} - σ_i).
func euler(r *run) error {
	x := r.x
	return r.each(func(i int, sigma, next float32, den []float32) ([]float32, error) {
		dt := next - sigma
		for k := range x {
			d := (x[k] - den[k]) / sigma
			x[k] += float32(d * dt)
		}
		return den, nil
	})
}

// eulerAncestral is sample_euler_ancestral (also ddim_trailing's loop):
// the last step (σ_{i+1} = 0) takes the denoised latent; at η = 0 the
// step is x = (σ_{i+1}/σ_i)·x + (1 - σ_{i+1}/σ_i)·denoised (DDIM); else x
// moves the same way to σ_down and gains noise of σ_up (ancestralStep),
// one Randn call, only when σ_up > 0.
func eulerAncestral(r *run) error {
	x := r.x
	return r.each(func(i int, sigma, to float32, den []float32) ([]float32, error) {
		switch {
		case to == 0:
			copy(x, den)
		case r.Eta == 0:
			ratio := to / sigma
			c := float32(1 - float64(ratio)) // 1.0 - ratio: a double, then the tensor's float
			for k := range x {
				x[k] = float32(ratio*x[k]) + float32(c*den[k])
			}
		default:
			down, up := ancestralStep(sigma, to, r.Eta)
			ratio := down / sigma
			c := 1 - ratio
			for k := range x {
				x[k] = float32(ratio*x[k]) + float32(c*den[k])
			}
			if up > 0 {
				r.addNoise(up)
			}
		}
		return den, nil
	})
}

// ancestralStep is get_ancestral_step (k-diffusion's): the step from σ
// to σ' splits into a deterministic part to σ_down and fresh noise of
// σ_up, σ_up = min(σ', η·sqrt(σ'²(σ²-σ'²)/σ²)), σ_down = sqrt(σ'²-σ_up²),
// in float32.
func ancestralStep(from, to, eta float32) (down, up float32) {
	if eta <= 0 {
		return to, 0
	}
	fromSq, toSq := from*from, to*to
	if fromSq > 0 {
		term := float32(toSq*(fromSq-toSq)) / fromSq
		up = cmin(to, float32(eta*sqrtf(cmax(term, 0))))
	}
	if downSq := toSq - float32(up*up); downSq > 0 {
		down = sqrtf(downSq)
	}
	return down, up
}

// heun is sample_heun: an Euler step to x2, the derivative at x2 averaged
// with the first; the last step (σ_{i+1} = 0) is plain Euler.
func heun(r *run) error {
	x, d, x2 := r.x, r.d, r.x2
	return r.each(func(i int, sigma, next float32, den []float32) ([]float32, error) {
		dt := next - sigma
		for k := range x {
			d[k] = (x[k] - den[k]) / sigma
		}
		if next == 0 {
			for k := range x {
				x[k] += float32(d[k] * dt)
			}
			return den, nil
		}
		for k := range x {
			x2[k] = x[k] + float32(d[k]*dt)
		}
		den, err := r.denoise(x2, next, i)
		if err != nil {
			return nil, err
		}
		for k := range x {
			dk := (d[k] + (x2[k]-den[k])/next) / 2
			x[k] += float32(dk * dt)
		}
		return den, nil
	})
}

// dpm2 is sample_dpm2: an Euler step to the log-midpoint
// σ_mid = exp((log σ_i + log σ_{i+1})/2) (float64), the full step taken
// with the derivative there; the last step is plain Euler.
func dpm2(r *run) error {
	x, d, x2 := r.x, r.d, r.x2
	return r.each(func(i int, sigma, next float32, den []float32) ([]float32, error) {
		for k := range x {
			d[k] = (x[k] - den[k]) / sigma
		}
		if next == 0 {
			dt := next - sigma
			for k := range x {
				x[k] += float32(d[k] * dt)
			}
			return den, nil
		}
		mid := float32(math.Exp(0.5 * (math.Log(float64(sigma)) + math.Log(float64(next)))))
		dt1, dt2 := mid-sigma, next-sigma
		for k := range x {
			x2[k] = x[k] + float32(d[k]*dt1)
		}
		den, err := r.denoise(x2, mid, i)
		if err != nil {
			return nil, err
		}
		for k := range x {
			x[k] += float32(((x2[k] - den[k]) / mid) * dt2)
		}
		return den, nil
	})
}

// negLog is sd.cpp's t_fn, -log(σ) in float64 rounded to float32 (+Inf
// for σ = 0); expNeg is its sigma_fn, exp(-t).
func negLog(sigma float32) float32 { return float32(-math.Log(float64(sigma))) }
func expNeg(t float32) float32     { return float32(math.Exp(float64(-t))) }

// dpmpp2m is sample_dpmpp_2m: in t = -log σ, h = t_{i+1} - t_i,
// x = (σ_{i+1}/σ_i)·x - (e^{-h} - 1)·D, where D is the denoised latent on
// the first and the last step, and otherwise the second-order
// extrapolation (1 + 1/2r)·denoised - (1/2r)·old with r = h_{i-1}/h.
func dpmpp2m(r *run) error {
	x, old := r.x, r.old
	return r.each(func(i int, sigma, next float32, den []float32) ([]float32, error) {
		t, tNext := negLog(sigma), negLog(next)
		h := tNext - t
		a := next / sigma
		b := float32(math.Exp(float64(-h)) - 1)
		if i == 0 || next == 0 {
			for k := range x {
				x[k] = float32(a*x[k]) - float32(b*den[k])
			}
		} else {
			hLast := t - negLog(r.sig[i-1])
			rr := hLast / h
			c1 := 1 + 1/(2*rr)
			c2 := 1 / (2 * rr)
			for k := range x {
				dd := float32(c1*den[k]) - float32(c2*old[k])
				x[k] = float32(a*x[k]) - float32(b*dd)
			}
		}
		copy(old, den)
		return den, nil
	})
}

// dpmpp2sAncestral is sample_dpmpp_2s_ancestral: a DPM-Solver++(2S) step
// from σ_i to σ_down through the midpoint in t = -log σ, then noise of
// σ_up (one Randn call on every step that does not end at σ = 0, even
// when σ_up is 0); where σ_down is 0 the step takes the denoised latent.
func dpmpp2sAncestral(r *run) error {
	x, x2 := r.x, r.x2
	return r.each(func(i int, sigma, next float32, den []float32) ([]float32, error) {
		down, up := ancestralStep(sigma, next, r.Eta)
		if down == 0 {
			copy(x, den)
		} else {
			t, tNext := negLog(sigma), negLog(down)
			h := tNext - t
			s := t + float32(0.5*h)
			sigmaS := expNeg(s)
			a := sigmaS / expNeg(t)
			b := float32(math.Exp(float64(-h*0.5)) - 1)
			for k := range x {
				x2[k] = float32(a*x[k]) - float32(b*den[k])
			}
			var err error
			den, err = r.denoise(x2, sigmaS, i)
			if err != nil {
				return nil, err
			}
			a = expNeg(tNext) / expNeg(t)
			b = float32(math.Exp(float64(-h)) - 1)
			for k := range x {
				x[k] = float32(a*x[k]) - float32(b*den[k])
			}
		}
		if next > 0 {
			r.addNoise(up)
		}
		return den, nil
	})
}

// lcm is sample_lcm with its default arguments (no noise clipping, noise
// scale 1): x = denoised, plus noise of σ_{i+1} (one Randn call) on every
// step but the last.
func lcm(r *run) error {
	x := r.x
	return r.each(func(i int, sigma, next float32, den []float32) ([]float32, error) {
		copy(x, den)
		if next > 0 {
			r.addNoise(next)
		}
		return den, nil
	})
}
