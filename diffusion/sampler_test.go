package diffusion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/glassbox-ai/glassbox/diffusion/rng"
)

// The samplers without per-step goldens are checked against a float64
// twin written from the methods' equations (k-diffusion's sampling.py
// forms, not sd.cpp's float32 operation order), on denoisers whose
// behaviour is known: a constant, the exact denoiser of Gaussian data,
// and a nonlinear one.

// den64 is a denoiser over float64 latents.
type den64 func(x []float64, sigma float64) []float64

// twin runs method m in float64. noise returns the next noise call.
func twin(m Method, x, sig []float64, D den64, noise func() []float64, eta float64) []float64 {
	x = append([]float64(nil), x...)
	axpy := func(dst []float64, a float64, v []float64) { // dst += a·v
		for i := range dst {
			dst[i] += a * v[i]
		}
	}
	deriv := func(x, den []float64, s float64) []float64 { // dx/dσ = (x - D)/σ
		d := make([]float64, len(x))
		for i := range x {
			d[i] = (x[i] - den[i]) / s
		}
		return d
	}
	ancestral := func(from, to float64) (down, up float64) {
		if eta <= 0 {
			return to, 0
		}
		up = math.Min(to, eta*math.Sqrt(math.Max(to*to*(from*from-to*to)/(from*from), 0)))
		return math.Sqrt(math.Max(to*to-up*up, 0)), up
	}
	var oldDen []float64
	for i := 0; i+1 < len(sig); i++ {
		s, sn := sig[i], sig[i+1]
		den := D(x, s)
		switch m {
		case Euler:
			axpy(x, sn-s, deriv(x, den, s))
		case EulerA, DDIMTrailing:
			if sn == 0 {
				copy(x, den)
				break
			}
			down, up := ancestral(s, sn)
			for k := range x { // x = D + (x - D)·σ_down/σ
				x[k] = den[k] + (x[k]-den[k])*down/s
			}
			if eta != 0 && up > 0 {
				axpy(x, up, noise())
			}
		case Heun, DPM2:
			d := deriv(x, den, s)
			if sn == 0 {
				axpy(x, sn-s, d)
				break
			}
			mid := sn
			if m == DPM2 {
				mid = math.Sqrt(s * sn) // the log-midpoint
			}
			x2 := append([]float64(nil), x...)
			axpy(x2, mid-s, d)
			d2 := deriv(x2, D(x2, mid), mid)
			if m == Heun {
				for k := range d {
					d[k] = (d[k] + d2[k]) / 2
				}
				axpy(x, sn-s, d)
			} else {
				axpy(x, sn-s, d2)
			}
		case DPMPP2M:
			// x' = (σ'/σ)x + (1 - σ'/σ)·D̂ (exp(-h) = σ'/σ), D̂ the
			// second-order extrapolation from the last two denoised.
			dd := den
			if oldDen != nil && sn != 0 {
				h := math.Log(s / sn)
				r := math.Log(sig[i-1]/s) / h
				dd = make([]float64, len(x))
				for k := range x {
					dd[k] = (1+1/(2*r))*den[k] - 1/(2*r)*oldDen[k]
				}
			}
			for k := range x {
				x[k] = sn/s*x[k] + (1-sn/s)*dd[k]
			}
			oldDen = den
		case DPMPP2SA:
			down, up := ancestral(s, sn)
			if down == 0 {
				copy(x, den)
			} else {
				sMid := math.Sqrt(s * down)
				x2 := make([]float64, len(x))
				for k := range x {
					x2[k] = sMid/s*x[k] + (1-sMid/s)*den[k]
				}
				den2 := D(x2, sMid)
				for k := range x {
					x[k] = down/s*x[k] + (1-down/s)*den2[k]
				}
			}
			if sn > 0 {
				axpy(x, up, noise())
			}
		case LCM:
			copy(x, den)
			if sn > 0 {
				axpy(x, sn, noise())
			}
		}
	}
	return x
}

// denoisers are the test denoisers, each in float32 (for the Sampler) and
// float64 (for the twin).
var denoisers = []struct {
	name string
	f64  func(x, s float64, i int) float64
}{
	{"constant", func(x, s float64, i int) float64 { return 0.3 * math.Sin(float64(i)) }},
	{"gaussian", func(x, s float64, i int) float64 { return x / (1 + s*s) }},
	{"nonlinear", func(x, s float64, i int) float64 { return math.Tanh(x)/(1+0.1*s) + 0.05*math.Sin(3*x) }},
}

