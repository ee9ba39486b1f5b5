// Package rng draws Gaussian noise bit for bit as other image tools draw it,
// so that a seed gives the latents (and so the image) those tools give.
//
// Two generators:
//
//   - Philox: Philox 4×32-10 with Box–Muller, as torch's CUDA randn,
//     A1111's rng_philox.py and stable-diffusion.cpp's default
//     (--rng cuda, src/core/rng_philox.hpp: PhiloxRNG) draw it. It is
//     counter based: call number k of a seed (the k-th Randn since Seed)
//     gives element i from the counter (k, 0, i, 0) and the key (seed low
//     32 bits, seed high 32 bits), so element i does not depend on how many
//     are drawn.
//   - TorchCPU: torch's CPU generator (MT19937) and torch.randn's CPU
//     algorithm, what ComfyUI draws and what stable-diffusion.cpp's
//     --rng cpu (src/core/rng_mt19937.hpp: MT19937RNG) ports. It is a
//     stream: each Randn consumes draws from where the last one stopped.
//
// A Source is what samplers take: Seed resets the generator (the next
// Randn is call 0), Randn fills a slice with the next call's values.
//
// The order in which sd.cpp draws (src/stable-diffusion.cpp:
// generate_image; shared/golden/sd15/README.md 4.1, 4.4, 4.5): Seed(seed)
// first; for img2img the VAE posterior sample of the init image is call 0
// of seed; then for batch item b, Seed(seed+b) and the initial noise (the
// latent's values in order) is call 0 of seed+b; the sampler shares the
// generator, so its noise draws are calls 1, 2, ... (euler_a: one a step,
// none on the last).
//
// The float32/float64 roundings are those of the reference code, operation
// by operation: which operations run in float64, which in float32, and which
// multiply-adds the reference's compiler fused (fma32). Go could otherwise
// fuse a*b+c on its own on some targets, so every product that meets an
// addition is converted to float32 explicitly.
//
// Imports: stdlib only.
package rng
