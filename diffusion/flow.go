package diffusion

import (
	"context"
	"math"
	"strings"
)

// Flow matching (Lipman et al. 2023; rectified flow, Liu et al. 2023): the
// latent at noise level σ ∈ [0, 1] is x_σ = (1 − σ)·x0 + σ·ε and the
// network predicts the velocity v = dx/dσ = ε − x0, so x0 = x − σ·v. Wan
// 2.1 samples it with FlowUniPCMultistepScheduler
// (wan/utils/fm_solvers_unipc.py, UniPC of Zhao et al. 2023 in its
// data-prediction B(h) = expm1 form, "bh2", order 2) over a shifted
// schedule; this file is that scheduler operation by operation in float32
// as PyTorch runs it (0-d float32 tensors for every scalar, one rounding
// per operation; the schedule itself in float64 as NumPy computes it), and
// Euler's method over the same schedule.

// UniPC is the flow-matching UniPC multistep sampler (Wan 2.1's default,
// sample_solver 'unipc').
const UniPC Method = "unipc"

// FlowMethods are the samplers FlowSampler runs: unipc and euler (Euler's
// method on the flow ODE, x += (σ_{k+1} − σ_k)·v).
var FlowMethods = []Method{UniPC, Euler}

// ParseFlowMethod returns the flow sampler called name, or an error listing
// the known ones.
func ParseFlowMethod(name string) (Method, error) {
	for _, m := range FlowMethods {
		if string(m) == name {
			return m, nil
		}
	}
	names := make([]string, len(FlowMethods))
	for i, m := range FlowMethods {
		names[i] = string(m)
	}
	return "", argErrorf("unknown flow sampler %q (known: %s)", name, strings.Join(names, ", "))
}

// FlowTrainTimesteps is num_train_timesteps of Wan's scheduler.
const FlowTrainTimesteps = 1000

// FlowSchedule is where a flow sampler calls the network: step k runs it at
// Timesteps[k] on the latent at noise level Sigmas[k]; Sigmas has one more
// value, the final level (0).
type FlowSchedule struct {
	Timesteps []int
	Sigmas    []float32
}

// Steps returns the number of steps.
func (s FlowSchedule) Steps() int { return len(s.Timesteps) }

// ShiftedFlowSchedule is FlowUniPCMultistepScheduler(shift=1).set_timesteps
// (steps, shift=shift) as Wan's generate calls it: σ evenly spaced from
// σ_max = float32(0.999) down to 0 (steps+1 values, the last dropped),
// shifted to shift·σ/(1 + (shift − 1)·σ) (Esser et al. 2024's timestep
// shift), timesteps ⌊1000·σ⌋, σ rounded to float32 with a final 0. In
// float64 as NumPy: σ_i = i·δ + σ_max with δ = −σ_max/steps. Wan 2.1
// uses shift 5 for text-to-video (sample_shift), 3 for 480p image-to-video.
func ShiftedFlowSchedule(steps int, shift float64) (FlowSchedule, error) {
	if steps < 1 || steps > FlowTrainTimesteps {
		return FlowSchedule{}, argErrorf("steps = %d, want 1..%d", steps, FlowTrainTimesteps)
	}
	if !(shift > 0) || math.IsInf(shift, 0) {
		return FlowSchedule{}, argErrorf("shift = %g, want a finite value > 0", shift)
	}
	sigmaMax := float64(float32(1 - 1.0/FlowTrainTimesteps))
	delta := (0 - sigmaMax) / float64(steps)
	s := FlowSchedule{Timesteps: make([]int, steps), Sigmas: make([]float32, steps+1)}
	for i := range steps {
		sigma := float64(float64(i)*delta) + sigmaMax
		sigma = shift * sigma / (1 + (shift-1)*sigma)
		s.Timesteps[i] = int(sigma * FlowTrainTimesteps)
		s.Sigmas[i] = float32(sigma)
	}
	return s, nil
}

// Velocity is a flow-matching network as the flow samplers call it: the
// velocity it predicts for latent x at timestep t during step (guidance
// applied: CFG). The sampler reads the returned slice before the next
// call, so it may be the network's own buffer; it must not keep or change
// x. It should return ctx.Err() soon after ctx ends.
type Velocity func(ctx context.Context, x []float32, t, step int) ([]float32, error)

// FlowStep is what a FlowSampler reports after each step. The slices are
// the sampler's buffers: read them during the call, do not keep them.
type FlowStep struct {
	Method           Method
	Index, Steps     int // 0-based index of the step; the run's step count
	Timestep         int
	Sigma, SigmaNext float32
	In               []float32 // the latent the network saw
	Velocity         []float32 // its prediction
	Denoised         []float32 // x0 = In − σ·Velocity
	Corrected        []float32 // unipc from step 1: the UniC-corrected sample that replaced In in the update; else nil
	X                []float32 // the latent after the step
}

