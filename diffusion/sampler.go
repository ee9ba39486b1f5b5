package diffusion

import (
	"context"
	"math"
	"strings"

	"github.com/glassbox-ai/glassbox/diffusion/rng"
)

// Denoiser is the network as the samplers see it: the denoised latent
// (the prediction of x0) for the noisy latent x at noise level σ, during
// step (0-based). The returned slice must have len(x) values; the sampler
// reads it before the next call, so it may be the denoiser's own buffer.
// It must not keep or change x.
type Denoiser func(ctx context.Context, x []float32, sigma float32, step int) ([]float32, error)

// Method names a sampler, as sd.cpp's --sampling-method spells it.
type Method string

const (
	Euler        Method = "euler"         // Euler's method on the probability-flow ODE (Karras et al. 2022, alg. 1 without churn)
	EulerA       Method = "euler_a"       // Euler ancestral: Euler to σ_down, then fresh noise of σ_up (sd.cpp's default)
	Heun         Method = "heun"          // Heun's second-order method (Karras et al. 2022, alg. 1): 2 calls a step
	DPM2         Method = "dpm2"          // DPM-Solver-2 (Lu et al. 2022) via the log-midpoint σ: 2 calls a step
	DPMPP2M      Method = "dpm++2m"       // DPM-Solver++(2M) (Lu et al. 2022b): multistep, the last denoised kept
	DPMPP2SA     Method = "dpm++2s_a"     // DPM-Solver++(2S) ancestral: 2 calls a step, then noise
	LCM          Method = "lcm"           // latent consistency sampling: denoised, renoised to the next σ
	DDIMTrailing Method = "ddim_trailing" // DDIM with trailing timesteps: Euler ancestral at eta 0 (sd.cpp's choice)
)

// Methods are the samplers this package runs.
var Methods = []Method{Euler, EulerA, Heun, DPM2, DPMPP2M, DPMPP2SA, LCM, DDIMTrailing}

// ParseMethod returns the sampler called name, or an error listing the
// known ones.
func ParseMethod(name string) (Method, error) {
	for _, m := range Methods {
		if string(m) == name {
			return m, nil
		}
	}
	names := make([]string, len(Methods))
	for i, m := range Methods {
		names[i] = string(m)
	}
	return "", argErrorf("unknown sampler %q (known: %s)", name, strings.Join(names, ", "))
}

// DefaultEta is the η sd.cpp resolves for m when none is given
// (src/stable-diffusion.cpp: resolve_eta): 1 for euler_a and dpm++2s_a,
// 0 for ddim_trailing; the other samplers do not read it.
func DefaultEta(m Method) float32 {
	switch m {
	case EulerA, DPMPP2SA:
		return 1
	}
	return 0
}

// DefaultScheduler is the scheduler sd.cpp picks for m when none is given
// (sd_get_default_scheduler): simple for ddim_trailing, lcm for lcm,
// discrete otherwise.
func DefaultScheduler(m Method) Scheduler {
	switch m {
	case DDIMTrailing:
		return Simple
	case LCM:
		return LCMSchedule
	}
	return Discrete
}

// Stochastic reports whether m draws noise during sampling (so needs a
// Noise source) at η.
func (m Method) Stochastic(eta float32) bool {
	switch m {
	case LCM:
		return true
	case EulerA, DDIMTrailing:
		return eta != 0
	case DPMPP2SA:
		return true // draws every step but the last, even at η = 0
	}
	return false
}

// Calls is the number of denoiser calls m makes over sigmas at η: one a
// step, and heun, dpm2 and dpm++2s_a a second one on every step that does
// not end at σ = 0 (dpm++2s_a: whose σ_down is not 0). Step counts and
// ETAs count calls, not steps.
func (m Method) Calls(sigmas []float32, eta float32) int {
	steps := len(sigmas) - 1
	if steps < 1 {
		return 0
	}
	n := steps
	for i := range steps {
		switch m {
		case Heun, DPM2:
			if sigmas[i+1] != 0 {
				n++
			}
		case DPMPP2SA:
			if down, _ := ancestralStep(sigmas[i], sigmas[i+1], eta); down != 0 {
				n++
			}
		}
	}
	return n
}

// Step is what a Sampler reports after each step.
type Step struct {
	Method           Method
	Index, Steps     int // 0-based index of the step; the run's step count
	Sigma, SigmaNext float32
	Calls            int       // denoiser calls so far in this run
	X                []float32 // the latent after the step (the caller's x; do not keep)
	Denoised         []float32 // the step's last denoiser output (do not keep)
}

