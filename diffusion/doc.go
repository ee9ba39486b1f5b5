// Package diffusion is the arithmetic around a denoising network, as
// stable-diffusion.cpp ("sd.cpp", @97d2990) computes it: small functions
// over float32 latents that hold no weights.
//
//   - CompVis: the ε-prediction denoiser of SD 1.x (k-diffusion's
//     CompVisDenoiser, sd.cpp src/runtime/denoiser.hpp): the ᾱ table of the
//     scaled-linear β schedule, σ and log σ per training timestep, the maps
//     t ↔ σ (σ→t fractional), the scalings c_skip, c_out, c_in.
//   - Schedules: the sampled σ list for n steps (discrete, karras,
//     exponential, simple, lcm), and img2img's start step (StartAt).
//   - Guidance: classifier-free guidance, and EpsDenoiser, which turns an
//     ε-prediction network into the denoiser the samplers call (sd.cpp's
//     denoise lambda in StableDiffusionGGML::sample).
//   - Samplers: euler, euler_a, heun, dpm2, dpm++2m, dpm++2s_a, lcm,
//     ddim_trailing, each a function of (x, σ list, denoiser, noise) run by
//     a Sampler that owns the buffers (allocated once per size), reports
//     every step, stops on cancel between denoiser calls and fails the step
//     that makes a NaN or Inf.
//   - Flow matching (flow.go), as Wan 2.1's FlowUniPCMultistepScheduler
//     (wan/utils/fm_solvers_unipc.py) computes it in PyTorch float32: the
//     shifted schedule (ShiftedFlowSchedule: integer timesteps, float32
//     σ), FlowGuidance (a velocity network under CFG, the prompt first),
//     and a FlowSampler running unipc (UniPC's bh2 predictor and corrector,
//     order 2 with warm-up and a first-order last step) or euler
//     (x += (σ_{k+1} − σ_k)·v) over it, reporting each step's input,
//     velocity, x0, corrected sample and output.
//
// Latents are flat float32 slices in the network's order (for SD 1.x
// [4][H/8][W/8], x fastest). The float32/float64 roundings follow sd.cpp
// operation by operation: its tensor arithmetic is float32 with one
// rounding per operation (no fused multiply-add: its own sources build for
// baseline x86-64), its scalar helpers call the float64 log/exp/pow where
// the C++ calls them unqualified on floats, and glibc's logf/expf where it
// calls std::log/std::exp. Go may fuse a*b+c on some targets, so every
// product that meets an addition is converted to float32 explicitly.
//
// Errors are of the generate stage (StepError, Error).
//
// Imports: diffusion/rng.
package diffusion
