package unet

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// goldenMemory is what a golden test needs besides the mapped file: the
// packed convolutions and one 32×32 call's working memory, with margin.
const goldenMemory = 4 << 30

// openUNet returns the UNet of the sd15-rand checkpoint variant ("f16" or
// "f32"), bound once per test binary (a bind packs 1 GB of convolution
// kernels) and shared by the tests, which run one after another.
func openUNet(t testing.TB, variant string) *UNet {
	t.Helper()
	sdtest.SkipGeneric(t, "the sd15-rand UNet")
	sdtest.NeedMemory(t, goldenMemory)
	path := sdtest.SD15(t, variant)
	loaded.Lock()
	defer loaded.Unlock()
	if u := loaded.m[variant]; u != nil {
		return u
	}
	f, err := checkpoint.Open(path) // kept open: the matrices alias it
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.SD1Components(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := New(c.UNet.Source)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.m == nil {
		loaded.m = map[string]*UNet{}
	}
	loaded.m[variant] = u
	return u
}

var loaded struct {
	sync.Mutex
	m map[string]*UNet
}

// readF32 reads a raw little-endian float32 golden file.
func readF32(t testing.TB, rel string) []float32 {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// traceStep is one "# step" line of a golden trace.
type traceStep struct{ sigma, t, cIn float32 }

// readTrace parses a golden trace's step lines.
func readTrace(t testing.TB, rel string) []traceStep {
	t.Helper()
	f, err := os.Open(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []traceStep
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "# step ")
		if !ok {
			continue
		}
		var st traceStep
		for _, kv := range strings.Fields(rest)[1:] {
			k, v, _ := strings.Cut(kv, "=")
			x, err := strconv.ParseFloat(v, 32)
			if err != nil {
				t.Fatalf("%s: %q: %v", rel, kv, err)
			}
			switch k {
			case "sigma":
				st.sigma = float32(x)
			case "t":
				st.t = float32(x)
			case "c_in":
				st.cIn = float32(x)
			}
		}
		steps = append(steps, st)
	}
	return steps
}

// nmse is Σ(got−want)²/Σwant².
func nmse(got, want []float32) float64 {
	var e, s float64
	for i, w := range want {
		d := float64(got[i]) - float64(w)
		e += d * d
		s += float64(w) * float64(w)
	}
	return e / s
}

// TestGoldenEps runs the UNet on t2i_euler's inputs (README §3: the step's
// x times c_in, t from the trace, the cond and uncond contexts) and
// compares with sd.cpp's eps_cond and eps_uncond: NMSE ≤ 1e-4 (§7), for the
// F16 file and its F32 twin: all four steps, step 1 with -short, none with
// the generic kernels (-tags purego).
func TestGoldenEps(t *testing.T) {
	const maxNMSE = 1e-4
	const h, w = 32, 32
	steps := []int{1, 2, 3, 4}
	if testing.Short() {
		steps = steps[:1]
	}
	if conv.Kernel() == "generic" {
		// -tags purego: a 32×32 call is ~130 GFLOP at ~5 GFLOP/s (minutes on
		// a loaded machine). The generic kernels are checked against the
		// assembly ones in compute/conv, and TestEpsCancel and
		// TestActivationBytes still run the whole network at 8×8.
		t.Skip("generic kernels: run without -tags purego for the goldens")
	}
	for _, v := range []struct{ variant, suffix string }{{"f16", ""}, {"f32", ".f32"}} {
		t.Run(v.variant, func(t *testing.T) {
			u := openUNet(t, v.variant)
			t.Logf("weights %.2f GB", float64(u.WeightBytes())/1e9)
			p := compute.NewPool(0)
			defer p.Close()
			base := "golden/sd15/t2i_euler" + v.suffix
			trace := readTrace(t, base+".trace.txt")
			ctxs := map[string][]float32{"cond": readF32(t, base+".cond_crossattn.f32"), "uncond": readF32(t, base+".uncond_crossattn.f32")}
			for _, step := range steps {
				st := trace[step-1]
				x := readF32(t, fmt.Sprintf("%s.step%02d_x.f32", base, step))
				for i := range x {
					x[i] *= st.cIn
				}
				for _, kind := range []string{"cond", "uncond"} {
					want := readF32(t, fmt.Sprintf("%s.step%02d_eps_%s.f32", base, step, kind))
					got := make([]float32, len(want))
					if err := u.Eps(context.Background(), p, x, h, w, st.t, ctxs[kind], len(ctxs[kind])/ctxDim, got); err != nil {
						t.Fatal(err)
					}
					e := nmse(got, want)
					t.Logf("step %d (t %g) eps_%s: NMSE %.3g", step, st.t, kind, e)
					if !(e <= maxNMSE) {
						t.Errorf("step %d eps_%s: NMSE %.3g > %.0e", step, kind, e, maxNMSE)
					}
				}
			}
		})
	}
}
