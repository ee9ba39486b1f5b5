package wan

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/synth"
	"github.com/glassbox-ai/glassbox/tensor"
	"github.com/glassbox-ai/glassbox/textenc/t5"
)

// Tolerances of README §4 for the whole chain (t2v_tiny.step*,
// final_latent) and for umT5's outputs.
const (
	chainMaxAbs, chainRelL2 = 1e-3, 1e-4
	t5MaxAbs, t5RelL2       = 3e-5, 6e-6
)

func readI32(t *testing.T, name string) []int32 {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "golden/wan/"+name))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TestT2VTiny is the tiny text-to-video run of README §3d through the
// whole chain: umT5 tiny (textenc/t5) encodes both prompts' ids, torch's
// CPU generator draws the noise, and FlowUniPC (shift 5, 4 steps) samples
// with this DiT under CFG 5. Every step's latent_in, pred_cond,
// pred_uncond, pred_cfg, x0, corrected and latent_out and the final latent
// are checked with §4's whole-chain tolerances; each step's two
// predictions are also recomputed from the stored latent_in and checked
// with the DiT's.
func TestT2VTiny(t *testing.T) {
	p := compute.NewPool(compute.PhysicalCores())
	defer p.Close()
	bg := context.Background()

	// Text: umT5 tiny over the stored ids.
	t5path := filepath.Join(t.TempDir(), "umt5-tiny.safetensors")
	if err := synth.WriteWanFile(bg, t5path, "umt5-tiny", 4001, tensor.F32); err != nil {
		t.Fatal(err)
	}
	f, err := checkpoint.Open(t5path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc, err := t5.New(f)
	if err != nil {
		t.Fatal(err)
	}
	m := openDiT(t, tinyFile(t), 4)
	var texts [2]*Text
	for i, name := range []string{"cond", "uncond"} {
		ids := readI32(t, "t2v_tiny."+name+"_ids.i32")
		ctxv, err := enc.Encode(bg, p, ids)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "context_"+name, ctxv, readF32(t, "t2v_tiny.context_"+name+".f32"), t5MaxAbs, t5RelL2)
		if texts[i], err = m.PrepareText(bg, p, ctxv, len(ids)); err != nil {
			t.Fatal(err)
		}
	}

	// Noise: torch.randn(16, 5, 8, 8) on a CPU generator seeded 42.
	const frames, height, width = 5, 8, 8
	x := make([]float32, 16*frames*height*width)
	rng.NewTorchCPU(42, rng.KernelAVX2).Randn(x)
	for i, w := range readF32(t, "t2v_tiny.noise.f32") {
		if x[i] != w {
			t.Fatalf("noise[%d] = %g, golden %g: not bit-exact", i, x[i], w)
		}
	}

	sch, err := diffusion.ShiftedFlowSchedule(4, 5)
	if err != nil {
		t.Fatal(err)
	}
	net := func(ctx context.Context, x []float32, ts int, uncond bool, v []float32) error {
		return m.Forward(ctx, p, v, x, frames, height, width, float64(ts), texts[map[bool]int{false: 0, true: 1}[uncond]])
	}
	stage := func(k int) string { return fmt.Sprintf("t2v_tiny.step%d.", k) }
	g := &diffusion.FlowGuidance{Net: net, CFGScale: 5, OnPredict: func(k int, cond, uncond []float32) {
		check(t, stage(k)+"pred_cond", cond, readF32(t, stage(k)+"pred_cond.f32"), chainMaxAbs, chainRelL2)
		check(t, stage(k)+"pred_uncond", uncond, readF32(t, stage(k)+"pred_uncond.f32"), chainMaxAbs, chainRelL2)
		// The same predictions from the stored latent_in: the DiT alone.
		in := readF32(t, stage(k)+"latent_in.f32")
		v := make([]float32, len(in))
		for i, name := range []string{"pred_cond", "pred_uncond"} {
			if err := net(bg, in, sch.Timesteps[k], i == 1, v); err != nil {
				t.Fatal(err)
			}
			check(t, stage(k)+name+" (stored input)", v, readF32(t, stage(k)+name+".f32"), tinyMaxAbs, tinyRelL2)
		}
	}}
	fs := &diffusion.FlowSampler{Method: diffusion.UniPC, OnStep: func(st diffusion.FlowStep) {
		k := st.Index
		check(t, stage(k)+"latent_in", st.In, readF32(t, stage(k)+"latent_in.f32"), chainMaxAbs, chainRelL2)
		check(t, stage(k)+"pred_cfg", st.Velocity, readF32(t, stage(k)+"pred_cfg.f32"), chainMaxAbs, chainRelL2)
		check(t, stage(k)+"x0", st.Denoised, readF32(t, stage(k)+"x0.f32"), chainMaxAbs, chainRelL2)
		if k > 0 {
			check(t, stage(k)+"corrected", st.Corrected, readF32(t, stage(k)+"corrected.f32"), chainMaxAbs, chainRelL2)
		}
		check(t, stage(k)+"latent_out", st.X, readF32(t, stage(k)+"latent_out.f32"), chainMaxAbs, chainRelL2)
	}}
	if err := fs.Run(bg, x, sch, g.Velocity); err != nil {
		t.Fatal(err)
	}
	check(t, "final_latent", x, readF32(t, "t2v_tiny.final_latent.f32"), chainMaxAbs, chainRelL2)

	// Flow Euler over the same schedule: no golden, but a different
	// result from the same start that is still near UniPC's (both solve
	// the same ODE).
	y := make([]float32, len(x))
	rng.NewTorchCPU(42, rng.KernelAVX2).Randn(y)
	g.OnPredict = nil
	if err := (&diffusion.FlowSampler{Method: diffusion.Euler}).Run(bg, y, sch, g.Velocity); err != nil {
		t.Fatal(err)
	}
	_, rel := compare(y, x)
	t.Logf("euler vs unipc final latent: rel L2 %.3f", rel)
	if !(rel > 1e-3 && rel < 1) || math.IsNaN(rel) {
		t.Errorf("euler vs unipc final latent: rel L2 %.3g, want a different but related result", rel)
	}
}