func denoiser32(f func(x, s float64, i int) float64) Denoiser {
	var out []float32
	return func(ctx context.Context, x []float32, sigma float32, step int) ([]float32, error) {
		if len(out) != len(x) {
			out = make([]float32, len(x))
		}
		for i, v := range x {
			out[i] = float32(f(float64(v), float64(sigma), i))
		}
		return out, nil
	}
}

func denoiser64(f func(x, s float64, i int) float64) den64 {
	return func(x []float64, sigma float64) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = f(v, sigma, i)
		}
		return out
	}
}

func to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestSamplersAgainstTwin runs every method on each test denoiser and
// schedule and compares the float32 result with the float64 twin: the
// largest difference within 1e-5 of the latent's scale (float32 rounding
// over 12 steps, with σ up to 14.6), and the same number of noise calls.
func TestSamplersAgainstTwin(t *testing.T) {
	d, _ := NewCompVis(nil)
	const n = 512
	for _, m := range Methods {
		for _, sched := range []Scheduler{Discrete, Karras, DefaultScheduler(m)} {
			sig, err := d.Schedule(sched, 12)
			if err != nil {
				t.Fatal(err)
			}
			for _, dn := range denoisers {
				for _, eta := range []float32{DefaultEta(m), 0.5} {
					name := fmt.Sprintf("%s/%s/%s/eta%g", m, sched, dn.name, eta)
					start := make([]float32, n)
					rng.NewPhilox(5).Randn(start)
					NoiseScaling(start, nil, start, sig[0])

					src := &countingSource{Source: rng.NewPhilox(6)}
					s := New(m, src)
					s.Eta = eta
					x := append([]float32(nil), start...)
					if err := s.Run(context.Background(), x, sig, denoiser32(dn.f64)); err != nil {
						t.Fatalf("%s: %v", name, err)
					}

					twinNoise := rng.NewPhilox(6)
					calls := 0
					noise := func() []float64 {
						calls++
						v := make([]float32, n)
						twinNoise.Randn(v)
						return to64(v)
					}
					want := twin(m, to64(start), to64(sig), denoiser64(dn.f64), noise, float64(eta))
					var maxDiff, scale float64
					for i := range x {
						maxDiff = max(maxDiff, math.Abs(float64(x[i])-want[i]))
						scale = max(scale, math.Abs(want[i]))
					}
					if maxDiff > 1e-5*scale {
						t.Errorf("%s: differs from the float64 twin by %.3g (scale %.3g)", name, maxDiff, scale)
					}
					if src.calls != calls {
						t.Errorf("%s: %d noise calls, the twin made %d", name, src.calls, calls)
					}
				}
			}
		}
	}
}

type countingSource struct {
	rng.Source
	calls int
}

func (c *countingSource) Randn(dst []float32) {
	c.calls++
	c.Source.Randn(dst)
}

