package diffusion

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestScheduleEdges: the values of the small cases, worked out by hand from
// sd.cpp's formulas, and the refusals.
func TestScheduleEdges(t *testing.T) {
	d, _ := NewCompVis(nil)
	ts := func(ts ...float32) []float32 { // σ at integer timesteps (through log and exp), then 0
		out := make([]float32, 0, len(ts)+1)
		for _, t := range ts {
			out = append(out, d.TToSigma(t))
		}
		return append(out, 0)
	}
	for _, c := range []struct {
		s    Scheduler
		n    int
		want []float32
	}{
		{Discrete, 1, []float32{d.TToSigma(999), 0}},
		{Discrete, 2, []float32{d.TToSigma(999), d.TToSigma(0), 0}},
		{Simple, 1, ts(999)},
		{Simple, 3, ts(999, 666, 333)}, // 1000/3 = 333.33334: i·333.33334 truncated
		{Simple, 4, ts(999, 749, 499, 249)},
		{LCMSchedule, 1, ts(999)},
		{LCMSchedule, 4, ts(999, 759, 499, 259)},                     // (50 - 50i/4)·20 - 1
		{LCMSchedule, 8, ts(999, 879, 759, 639, 499, 379, 259, 139)}, // 50i/8 = 0 6 12 18 25 31 37 43
		{Exponential, 2, []float32{expf(logf(d.SigmaMax())), expf(logf(d.SigmaMax()) - (logf(d.SigmaMax()) - logf(d.SigmaMin()))), 0}},
	} {
		got, err := d.Schedule(c.s, c.n)
		if err != nil {
			t.Fatalf("%s %d: %v", c.s, c.n, err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s %d: %v, want %v", c.s, c.n, got, c.want)
		}
		for i := range got {
			if ulpDiff(got[i], c.want[i]) > 0 {
				t.Errorf("%s %d: sigma[%d] = %.9g, want %.9g", c.s, c.n, i, got[i], c.want[i])
			}
		}
	}
	for _, c := range []struct {
		s    Scheduler
		n    int
		want string
	}{
		{Discrete, 0, "steps = 0, want at least 1"},
		{Karras, -3, "steps = -3"},
		{Karras, 1, "the karras scheduler needs at least 2 steps"},
		{Exponential, 1, "the exponential scheduler needs at least 2 steps"},
		{"ays", 4, `unknown scheduler "ays" (known: discrete, karras, exponential, simple, lcm)`},
	} {
		_, err := d.Schedule(c.s, c.n)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %d: %v, want an *Error with %q", c.s, c.n, err, c.want)
		}
	}
}

