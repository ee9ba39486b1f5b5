package diffusion

import (
	"context"
	"fmt"
)

// NeedsUncond reports whether classifier-free guidance at scale cfg needs
// the unconditional prediction. sd.cpp skips it when the text and image
// guidance scales are equal (GenerationRequest::resolve_guidance), and the
// image scale is 1 for SD 1.x: so iff cfg != 1.
func NeedsUncond(cfg float32) bool { return cfg != 1 }

// CFG writes classifier-free guidance into dst (Ho & Salimans 2022):
// uncond + cfg·(cond - uncond) per element, in float32 as sd.cpp's
// ClassifierFreeGuidance::forward (src/runtime/guidance.cpp). dst may be
// cond or uncond.
func CFG(dst, cond, uncond []float32, cfg float32) {
	for i := range dst {
		u := uncond[i]
		dst[i] = u + float32(cfg*(cond[i]-u))
	}
}

// EpsModel is a noise-prediction network as EpsDenoiser calls it: it
// writes into eps the ε it predicts for the scaled latent xIn at the
// (fractional) timestep t, under the prompt's context, or the negative
// prompt's when uncond is set. It should return ctx.Err() soon after ctx
// ends.
type EpsModel func(ctx context.Context, xIn []float32, t float32, uncond bool, eps []float32) error

// EpsDenoiser is the denoiser the samplers call for an ε-prediction model
// under the CompVis scalings with classifier-free guidance, as sd.cpp's
// denoise lambda (src/stable-diffusion.cpp: StableDiffusionGGML::sample)
// computes it: xIn = x·c_in, t = SigmaToT(σ), ε_cond and then (when
// NeedsUncond) ε_uncond, ε = CFG(...), denoised = ε·c_out + x·c_skip. Its
// buffers are allocated on the first call; the slice Denoise returns is
// overwritten by the next call.
type EpsDenoiser struct {
	CompVis  *CompVis
	Net      EpsModel
	CFGScale float32

	xIn, cond, uncond, out []float32
}

// Denoise is a Denoiser.
func (e *EpsDenoiser) Denoise(ctx context.Context, x []float32, sigma float32, step int) ([]float32, error) {
	n := len(x)
	if len(e.out) != n {
		e.xIn, e.cond, e.uncond, e.out = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	}
	cSkip, cOut, cIn := e.CompVis.Scalings(sigma)
	t := e.CompVis.SigmaToT(sigma)
	for i, v := range x {
		e.xIn[i] = v * cIn
	}
	if err := e.Net(ctx, e.xIn, t, false, e.cond); err != nil {
		return nil, fmt.Errorf("conditional prediction at t %.6g: %w", t, err)
	}
	eps := e.cond
	if NeedsUncond(e.CFGScale) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := e.Net(ctx, e.xIn, t, true, e.uncond); err != nil {
			return nil, fmt.Errorf("unconditional prediction at t %.6g: %w", t, err)
		}
		CFG(e.uncond, e.cond, e.uncond, e.CFGScale)
		eps = e.uncond
	}
	for i, v := range x {
		e.out[i] = float32(eps[i]*cOut) + float32(v*cSkip)
	}
	return e.out, nil
}

// FlowModel is a velocity network as FlowGuidance calls it: it writes into
// v the velocity it predicts for latent x at timestep t, under the
// prompt's context, or the negative prompt's when uncond is set. It should
// return ctx.Err() soon after ctx ends.
type FlowModel func(ctx context.Context, x []float32, t int, uncond bool, v []float32) error

// FlowGuidance is the Velocity the flow samplers call for a velocity model
// with classifier-free guidance, as Wan's generate computes it: the
// prompt's prediction, then (when NeedsUncond) the negative prompt's, and
// uncond + scale·(cond − uncond) (CFG). Its buffers are allocated on the
// first call; the slice Velocity returns is overwritten by the next call.
type FlowGuidance struct {
	Net      FlowModel
	CFGScale float32
	// OnPredict, when set, sees each step's two predictions before they
	// are combined (uncond is nil when not needed).
	OnPredict func(step int, cond, uncond []float32)

	cond, uncond, out []float32
}

// Velocity is a Velocity.
func (g *FlowGuidance) Velocity(ctx context.Context, x []float32, t, step int) ([]float32, error) {
	n := len(x)
	if len(g.out) != n {
		g.cond, g.uncond, g.out = make([]float32, n), make([]float32, n), make([]float32, n)
	}
	if err := g.Net(ctx, x, t, false, g.cond); err != nil {
		return nil, fmt.Errorf("conditional prediction at t %d: %w", t, err)
	}
	if !NeedsUncond(g.CFGScale) {
		if g.OnPredict != nil {
			g.OnPredict(step, g.cond, nil)
		}
		return g.cond, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := g.Net(ctx, x, t, true, g.uncond); err != nil {
		return nil, fmt.Errorf("unconditional prediction at t %d: %w", t, err)
	}
	if g.OnPredict != nil {
		g.OnPredict(step, g.cond, g.uncond)
	}
	CFG(g.out, g.cond, g.uncond, g.CFGScale)
	return g.out, nil
}