// Sampler runs one sampling method. Its buffers are allocated on the
// first Run and reused by later runs of the same size, so a run allocates
// nothing per step. A Sampler is not safe for concurrent use.
type Sampler struct {
	Method Method
	// Eta scales the ancestral noise of euler_a, dpm++2s_a and
	// ddim_trailing (New sets DefaultEta).
	Eta float32
	// Noise is the generator of the sampling noise (euler_a, dpm++2s_a,
	// lcm, and ddim_trailing at η != 0); each noise draw is one Randn
	// call, in sd.cpp's order. With sd.cpp's default the sampler shares
	// the initial noise's generator: step i's noise is call i.
	Noise rng.Source
	// OnStep, when set, is called after every step.
	OnStep func(Step)

	d, x2, old, noise []float32
}

// New returns a Sampler for m with sd.cpp's default η and noise.
func New(m Method, noise rng.Source) *Sampler {
	return &Sampler{Method: m, Eta: DefaultEta(m), Noise: noise}
}

// Run samples from x (the noised starting latent, overwritten with the
// result) along sigmas (sigmas[0] is x's noise level; the last is
// normally 0), calling den once or twice per step. It stops before a
// denoiser call once ctx is done and fails the step that makes a NaN or
// an infinity; both return a *StepError naming the step.
func (s *Sampler) Run(ctx context.Context, x, sigmas []float32, den Denoiser) error {
	f, ok := methods[s.Method]
	if !ok {
		_, err := ParseMethod(string(s.Method))
		return err
	}
	if len(x) == 0 {
		return argErrorf("empty latent")
	}
	if len(sigmas) < 2 {
		return argErrorf("a σ list of %d values has no step", len(sigmas))
	}
	for i, v := range sigmas {
		if !(v >= 0) || math.IsInf(float64(v), 0) || (v == 0 && i < len(sigmas)-1) {
			return argErrorf("sigmas[%d] = %g: want finite values > 0, only the last may be 0", i, v)
		}
	}
	if s.Noise == nil && s.Method.Stochastic(s.Eta) {
		return argErrorf("sampler %s at eta %g draws noise but has no noise source", s.Method, s.Eta)
	}
	n := len(x)
	if len(s.d) != n {
		s.d, s.x2, s.old, s.noise = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	}
	r := run{Sampler: s, ctx: ctx, x: x, sig: sigmas, den: den, steps: len(sigmas) - 1}
	return f(&r)
}

// methods maps each Method to its loop (samplers.go).
var methods = map[Method]func(*run) error{
	Euler:        euler,
	EulerA:       eulerAncestral,
	DDIMTrailing: eulerAncestral,
	Heun:         heun,
	DPM2:         dpm2,
	DPMPP2M:      dpmpp2m,
	DPMPP2SA:     dpmpp2sAncestral,
	LCM:          lcm,
}

// run is one Run's state: what each sampler loop reads, and the helpers
// that call the denoiser, draw noise and finish a step.
type run struct {
	*Sampler
	ctx   context.Context
	x     []float32
	sig   []float32
	den   Denoiser
	steps int
	calls int
}

// denoise calls the denoiser for step i unless ctx is done.
func (r *run) denoise(x []float32, sigma float32, i int) ([]float32, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, r.fail(i, err)
	}
	out, err := r.den(r.ctx, x, sigma, i)
	if err != nil {
		return nil, r.fail(i, err)
	}
	if len(out) != len(x) {
		return nil, r.fail(i, argErrorf("the denoiser returned %d values for a latent of %d", len(out), len(x)))
	}
	r.calls++
	return out, nil
}

// addNoise draws the next noise call and adds it times scale to x.
func (r *run) addNoise(scale float32) {
	r.Noise.Randn(r.noise)
	for k, n := range r.noise {
		r.x[k] += float32(n * scale)
	}
}

// each runs every step of the run: the denoiser on (x, σ_i), step with
// its output, then the check and the report.
func (r *run) each(step func(i int, sigma, next float32, denoised []float32) ([]float32, error)) error {
	for i := range r.steps {
		den, err := r.denoise(r.x, r.sig[i], i)
		if err != nil {
			return err
		}
		if den, err = step(i, r.sig[i], r.sig[i+1], den); err != nil {
			return err
		}
		if err := r.done(i, den); err != nil {
			return err
		}
	}
	return nil
}

// done checks step i's result and reports it.
func (r *run) done(i int, denoised []float32) error {
	bad, first := 0, -1
	for k, v := range r.x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			if first < 0 {
				first = k
			}
			bad++
		}
	}
	if bad > 0 {
		return &StepError{Method: r.Method, Step: i + 1, Steps: r.steps, Sigma: r.sig[i], Index: first, Value: r.x[first], Count: bad, Err: ErrNonFinite}
	}
	if r.OnStep != nil {
		r.OnStep(Step{Method: r.Method, Index: i, Steps: r.steps, Sigma: r.sig[i], SigmaNext: r.sig[i+1], Calls: r.calls, X: r.x, Denoised: denoised})
	}
	return nil
}

func (r *run) fail(i int, err error) error {
	return &StepError{Method: r.Method, Step: i + 1, Steps: r.steps, Sigma: r.sig[i], Index: -1, Err: err}
}