// TestExponential: log σ evenly spaced from σ_max down to σ_min; the
// values within float32 rounding of exp(log σ_max - i/(n-1)·(log σ_max -
// log σ_min)) in float64 (n = 3: the middle is sqrt(σ_max·σ_min) =
// 0.652896...).
func TestExponential(t *testing.T) {
	d, _ := NewCompVis(nil)
	lmax, lmin := math.Log(float64(d.SigmaMax())), math.Log(float64(d.SigmaMin()))
	for _, n := range []int{2, 3, 4, 10, 20, 50} {
		sig, err := d.Schedule(Exponential, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(sig) != n+1 || sig[n] != 0 {
			t.Fatalf("n %d: %v", n, sig)
		}
		for i := range n {
			want := math.Exp(lmax - float64(i)/float64(n-1)*(lmax-lmin))
			if math.Abs(float64(sig[i])/want-1) > 1e-6 {
				t.Errorf("n %d: sigma[%d] = %.9g, want %.9g", n, i, sig[i], want)
			}
			if i > 0 && !(sig[i] < sig[i-1]) {
				t.Errorf("n %d: not decreasing at %d", n, i)
			}
		}
	}
	sig, _ := d.Schedule(Exponential, 3)
	if math.Abs(float64(sig[1])-0.652896) > 1e-5 {
		t.Errorf("n 3: middle sigma %.9g, want 0.652896", sig[1])
	}
}

// TestTimestepRoundTrip: the timestep of table entry t's σ is t; σ at
// timestep t is the table's within the float32 log-exp round trip's
// error (|log σ| ≤ 3.5 times logf's half ulp: up to 4 ulp); σ outside the
// table clamps to the ends.
func TestTimestepRoundTrip(t *testing.T) {
	d, _ := NewCompVis(nil)
	for i, s := range d.Sigmas {
		if got := d.SigmaToT(s); got != float32(i) {
			t.Fatalf("SigmaToT(sigma[%d]) = %.9g", i, got)
		}
		if got := d.TToSigma(float32(i)); ulpDiff(got, s) > 4 {
			t.Fatalf("TToSigma(%d) = %.9g, want %.9g", i, got, s)
		}
	}
	for _, c := range []struct{ sigma, t float32 }{{100, 999}, {1e-4, 0}, {0, 0}} {
		if got := d.SigmaToT(c.sigma); got != c.t {
			t.Errorf("SigmaToT(%g) = %g, want %g", c.sigma, got, c.t)
		}
	}
	if d.TToSigma(-5) != d.TToSigma(0) || d.TToSigma(2000) != d.TToSigma(999) || !math.IsNaN(float64(d.TToSigma(float32(math.NaN())))) {
		t.Error("TToSigma outside [0, 999]")
	}
}

func TestNewCompVisErrors(t *testing.T) {
	good := AlphasCumprod()
	for _, c := range []struct {
		name string
		ac   []float32
	}{
		{"short", good[:999]},
		{"zero", append(append([]float32(nil), good[:10]...), append([]float32{0}, good[11:]...)...)},
		{"above 1", append([]float32{1.5}, good[1:]...)},
		{"NaN", append([]float32{float32(math.NaN())}, good[1:]...)},
	} {
		if _, err := NewCompVis(c.ac); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	d, err := NewCompVis(good[:])
	if err != nil || d.SigmaMax() != 14.6146555 {
		t.Errorf("the computed table given explicitly: %v, sigma_max %.9g", err, d.SigmaMax())
	}
}

// TestStartAt: img2img's start step, t_enc = int(float32(steps)·strength).
func TestStartAt(t *testing.T) {
	for _, c := range []struct {
		steps    int
		strength float32
		start    int
	}{
		{4, 0.6, 1}, // t_enc 2: the golden i2i case, sigmas 2.918 0.932 0.029 0
		{4, 0.75, 0},
		{4, 0.5, 1},
		{4, 0.25, 2},
		{4, 0.1, 3},  // t_enc 0: one step
		{4, 0.99, 0}, // t_enc int(3.96) = 3
		{4, 1, 0},
		{10, 0.3, 6},   // 10·0.3f = 3.0000001 rounds to 3 in float32
		{10, 0.7, 2},   // 10·0.7f = 6.9999999 in float64 but 7 in float32: t_enc 7
		{20, 0.999, 0}, // t_enc 19
		{1, 0.5, 0},
	} {
		sig := make([]float32, c.steps+1)
		start, err := StartAt(sig, c.strength)
		if err != nil || start != c.start {
			t.Errorf("%d steps, strength %g: start %d, %v; want %d", c.steps, c.strength, start, err, c.start)
		}
	}
	for _, s := range []float32{0, -0.1, 1.01, float32(math.NaN())} {
		if _, err := StartAt(make([]float32, 5), s); err == nil {
			t.Errorf("strength %g accepted", s)
		}
	}
	if _, err := StartAt([]float32{1}, 0.5); err == nil {
		t.Error("a list without a step accepted")
	}
}

func TestParseScheduler(t *testing.T) {
	for _, s := range Schedulers {
		if got, err := ParseScheduler(string(s)); err != nil || got != s {
			t.Errorf("ParseScheduler(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseScheduler("Karras"); err == nil {
		t.Error("names are case-sensitive, as sd.cpp's")
	}
}

// FuzzSchedule: any step count, scheduler and strength give a valid σ list
// or an error, never a panic, NaN or an increase.
func FuzzSchedule(f *testing.F) {
	f.Add(4, uint8(0), float32(0.6))
	f.Add(1, uint8(1), float32(1))
	f.Add(0, uint8(2), float32(0))
	f.Add(37, uint8(3), float32(0.999))
	f.Add(3000, uint8(4), float32(1e-9))
	d, _ := NewCompVis(nil)
	f.Fuzz(func(t *testing.T, n int, which uint8, strength float32) {
		if n > 5000 {
			n %= 5000
		}
		s := Schedulers[int(which)%len(Schedulers)]
		sig, err := d.Schedule(s, n)
		if err != nil {
			return
		}
		if len(sig) != n+1 || sig[n] != 0 {
			t.Fatalf("%s %d: %d values, last %g", s, n, len(sig), sig[len(sig)-1])
		}
		for i, v := range sig {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < 0 || (i > 0 && v > sig[i-1]) {
				t.Fatalf("%s %d: sigma[%d] = %g after %g", s, n, i, v, sig[max(i-1, 0)])
			}
		}
		start, err := StartAt(sig, strength)
		if err == nil && (start < 0 || start >= n) {
			t.Fatalf("StartAt(%d steps, %g) = %d", n, strength, start)
		}
	})
}