// FlowSampler runs a flow-matching sampler. Its buffers are allocated on
// the first Run and reused by later runs of the same size. A FlowSampler
// is not safe for concurrent use.
type FlowSampler struct {
	Method Method // UniPC or Euler
	// OnStep, when set, is called after every step.
	OnStep func(FlowStep)

	in, x0, x0Prev, x0Prev2, last []float32
}

// Run samples from x (the starting noise at Sigmas[0], overwritten with
// the result) along s, calling v once per step. It stops before a network
// call once ctx is done and fails the step that makes a NaN or an
// infinity; both return a *StepError naming the step.
func (fs *FlowSampler) Run(ctx context.Context, x []float32, s FlowSchedule, v Velocity) error {
	if fs.Method != UniPC && fs.Method != Euler {
		_, err := ParseFlowMethod(string(fs.Method))
		return err
	}
	if len(x) == 0 {
		return argErrorf("empty latent")
	}
	n := s.Steps()
	if n < 1 || len(s.Sigmas) != n+1 {
		return argErrorf("a flow schedule of %d timesteps and %d sigmas (want n ≥ 1 timesteps and n+1 sigmas)", n, len(s.Sigmas))
	}
	for i, sg := range s.Sigmas {
		last := i == n
		if !(sg >= 0 && sg <= 1) || (sg == 0 && !last) || (sg == 1 && fs.Method == UniPC) || (i > 0 && !(sg < s.Sigmas[i-1])) {
			return argErrorf("sigmas[%d] = %g: want decreasing values in (0, 1) (euler: (0, 1]), only the last may be 0", i, sg)
		}
	}
	if len(fs.in) != len(x) {
		m := len(x)
		fs.in, fs.x0, fs.x0Prev, fs.x0Prev2, fs.last = make([]float32, m), make([]float32, m), make([]float32, m), make([]float32, m), make([]float32, m)
	}
	r := &flowRun{FlowSampler: fs, ctx: ctx, x: x, s: s, v: v}
	if fs.Method == Euler {
		return r.euler()
	}
	return r.uniPC()
}

// flowRun is one Run's state.
type flowRun struct {
	*FlowSampler
	ctx context.Context
	x   []float32
	s   FlowSchedule
	v   Velocity
}

// predict calls the network for step k and sets fs.x0 = x − σ_k·v
// (convert_model_output for flow_prediction).
func (r *flowRun) predict(k int) ([]float32, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, r.fail(k, err)
	}
	copy(r.in, r.x)
	vel, err := r.v(r.ctx, r.in, r.s.Timesteps[k], k)
	if err != nil {
		return nil, r.fail(k, err)
	}
	if len(vel) != len(r.x) {
		return nil, r.fail(k, argErrorf("the network returned %d values for a latent of %d", len(vel), len(r.x)))
	}
	sigma := r.s.Sigmas[k]
	for i, xi := range r.x {
		r.x0[i] = xi - float32(sigma*vel[i])
	}
	return vel, nil
}

// done checks step k's result and reports it.
func (r *flowRun) done(k int, vel, corrected []float32) error {
	bad, first := 0, -1
	for i, v := range r.x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return &StepError{Method: r.Method, Step: k + 1, Steps: r.s.Steps(), Sigma: r.s.Sigmas[k], Index: first, Value: r.x[first], Count: bad, Err: ErrNonFinite}
	}
	if r.OnStep != nil {
		r.OnStep(FlowStep{Method: r.Method, Index: k, Steps: r.s.Steps(), Timestep: r.s.Timesteps[k], Sigma: r.s.Sigmas[k], SigmaNext: r.s.Sigmas[k+1],
			In: r.in, Velocity: vel, Denoised: r.x0, Corrected: corrected, X: r.x})
	}
	return nil
}

func (r *flowRun) fail(k int, err error) error {
	return &StepError{Method: r.Method, Step: k + 1, Steps: r.s.Steps(), Sigma: r.s.Sigmas[k], Index: -1, Err: err}
}

// euler is x += (σ_{k+1} − σ_k)·v (diffusers' FlowMatchEulerDiscreteScheduler
// step; at the last step, σ = 0, x becomes x0 up to rounding).
func (r *flowRun) euler() error {
	for k := range r.s.Steps() {
		vel, err := r.predict(k)
		if err != nil {
			return err
		}
		dt := r.s.Sigmas[k+1] - r.s.Sigmas[k]
		for i, v := range vel {
			r.x[i] += float32(dt * v)
		}
		if err := r.done(k, vel, nil); err != nil {
			return err
		}
	}
	return nil
}

// lambda is UniPC's log-SNR λ = log α − log σ with α = 1 − σ, in float32
// (+Inf at σ = 0).
func lambda(sigma float32) float32 { return logf(1-sigma) - logf(sigma) }

func expm1f(x float32) float32 { return float32(math.Expm1(float64(x))) }