// TestConstantDenoiser: with a denoiser that always answers c, the
// probability-flow ODE's solution is x(σ) = c + (x_0 - c)·σ/σ_0, which
// every deterministic step reproduces (each step is exact for it), so
// every intermediate state lies on it and the result is c.
func TestConstantDenoiser(t *testing.T) {
	d, _ := NewCompVis(nil)
	sig, _ := d.Schedule(Karras, 8)
	const n = 64
	c := make([]float32, n)
	x0 := make([]float32, n)
	for i := range c {
		c[i] = float32(math.Cos(float64(i)))
		x0[i] = float32(i%7) - 3
	}
	constant := func(ctx context.Context, x []float32, sigma float32, step int) ([]float32, error) { return c, nil }
	for _, m := range []Method{Euler, Heun, DPM2, DPMPP2M, DDIMTrailing} {
		s := New(m, nil)
		x := append([]float32(nil), x0...)
		s.OnStep = func(st Step) {
			for i, v := range st.X {
				want := float64(c[i]) + (float64(x0[i])-float64(c[i]))*float64(st.SigmaNext)/float64(sig[0])
				if math.Abs(float64(v)-want) > 1e-5 {
					t.Fatalf("%s step %d: x[%d] = %g, want %g", m, st.Index+1, i, v, want)
				}
			}
		}
		if err := s.Run(context.Background(), x, sig, constant); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGaussianConvergence: for unit Gaussian data the exact denoiser is
// D(x, σ) = x/(1+σ²) and the ODE's solution is
// x(σ) = x_T·sqrt((1+σ²)/(1+σ_0²)). Doubling the steps must shrink the
// error at σ_min (the state before the last step, which every method
// takes as a first-order step to 0) about 2 times for the first-order
// methods and about 4 times for the second-order ones.
func TestGaussianConvergence(t *testing.T) {
	d, _ := NewCompVis(nil)
	gauss := denoiser32(func(x, s float64, i int) float64 { return x / (1 + s*s) })
	errAt := func(m Method, steps int) float64 {
		sig, _ := d.Schedule(Karras, steps)
		x0 := []float32{1, -2, 0.5}
		x := append([]float32(nil), x0...)
		s0, sMin := float64(sig[0]), float64(sig[steps-1])
		var e float64
		s := New(m, nil)
		s.OnStep = func(st Step) {
			if st.Index != steps-2 {
				return
			}
			for i, v := range st.X {
				want := float64(x0[i]) * math.Sqrt((1+sMin*sMin)/(1+s0*s0))
				e = max(e, math.Abs(float64(v)-want))
			}
		}
		if err := s.Run(context.Background(), x, sig, gauss); err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, c := range []struct {
		m     Method
		ratio float64 // error(n)/error(2n) at least
	}{
		{Euler, 1.6},
		{DDIMTrailing, 1.6},
		{Heun, 3},
		{DPM2, 3},
		{DPMPP2M, 3},
	} {
		e10, e20 := errAt(c.m, 10), errAt(c.m, 20)
		t.Logf("%s: error %.3g at 10 steps, %.3g at 20 (ratio %.2f)", c.m, e10, e20, e10/e20)
		if e10/e20 < c.ratio {
			t.Errorf("%s: doubling the steps shrank the error only %.2f times, want %g", c.m, e10/e20, c.ratio)
		}
	}
}

// TestAncestralMarginal: ancestral samplers with the exact Gaussian
// denoiser end near the data distribution, std 1, through fresh noise;
// euler_a is first order (measured: std 0.903 at 30 Karras steps, 0.970
// at 100, 0.990 at 300), dpm++2s_a second (0.993, 1.001).
func TestAncestralMarginal(t *testing.T) {
	d, _ := NewCompVis(nil)
	gauss := denoiser32(func(x, s float64, i int) float64 { return x / (1 + s*s) })
	for _, c := range []struct {
		m      Method
		steps  int
		maxDev float64
	}{
		{EulerA, 30, 0.15},
		{EulerA, 100, 0.05},
		{DPMPP2SA, 30, 0.02},
		{DPMPP2SA, 100, 0.015},
	} {
		sig, _ := d.Schedule(Karras, c.steps)
		x := make([]float32, 1<<14)
		rng.NewPhilox(11).Randn(x)
		NoiseScaling(x, nil, x, sig[0])
		if err := New(c.m, rng.NewPhilox(12)).Run(context.Background(), x, sig, gauss); err != nil {
			t.Fatal(err)
		}
		var sq float64
		for _, v := range x {
			sq += float64(v) * float64(v)
		}
		std := math.Sqrt(sq / float64(len(x)))
		if math.Abs(std-1) > c.maxDev {
			t.Errorf("%s, %d steps: final std %.4f, want 1 ± %g", c.m, c.steps, std, c.maxDev)
		}
	}
}

// TestCalls: the denoiser calls and noise draws each method makes, and
// what Calls predicts for the progress count.
func TestCalls(t *testing.T) {
	d, _ := NewCompVis(nil)
	sig, _ := d.Schedule(Discrete, 5)
	for _, c := range []struct {
		m            Method
		eta          float32
		calls, draws int
	}{
		{Euler, 0, 5, 0},
		{EulerA, 1, 5, 4},
		{EulerA, 0, 5, 0},
		{DDIMTrailing, 0, 5, 0},
		{DDIMTrailing, 1, 5, 4},
		{Heun, 0, 9, 0},
		{DPM2, 0, 9, 0},
		{DPMPP2M, 0, 5, 0},
		{DPMPP2SA, 1, 9, 4},
		{DPMPP2SA, 0, 9, 4}, // draws even when σ_up is 0, as sd.cpp
		{LCM, 0, 5, 4},
	} {
		src := &countingSource{Source: rng.NewPhilox(1)}
		s := New(c.m, src)
		s.Eta = c.eta
		calls, lastCalls := 0, 0
		s.OnStep = func(st Step) { lastCalls = st.Calls }
		den := denoiser32(denoisers[2].f64)
		counted := func(ctx context.Context, x []float32, sigma float32, step int) ([]float32, error) {
			calls++
			return den(ctx, x, sigma, step)
		}
		if err := s.Run(context.Background(), make([]float32, 16), sig, counted); err != nil {
			t.Fatal(err)
		}
		if calls != c.calls || lastCalls != c.calls || src.calls != c.draws {
			t.Errorf("%s eta %g: %d denoiser calls (Step.Calls %d), %d noise draws; want %d and %d", c.m, c.eta, calls, lastCalls, src.calls, c.calls, c.draws)
		}
		if got := c.m.Calls(sig, c.eta); got != c.calls {
			t.Errorf("%s.Calls = %d, want %d", c.m, got, c.calls)
		}
		if c.m.Stochastic(c.eta) != (c.draws > 0) {
			t.Errorf("%s.Stochastic(%g) = %v, but it draws %d times", c.m, c.eta, c.m.Stochastic(c.eta), c.draws)
		}
	}
}

// TestCancel: a cancelled context stops the run before the next denoiser
// call, naming the step.
func TestCancel(t *testing.T) {
	d, _ := NewCompVis(nil)
	sig, _ := d.Schedule(Discrete, 6)
	for _, m := range Methods {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		den := denoiser32(denoisers[1].f64)
		stopAfter3 := func(c context.Context, x []float32, sigma float32, step int) ([]float32, error) {
			calls++
			if calls == 3 {
				cancel()
			}
			return den(c, x, sigma, step)
		}
		err := New(m, rng.NewPhilox(1)).Run(ctx, make([]float32, 8), sig, stopAfter3)
		var se *StepError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &se) {
			t.Fatalf("%s: %v, want a StepError wrapping context.Canceled", m, err)
		}
		if calls != 3 {
			t.Errorf("%s: %d denoiser calls after cancelling in the third", m, calls)
		}
		wantStep := 4 // one call a step: the fourth is refused
		if m == Heun || m == DPM2 || m == DPMPP2SA {
			wantStep = 2
		}
		if se.Step != wantStep || se.Steps != 6 {
			t.Errorf("%s: stopped at step %d/%d, want %d/6", m, se.Step, se.Steps, wantStep)
		}
		cancel()
	}
}

// TestNonFinite: a NaN or an Inf in the latent fails the step that made
// it, with the first bad index; a denoiser's error names its step too.
func TestNonFinite(t *testing.T) {
	d, _ := NewCompVis(nil)
	sig, _ := d.Schedule(Discrete, 4)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		for _, m := range Methods {
			den := denoiser32(denoisers[2].f64)
			breakAt2 := func(c context.Context, x []float32, sigma float32, step int) ([]float32, error) {
				out, err := den(c, x, sigma, step)
				if step == 1 {
					out[5] = bad
				}
				return out, err
			}
			err := New(m, rng.NewPhilox(1)).Run(context.Background(), make([]float32, 8), sig, breakAt2)
			var se *StepError
			if !errors.Is(err, ErrNonFinite) || !errors.As(err, &se) || se.Step != 2 || se.Index != 5 {
				t.Errorf("%s with %g at step 2: %v", m, bad, err)
			}
		}
	}
	boom := errors.New("boom")
	failing := func(c context.Context, x []float32, sigma float32, step int) ([]float32, error) { return nil, boom }
	err := New(Euler, nil).Run(context.Background(), make([]float32, 8), sig, failing)
	if !errors.Is(err, boom) || err.Error() != "generate: euler step 1/4 (sigma 14.6147): boom" {
		t.Errorf("denoiser error: %v", err)
	}
}

func TestRunArguments(t *testing.T) {
	den := denoiser32(denoisers[0].f64)
	ok := []float32{2, 1, 0}
	for _, c := range []struct {
		name   string
		s      *Sampler
		x, sig []float32
	}{
		{"unknown method", &Sampler{Method: "plms"}, make([]float32, 4), ok},
		{"empty latent", New(Euler, nil), nil, ok},
		{"one sigma", New(Euler, nil), make([]float32, 4), []float32{1}},
		{"zero before the end", New(Euler, nil), make([]float32, 4), []float32{2, 0, 0}},
		{"negative sigma", New(Euler, nil), make([]float32, 4), []float32{2, -1, 0}},
		{"NaN sigma", New(Euler, nil), make([]float32, 4), []float32{float32(math.NaN()), 0}},
		{"no noise", New(EulerA, nil), make([]float32, 4), ok},
	} {
		err := c.s.Run(context.Background(), c.x, c.sig, den)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v, want an *Error", c.name, err)
		}
	}
	wrongLen := func(c context.Context, x []float32, sigma float32, step int) ([]float32, error) { return x[:1], nil }
	if err := New(Euler, nil).Run(context.Background(), make([]float32, 4), ok, wrongLen); err == nil {
		t.Error("a denoiser output of the wrong length was accepted")
	}
}

