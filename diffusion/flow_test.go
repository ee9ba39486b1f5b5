package diffusion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// Wan's tiny text-to-video run (shared/golden/wan/README.md §3d): the
// scheduler's numbers and the UniPC arithmetic on the stored per-step
// network outputs. The whole chain (umT5, the DiT, the noise) is checked in
// diffusion/wan.

func wanGolden(t *testing.T, name string) []float32 {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "golden/wan/"+name))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return v
}

// TestShiftedFlowSchedule: the tiny run's timesteps and float32 sigmas
// (t2v_tiny.run.json) bit for bit, and other step counts and shifts
// against the same formula in float64.
func TestShiftedFlowSchedule(t *testing.T) {
	raw, err := os.ReadFile(shared.Path(t, "golden/wan/t2v_tiny.run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		Steps     int       `json:"steps"`
		Shift     float64   `json:"shift"`
		Timesteps []int     `json:"timesteps"`
		Sigmas    []float64 `json:"sigmas"`
	}
	if err := json.Unmarshal(raw, &run); err != nil {
		t.Fatal(err)
	}
	s, err := ShiftedFlowSchedule(run.Steps, run.Shift)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.Timesteps) != fmt.Sprint(run.Timesteps) {
		t.Errorf("timesteps %v, want %v", s.Timesteps, run.Timesteps)
	}
	for i, w := range run.Sigmas {
		if s.Sigmas[i] != float32(w) {
			t.Errorf("sigmas[%d] = %.9g, want %.9g", i, s.Sigmas[i], w)
		}
	}
	for _, c := range []struct {
		steps int
		shift float64
		first int
		last  int
	}{
		{50, 5, 999, 92}, {30, 3, 999, 93}, {1, 5, 999, 999}, {20, 1, 999, 49},
	} {
		s, err := ShiftedFlowSchedule(c.steps, c.shift)
		if err != nil {
			t.Fatal(err)
		}
		n := s.Steps()
		if n != c.steps || len(s.Sigmas) != n+1 || s.Sigmas[n] != 0 || s.Timesteps[0] != c.first || s.Timesteps[n-1] != c.last {
			t.Errorf("%d steps shift %g: %d timesteps %d..%d, sigmas %d ending %g; want %d..%d", c.steps, c.shift, n, s.Timesteps[0], s.Timesteps[n-1], len(s.Sigmas), s.Sigmas[n], c.first, c.last)
		}
	}
	for _, c := range []struct {
		steps int
		shift float64
		want  string
	}{{0, 5, "steps = 0"}, {1001, 5, "steps = 1001"}, {4, 0, "shift = 0"}, {4, math.NaN(), "shift = NaN"}, {4, math.Inf(1), "shift = +Inf"}} {
		if _, err := ShiftedFlowSchedule(c.steps, c.shift); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d steps shift %g: error %v, want %q", c.steps, c.shift, err, c.want)
		}
	}
}

// TestFlowUniPCGolden: UniPC over the tiny run's schedule, fed the stored
// CFG velocities (pred_cfg) of each step, against the stored x0,
// corrected sample and output of every step and the final latent.
// Tolerance: the README's whole-chain numbers (1e-3, 1e-4); the sampler
// alone lands far inside them.
func TestFlowUniPCGolden(t *testing.T) {
	s, err := ShiftedFlowSchedule(4, 5)
	if err != nil {
		t.Fatal(err)
	}
	x := wanGolden(t, "t2v_tiny.noise.f32")
	var worst float64
	checkStep := func(name string, got, want []float32) {
		t.Helper()
		var mx, d2, r2 float64
		for i, w := range want {
			d := float64(got[i]) - float64(w)
			mx = max(mx, math.Abs(d))
			d2 += d * d
			r2 += float64(w) * float64(w)
		}
		rel := math.Sqrt(d2 / r2)
		worst = max(worst, rel)
		t.Logf("%-26s max |Δ| %.2e rel L2 %.2e", name, mx, rel)
		if mx > 1e-3 || rel > 1e-4 || len(got) != len(want) {
			t.Errorf("%s: max |Δ| %.3g, rel L2 %.3g (tolerances 1e-3, 1e-4)", name, mx, rel)
		}
	}
	fs := &FlowSampler{Method: UniPC, OnStep: func(st FlowStep) {
		p := fmt.Sprintf("t2v_tiny.step%d.", st.Index)
		checkStep(p+"latent_in", st.In, wanGolden(t, p+"latent_in.f32"))
		checkStep(p+"x0", st.Denoised, wanGolden(t, p+"x0.f32"))
		if st.Index > 0 {
			checkStep(p+"corrected", st.Corrected, wanGolden(t, p+"corrected.f32"))
		} else if st.Corrected != nil {
			t.Error("step 0 reports a corrected sample")
		}
		checkStep(p+"latent_out", st.X, wanGolden(t, p+"latent_out.f32"))
	}}
	var ts []int
	v := func(_ context.Context, _ []float32, tstep, k int) ([]float32, error) {
		ts = append(ts, tstep)
		return wanGolden(t, fmt.Sprintf("t2v_tiny.step%d.pred_cfg.f32", k)), nil
	}
	if err := fs.Run(context.Background(), x, s, v); err != nil {
		t.Fatal(err)
	}
	checkStep("final_latent", x, wanGolden(t, "t2v_tiny.final_latent.f32"))
	if fmt.Sprint(ts) != "[999 937 833 624]" {
		t.Errorf("network called at %v", ts)
	}
	if worst > 1e-5 {
		t.Errorf("worst rel L2 %.3g: the sampler alone should be within float32 rounding", worst)
	}
}

