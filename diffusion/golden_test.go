package diffusion

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// The goldens of shared/golden/sd15 (README.md there): stable-diffusion.cpp
// on the random-weight SD 1.5 checkpoint. This file checks what needs no
// network: the σ tables, the schedules, the per-step scalings, CFG and the
// euler and euler_a arithmetic on the stored per-step tensors.

func golden(t *testing.T, name string) []float32 {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "golden/sd15/"+name))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// parse32 parses a %.9g float32 (which round-trips exactly).
func parse32(t *testing.T, s string) float32 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 32)
	if err != nil {
		t.Fatal(err)
	}
	return float32(f)
}

// ulpDiff is |a - b| in float32 units in the last place (0 for equal
// values, including +0 and -0).
func ulpDiff(a, b float32) int64 {
	if a == b {
		return 0
	}
	key := func(f float32) int64 {
		u := int64(math.Float32bits(f))
		if u&0x80000000 != 0 {
			return 0x80000000 - u
		}
		return u
	}
	d := key(a) - key(b)
	if d < 0 {
		d = -d
	}
	return d
}

// diff reports how got differs from want: the number of values whose bits
// differ and the largest |got-want| relative to want's largest magnitude.
func diff(got, want []float32) (differ int, rel float64) {
	var maxAbs, scale float64
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			differ++
		}
		maxAbs = max(maxAbs, math.Abs(float64(got[i])-float64(want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	return differ, maxAbs / scale
}

// TestSigmaTables checks the σ table bit for bit and the log σ table
// within 1 ulp: glibc's logf is not always correctly rounded (its error
// bound is 0.82 ulp) and Go's float32(math.Log) nearly always is.
func TestSigmaTables(t *testing.T) {
	d, err := NewCompVis(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file   string
		got    []float32
		maxULP int64
	}{
		{"sigma_table.f32", d.Sigmas[:], 0},
		{"log_sigma_table.f32", d.LogSigmas[:], 1},
	} {
		want := golden(t, c.file)
		n := 0
		for i := range want {
			if u := ulpDiff(c.got[i], want[i]); u > c.maxULP {
				t.Errorf("%s[%d] = %.9g, want %.9g", c.file, i, c.got[i], want[i])
			} else if u != 0 {
				n++
			}
		}
		t.Logf("%s: %d of %d values bit-exact, the others 1 ulp", c.file, len(want)-n, len(want))
	}
	var js struct {
		SigmaMin    float64    `json:"sigma_min"`
		SigmaMax    float64    `json:"sigma_max"`
		ACFirstLast [2]float64 `json:"alphas_cumprod_first_last"`
	}
	readJSON(t, "sigmas.json", &js)
	ac := AlphasCumprod()
	for _, c := range []struct {
		name      string
		got, want float32
	}{
		{"sigma_min", d.SigmaMin(), float32(js.SigmaMin)},
		{"sigma_max", d.SigmaMax(), float32(js.SigmaMax)},
		{"alphas_cumprod[0]", ac[0], float32(js.ACFirstLast[0])},
		{"alphas_cumprod[999]", ac[999], float32(js.ACFirstLast[1])},
	} {
		if c.got != c.want {
			t.Errorf("%s = %.9g, want %.9g", c.name, c.got, c.want)
		}
	}
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "golden/sd15/"+name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestScheduleGolden checks sigmas.json: the discrete and Karras σ lists
// for 13 step counts and the UNet timestep of each σ, against sd.cpp's own
// code: exact or 1 ulp (Go's logf/expf are not glibc's).
func TestScheduleGolden(t *testing.T) {
	d, _ := NewCompVis(nil)
	var js map[string]json.RawMessage
	readJSON(t, "sigmas.json", &js)
	for _, s := range []Scheduler{Discrete, Karras} {
		var cases map[string]struct {
			Sigmas []float64
			T      []float64
		}
		if err := json.Unmarshal(js[string(s)], &cases); err != nil {
			t.Fatal(err)
		}
		var nSig, exactSig, nT, exactT int
		for key, c := range cases {
			n, _ := strconv.Atoi(key)
			if s == Karras && n == 1 {
				continue // NaN in sd.cpp, refused here (TestScheduleEdges)
			}
			got, err := d.Schedule(s, n)
			if err != nil {
				t.Fatalf("%s %d: %v", s, n, err)
			}
			if len(got) != len(c.Sigmas) {
				t.Fatalf("%s %d: %d sigmas, want %d", s, n, len(got), len(c.Sigmas))
			}
			for i, w := range c.Sigmas {
				nSig++
				switch u := ulpDiff(got[i], float32(w)); {
				case u == 0:
					exactSig++
				case u > 1:
					t.Errorf("%s %d: sigma[%d] = %.9g, want %.9g", s, n, i, got[i], w)
				}
			}
			for i, w := range c.T {
				nT++
				switch u := ulpDiff(d.SigmaToT(got[i]), float32(w)); {
				case u == 0:
					exactT++
				case u > 1:
					t.Errorf("%s %d: t[%d] = %.9g, want %.9g", s, n, i, d.SigmaToT(got[i]), w)
				}
			}
		}
		t.Logf("%s: %d of %d sigmas and %d of %d timesteps bit-exact, the rest 1 ulp", s, exactSig, nSig, exactT, nT)
	}
}

// traceStep is one "# step" line of a <case>.trace.txt.
type traceStep struct{ sigma, t, cIn, cOut, cSkip float32 }

func readTrace(t *testing.T, name string) (sigmas []float32, steps []traceStep) {
	t.Helper()
	f, err := os.Open(shared.Path(t, "golden/sd15/"+name+".trace.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) > 2 && fields[1] == "sigmas":
			for _, s := range fields[2:] {
				sigmas = append(sigmas, parse32(t, s))
			}
		case len(fields) == 8 && fields[1] == "step":
			v := map[string]float32{}
			for _, kv := range fields[3:] {
				k, val, _ := strings.Cut(kv, "=")
				v[k] = parse32(t, val)
			}
			steps = append(steps, traceStep{v["sigma"], v["t"], v["c_in"], v["c_out"], v["c_skip"]})
		}
	}
	return sigmas, steps
}

// TestTraces checks every case's sampled σ list and, per step, the UNet
// timestep and the scalings, bit for bit (img2img's list through StartAt).
func TestTraces(t *testing.T) {
	d, _ := NewCompVis(nil)
	for _, c := range []struct {
		name      string
		scheduler Scheduler
		strength  float32
	}{
		{"t2i_euler", Discrete, 1},
		{"t2i_euler.f32", Discrete, 1},
		{"t2i_euler_a", Discrete, 1},
		{"t2i_dpmpp2m_karras", Karras, 1},
		{"t2i_negative", Discrete, 1},
		{"t2i_emphasis", Discrete, 1},
		{"i2i_astronaut_s060", Discrete, 0.6},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantSig, steps := readTrace(t, c.name)
			sig, err := d.Schedule(c.scheduler, 4)
			if err != nil {
				t.Fatal(err)
			}
			start, err := StartAt(sig, c.strength)
			if err != nil {
				t.Fatal(err)
			}
			sig = sig[start:]
			if n, _ := diff(sig, wantSig); len(sig) != len(wantSig) || n != 0 {
				t.Fatalf("sigmas %v, want %v", sig, wantSig)
			}
			for i, s := range steps {
				cSkip, cOut, cIn := d.Scalings(sig[i])
				got := traceStep{sig[i], d.SigmaToT(sig[i]), cIn, cOut, cSkip}
				if got != s {
					t.Errorf("step %d: %+v, want %+v", i+1, got, s)
				}
			}
		})
	}
}

// goldenEps is a network that replays t2i_euler's stored UNet outputs: the
// call at timestep t is step k (found by t), whose scaled input must be the
// golden step input times c_in within tol (0: bit for bit).
type goldenEps struct {
	t     *testing.T
	name  string
	ts    []float32 // timestep of each step
	x     [][]float32
	cond  [][]float32
	unc   [][]float32
	cIn   []float32
	tol   float64
	exact int // calls whose input was bit-exact
}

func (g *goldenEps) net(ctx context.Context, xIn []float32, t float32, uncond bool, eps []float32) error {
	k := -1
	for i, ts := range g.ts {
		if ts == t {
			k = i
		}
	}
	if k < 0 {
		return fmt.Errorf("no golden step has t = %g", t)
	}
	want := make([]float32, len(xIn))
	for i, v := range g.x[k] {
		want[i] = v * g.cIn[k]
	}
	n, rel := diff(xIn, want)
	if n == 0 {
		g.exact++
	}
	if rel > g.tol {
		g.t.Errorf("%s step %d: UNet input differs from the golden one by %.3g (relative), %d values", g.name, k+1, rel, n)
	}
	src := g.cond[k]
	if uncond {
		src = g.unc[k]
	}
	copy(eps, src)
	return nil
}

// TestEulerGolden checks t2i_euler's sampler arithmetic (for the F16 and
// the F32 checkpoint runs): x_T = noise·σ_0 is step01_x; per step, the
// golden x, eps_cond and eps_uncond with cfg 7 give stepNN_denoised, and
// the euler step gives the next stepNN_x (the last, final_latent), each
// from the golden inputs; then the whole Sampler with EpsDenoiser replaying
// the golden UNet outputs walks the same states. README 7 allows a
// relative error of 1e-5; the arithmetic is bit-exact.
func TestEulerGolden(t *testing.T) {
	d, _ := NewCompVis(nil)
	for _, name := range []string{"t2i_euler", "t2i_euler.f32"} {
		t.Run(name, func(t *testing.T) {
			sig, _ := d.Schedule(Discrete, 4)
			var xs, cond, unc, dens [][]float32
			for k := 1; k <= 4; k++ {
				p := fmt.Sprintf("%s.step%02d_", name, k)
				xs = append(xs, golden(t, p+"x.f32"))
				cond = append(cond, golden(t, p+"eps_cond.f32"))
				unc = append(unc, golden(t, p+"eps_uncond.f32"))
				dens = append(dens, golden(t, p+"denoised.f32"))
			}
			final := golden(t, name+".final_latent.f32")
			next := append(xs[1:], final)
			noise := golden(t, name+".noise.f32")

			x := make([]float32, len(noise))
			NoiseScaling(x, nil, noise, sig[0])
			check(t, "x_T", x, xs[0])

			for k := range 4 {
				eps := make([]float32, len(x))
				CFG(eps, cond[k], unc[k], 7)
				_, cOut, _ := d.Scalings(sig[k])
				den := make([]float32, len(x))
				for i := range den {
					den[i] = float32(eps[i]*cOut) + xs[k][i]
				}
				check(t, fmt.Sprintf("step%02d_denoised", k+1), den, dens[k])
				copy(x, xs[k])
				s := New(Euler, nil)
				oneStep := func(ctx context.Context, _ []float32, _ float32, _ int) ([]float32, error) { return dens[k], nil }
				if err := s.Run(context.Background(), x, sig[k:k+2], oneStep); err != nil {
					t.Fatal(err)
				}
				check(t, fmt.Sprintf("step %d -> next x", k+1), x, next[k])
			}

			g := &goldenEps{t: t, name: name, x: xs, cond: cond, unc: unc, tol: 1e-5}
			for _, s := range sig[:4] {
				_, _, cIn := d.Scalings(s)
				g.ts = append(g.ts, d.SigmaToT(s))
				g.cIn = append(g.cIn, cIn)
			}
			den := &EpsDenoiser{CompVis: d, Net: g.net, CFGScale: 7}
			s := New(Euler, nil)
			var seen int
			s.OnStep = func(st Step) {
				check(t, fmt.Sprintf("run: after step %d", st.Index+1), st.X, next[st.Index])
				check(t, fmt.Sprintf("run: step %d denoised", st.Index+1), st.Denoised, dens[st.Index])
				seen++
			}
			NoiseScaling(x, nil, noise, sig[0])
			if err := s.Run(context.Background(), x, sig, den.Denoise); err != nil {
				t.Fatal(err)
			}
			if seen != 4 || g.exact != 8 {
				t.Errorf("%d steps reported, %d of 8 UNet inputs bit-exact", seen, g.exact)
			}
		})
	}
}

// check compares a tensor with its golden: within README 7's relative
// error 1e-5 (largest difference over the golden's largest magnitude), and
// bit for bit: these steps are float32 additions, multiplications,
// divisions and square roots in sd.cpp's order, which IEEE 754 fixes.
func check(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	n, rel := diff(got, want)
	if rel > 1e-5 {
		t.Errorf("%s: max relative error %.3g (%d of %d values differ)", what, rel, n, len(want))
	} else if n != 0 {
		t.Errorf("%s: within 1e-5 (%.3g) but %d of %d values are not bit-exact", what, rel, n, len(want))
	}
}

// TestEulerAncestralGolden checks t2i_euler_a: Euler ancestral (η = 1) fed
// the golden denoised of each step, with step i's noise from Philox call i
// of seed 42 (call 0 was the initial noise), walks the golden states and
// ends at final_latent; the last step draws no noise.
func TestEulerAncestralGolden(t *testing.T) {
	d, _ := NewCompVis(nil)
	sig, _ := d.Schedule(Discrete, 4)
	var xs, dens [][]float32
	for k := 1; k <= 4; k++ {
		p := fmt.Sprintf("t2i_euler_a.step%02d_", k)
		xs = append(xs, golden(t, p+"x.f32"))
		dens = append(dens, golden(t, p+"denoised.f32"))
	}
	next := append(xs[1:], golden(t, "t2i_euler_a.final_latent.f32"))

	noise := rng.NewPhilox(42)
	x := make([]float32, len(xs[0]))
	noise.Randn(x) // call 0
	check(t, "noise", x, golden(t, "t2i_euler_a.noise.f32"))
	NoiseScaling(x, nil, x, sig[0])
	check(t, "x_T", x, xs[0])

	s := New(EulerA, noise)
	s.OnStep = func(st Step) { check(t, fmt.Sprintf("after step %d", st.Index+1), st.X, next[st.Index]) }
	replay := func(ctx context.Context, in []float32, sigma float32, step int) ([]float32, error) {
		check(t, fmt.Sprintf("input of step %d", step+1), in, xs[step])
		return dens[step], nil
	}
	if err := s.Run(context.Background(), x, sig, replay); err != nil {
		t.Fatal(err)
	}
	if noise.Call() != 4 {
		t.Errorf("after sampling the generator is at call %d, want 4 (noise, then steps 1-3)", noise.Call())
	}
}