// TestNoAllocPerStep: after the first run, a run allocates the same
// (small, constant) amount whatever its step count.
func TestNoAllocPerStep(t *testing.T) {
	d, _ := NewCompVis(nil)
	x := make([]float32, 4096)
	out := make([]float32, 4096)
	den := func(c context.Context, in []float32, sigma float32, step int) ([]float32, error) {
		for i, v := range in {
			out[i] = v / (1 + sigma*sigma)
		}
		return out, nil
	}
	for _, m := range Methods {
		s := New(m, rng.NewPhilox(1))
		allocs := func(steps int) float64 {
			sig, _ := d.Schedule(Karras, steps)
			s.Run(context.Background(), x, sig, den) // warm up the buffers
			return testing.AllocsPerRun(3, func() { s.Run(context.Background(), x, sig, den) })
		}
		if a4, a20 := allocs(4), allocs(20); a20 != a4 || a4 > 2 {
			t.Errorf("%s: %g allocations for 4 steps, %g for 20", m, a4, a20)
		}
	}
}

func TestParseMethod(t *testing.T) {
	for _, m := range Methods {
		if got, err := ParseMethod(string(m)); err != nil || got != m {
			t.Errorf("ParseMethod(%q) = %q, %v", m, got, err)
		}
	}
	_, err := ParseMethod("dpmpp_2m")
	if err == nil || err.Error() != `generate: unknown sampler "dpmpp_2m" (known: euler, euler_a, heun, dpm2, dpm++2m, dpm++2s_a, lcm, ddim_trailing)` {
		t.Errorf("ParseMethod error: %v", err)
	}
}

// TestEpsDenoiser: cfg 1 calls the network once (no unconditional pass),
// another scale twice; the output is x - σ·ε.
func TestEpsDenoiser(t *testing.T) {
	d, _ := NewCompVis(nil)
	for _, c := range []struct {
		cfg   float32
		calls int
		eps   float32 // cond 1, uncond 3: 3 + cfg·(1-3)
	}{
		{1, 1, 1},
		{7, 2, -11},
		{0, 2, 3},
	} {
		calls := 0
		net := func(ctx context.Context, xIn []float32, t float32, uncond bool, eps []float32) error {
			calls++
			v := float32(1)
			if uncond {
				v = 3
			}
			for i := range eps {
				eps[i] = v
			}
			return nil
		}
		e := &EpsDenoiser{CompVis: d, Net: net, CFGScale: c.cfg}
		x := []float32{2, -4}
		out, err := e.Denoise(context.Background(), x, 0.5, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range out {
			if want := x[i] - 0.5*c.eps; v != want {
				t.Errorf("cfg %g: denoised[%d] = %g, want %g", c.cfg, i, v, want)
			}
		}
		if calls != c.calls {
			t.Errorf("cfg %g: %d network calls, want %d", c.cfg, calls, c.calls)
		}
	}
}