// TestFlowExact: for one data point the exact velocity field is v(x, σ) =
// (x − x0)/σ; every flow sampler must then land on x0 (UniPC: its x0
// prediction is exact at every step; Euler: the path is straight).
func TestFlowExact(t *testing.T) {
	target := []float32{0.5, -1.25, 2, 0, -0.03125, 3.5}
	noise := []float32{1.2, -0.4, 0.3, -2.1, 0.8, -0.6}
	for _, m := range FlowMethods {
		for _, steps := range []int{1, 2, 3, 10, 50} {
			s, err := ShiftedFlowSchedule(steps, 5)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float32, len(noise))
			for i := range x {
				x[i] = (1-s.Sigmas[0])*target[i] + s.Sigmas[0]*noise[i]
			}
			out := make([]float32, len(x))
			v := func(_ context.Context, x []float32, _, k int) ([]float32, error) {
				for i := range x {
					out[i] = (x[i] - target[i]) / s.Sigmas[k]
				}
				return out, nil
			}
			calls := 0
			fs := &FlowSampler{Method: m, OnStep: func(FlowStep) { calls++ }}
			if err := fs.Run(context.Background(), x, s, v); err != nil {
				t.Fatal(err)
			}
			for i := range x {
				if math.Abs(float64(x[i]-target[i])) > 2e-5 {
					t.Errorf("%s %d steps: x[%d] = %g, want %g", m, steps, i, x[i], target[i])
				}
			}
			if calls != steps {
				t.Errorf("%s %d steps: %d reports", m, steps, calls)
			}
		}
	}
}