// uniPC is FlowUniPCMultistepScheduler.step over the whole schedule:
// x0_k = x − σ_k·v; from step 1 the corrector UniC (of the previous step's
// order) replaces x using x0_k; then the predictor UniP of order
// min(2, n − k, k + 1) (warm-up, lower_order_final) moves x to σ_{k+1}.
func (r *flowRun) uniPC() error {
	n := r.s.Steps()
	prevOrder := 0
	for k := range n {
		vel, err := r.predict(k)
		if err != nil {
			return err
		}
		var corrected []float32
		if k > 0 {
			r.uniC(k, prevOrder)
		}
		order := min(2, n-k, k+1)
		copy(r.last, r.x)
		if k > 0 {
			corrected = r.last
		}
		r.uniP(k, order)
		if err := r.done(k, vel, corrected); err != nil {
			return err
		}
		// Shift the history: x0_{k−2} ← x0_{k−1} ← x0_k.
		r.x0Prev2, r.x0Prev, r.x0 = r.x0Prev, r.x0, r.x0Prev2
		prevOrder = order
	}
	return nil
}

// uniP is multistep_uni_p_bh_update at step k: with σ_s = σ_k, σ_t =
// σ_{k+1}, α = 1 − σ, h = λ_t − λ_s, hh = −h, φ = B = expm1(hh),
//
//	x ← (σ_t/σ_s)·x − (α_t·φ)·x0_k − (α_t·B)·(0.5·D1)
//
// with D1 = (x0_{k−1} − x0_k)/r, r = (λ_{k−1} − λ_s)/h, the last term only
// at order 2. At σ_t = 0, λ_t = +Inf and φ = B = −1: x becomes x0_k
// exactly.
func (r *flowRun) uniP(k, order int) {
	sS, sT := r.s.Sigmas[k], r.s.Sigmas[k+1]
	lS, lT := lambda(sS), lambda(sT)
	h := lT - lS
	hh := -h
	phi := expm1f(hh)
	aT := 1 - sT
	cx, cm, cd := sT/sS, aT*phi, aT*phi // B_h = expm1(hh) = φ for bh2
	m0, x := r.x0, r.x
	if order == 1 {
		for i, xi := range x {
			x[i] = float32(cx*xi) - float32(cm*m0[i])
		}
		return
	}
	rk := (lambda(r.s.Sigmas[k-1]) - lS) / h
	m1 := r.x0Prev
	for i, xi := range x {
		d1 := (m1[i] - m0[i]) / rk
		x[i] = float32(cx*xi) - float32(cm*m0[i]) - float32(cd*float32(0.5*d1))
	}
}

// uniC is multistep_uni_c_bh_update at step k ≥ 1 with the previous
// step's order: with σ_s = σ_{k−1}, σ_t = σ_k, m0 = x0_{k−1}, x the
// sample that step predicted from (last), and h, φ, B as in uniP,
//
//	x ← (σ_t/σ_s)·last − (α_t·φ)·m0 − (α_t·B)·(ρ_0·D1 + ρ_1·(x0_k − m0))
//
// where order 1 has no D1 and ρ_1 = 0.5; order 2 has D1 = (x0_{k−2} −
// m0)/r, r = (λ_{k−2} − λ_s)/h, and (ρ_0, ρ_1) solving [1 1; r 1]·ρ = b,
// b_1 = g_1/B, b_2 = 2·g_2/B with g_1 = φ/hh − 1, g_2 = g_1/hh − 1/2.
func (r *flowRun) uniC(k, order int) {
	sS, sT := r.s.Sigmas[k-1], r.s.Sigmas[k]
	lS, lT := lambda(sS), lambda(sT)
	h := lT - lS
	hh := -h
	phi := expm1f(hh)
	bh := phi
	aT := 1 - sT
	cx, cm, cd := sT/sS, aT*phi, aT*bh
	m0, mt, last, x := r.x0Prev, r.x0, r.last, r.x
	if order == 1 {
		const rho = 0.5
		for i, li := range last {
			x[i] = float32(cx*li) - float32(cm*m0[i]) - float32(cd*float32(rho*(mt[i]-m0[i])))
		}
		return
	}
	rk := (lambda(r.s.Sigmas[k-2]) - lS) / h
	g1 := phi/hh - 1
	b1 := g1 * 1 / bh
	g2 := g1/hh - 0.5
	b2 := g2 * 2 / bh
	rho0, rho1 := solve2(rk, b1, b2)
	m1 := r.x0Prev2
	for i, li := range last {
		d1 := (m1[i] - m0[i]) / rk
		res := float32(rho0*d1) + float32(rho1*(mt[i]-m0[i]))
		x[i] = float32(cx*li) - float32(cm*m0[i]) - float32(cd*res)
	}
}

// solve2 solves [1 1; r 1]·(ρ0, ρ1) = (b1, b2) (torch.linalg.solve(R, b)
// with R's rows rks⁰ and rks¹, rks = [r, 1]), in float64, rounded to
// float32.
func solve2(r, b1, b2 float32) (rho0, rho1 float32) {
	rr, x1, x2 := float64(r), float64(b1), float64(b2)
	p1 := (x2 - rr*x1) / (1 - rr)
	return float32(x1 - p1), float32(p1)
}