// TestFlowOrder: for Gaussian data x0 ~ N(μ, s²) the flow's exact
// velocity is v = (x − E[x0|x])/σ with E[x0|x] = μ + (1−σ)s²/((1−σ)²s² +
// σ²)·(x − (1−σ)μ), and the ODE keeps z = (x − (1−σ)μ)/√((1−σ)²s² + σ²),
// so it ends at μ + s·z. Both converge as steps grow, UniPC (second order
// in λ) faster: from 8 to 32 steps Euler's error falls 3.5×, UniPC's 14×.
func TestFlowOrder(t *testing.T) {
	mu := []float64{0.5, -1, 2, 0.1}
	const s2 = 0.25
	z := []float64{1.3, -0.7, 0.2, -2}
	run := func(m Method, steps int) float64 {
		sch, err := ShiftedFlowSchedule(steps, 5)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, len(mu))
		sd0 := float64(sch.Sigmas[0])
		for i := range x {
			x[i] = float32((1-sd0)*mu[i] + z[i]*math.Sqrt((1-sd0)*(1-sd0)*s2+sd0*sd0))
		}
		out := make([]float32, len(x))
		fs := &FlowSampler{Method: m}
		err = fs.Run(context.Background(), x, sch, func(_ context.Context, x []float32, _, k int) ([]float32, error) {
			sg := float64(sch.Sigmas[k])
			a := 1 - sg
			for i, xi := range x {
				x0 := mu[i] + a*s2/(a*a*s2+sg*sg)*(float64(xi)-a*mu[i])
				out[i] = float32((float64(xi) - x0) / sg)
			}
			return out, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var e float64
		for i := range x {
			e = max(e, math.Abs(float64(x[i])-(mu[i]+math.Sqrt(s2)*z[i])))
		}
		return e
	}
	eu8, eu32, uni8, uni32 := run(Euler, 8), run(Euler, 32), run(UniPC, 8), run(UniPC, 32)
	t.Logf("max error at σ = 0: euler 8 steps %.2e, 32 steps %.2e; unipc 8 steps %.2e, 32 steps %.2e", eu8, eu32, uni8, uni32)
	if !(eu32 < eu8/2) || !(uni32 < uni8/8) || !(uni32 < eu32/3) {
		t.Errorf("euler 8 %.3g, 32 %.3g; unipc 8 %.3g, 32 %.3g: want both to converge and unipc well ahead", eu8, eu32, uni8, uni32)
	}
}

// TestFlowErrors: bad schedules, methods and network outputs are refused,
// a cancelled run stops before the first call, and a non-finite latent
// fails its step.
func TestFlowErrors(t *testing.T) {
	good, _ := ShiftedFlowSchedule(3, 5)
	ok := func(_ context.Context, x []float32, _, _ int) ([]float32, error) { return make([]float32, len(x)), nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name  string
		m     Method
		ctx   context.Context
		x     []float32
		s     FlowSchedule
		v     Velocity
		want  string
		is    error
		steps bool // a *StepError
	}{
		{"method", "dpm++2m", nil, []float32{1}, good, ok, `unknown flow sampler "dpm++2m"`, nil, false},
		{"empty", UniPC, nil, nil, good, ok, "empty latent", nil, false},
		{"lengths", UniPC, nil, []float32{1}, FlowSchedule{Timesteps: []int{999}, Sigmas: []float32{0.9}}, ok, "1 timesteps and 1 sigmas", nil, false},
		{"rising", UniPC, nil, []float32{1}, FlowSchedule{Timesteps: []int{1, 2}, Sigmas: []float32{0.5, 0.6, 0}}, ok, "sigmas[1] = 0.6", nil, false},
		{"zero inside", Euler, nil, []float32{1}, FlowSchedule{Timesteps: []int{1, 2}, Sigmas: []float32{0.5, 0, 0}}, ok, "sigmas[1] = 0", nil, false},
		{"one for unipc", UniPC, nil, []float32{1}, FlowSchedule{Timesteps: []int{1000}, Sigmas: []float32{1, 0}}, ok, "sigmas[0] = 1", nil, false},
		{"cancelled", UniPC, cancelled, []float32{1}, good, ok, "step 1/3", context.Canceled, true},
		{"short output", Euler, nil, []float32{1, 2}, good, func(context.Context, []float32, int, int) ([]float32, error) { return []float32{1}, nil },
			"returned 1 values for a latent of 2", nil, true},
		{"network error", UniPC, nil, []float32{1}, good, func(_ context.Context, _ []float32, _, k int) ([]float32, error) {
			if k == 1 {
				return nil, errors.New("boom")
			}
			return []float32{0}, nil
		}, "unipc step 2/3 (sigma 0.908843): boom", nil, true},
		{"nan", UniPC, nil, []float32{1, 2}, good, func(context.Context, []float32, int, int) ([]float32, error) {
			return []float32{0, float32(math.Inf(1))}, nil
		}, "non-finite latent: x[1]", ErrNonFinite, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := c.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			err := (&FlowSampler{Method: c.m}).Run(ctx, c.x, c.s, c.v)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			var se *StepError
			if errors.As(err, &se) != c.steps {
				t.Errorf("error %v: *StepError %v, want %v", err, !c.steps, c.steps)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
		})
	}
	if _, err := ParseFlowMethod("euler_a"); err == nil || !strings.Contains(err.Error(), "unipc, euler") {
		t.Errorf("ParseFlowMethod(euler_a): %v", err)
	}
	if m, err := ParseFlowMethod("unipc"); m != UniPC || err != nil {
		t.Errorf("ParseFlowMethod(unipc) = %v, %v", m, err)
	}
}

// TestFlowGuidance: the prompt's prediction first, then the negative's,
// combined as uncond + scale·(cond − uncond); at scale 1 one call; a
// failing call names its half.
func TestFlowGuidance(t *testing.T) {
	var calls []bool
	net := func(_ context.Context, x []float32, ts int, uncond bool, v []float32) error {
		calls = append(calls, uncond)
		if ts == 13 && uncond {
			return errors.New("boom")
		}
		for i := range v {
			v[i] = x[i] + 1
			if uncond {
				v[i] = x[i] - 1
			}
		}
		return nil
	}
	g := &FlowGuidance{Net: net, CFGScale: 5}
	out, err := g.Velocity(context.Background(), []float32{0, 2}, 999, 0)
	if err != nil || fmt.Sprint(out) != "[9 11]" || fmt.Sprint(calls) != "[false true]" {
		t.Errorf("scale 5: %v %v, calls %v; want [9 11] (−1 + 5·2, 1 + 5·2), cond then uncond", out, err, calls)
	}
	calls = nil
	g1 := &FlowGuidance{Net: net, CFGScale: 1}
	if out, err := g1.Velocity(context.Background(), []float32{0, 2}, 999, 0); err != nil || fmt.Sprint(out) != "[1 3]" || len(calls) != 1 {
		t.Errorf("scale 1: %v %v, %d calls; want [1 3] from one call", out, err, len(calls))
	}
	if _, err := g.Velocity(context.Background(), []float32{0}, 13, 1); err == nil || !strings.Contains(err.Error(), "unconditional prediction at t 13: boom") {
		t.Errorf("error %v", err)
	}
}
