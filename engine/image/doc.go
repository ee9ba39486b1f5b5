// Package image is the image job: a Stable Diffusion 1.x checkpoint and a
// prompt in, PNG files out, through the pipeline's stages as
// stable-diffusion.cpp (sd.cpp, @97d2990) runs them, so that a seed gives
// the image sd.cpp gives.
//
//   - plan: the memory of each component's weights and of the activations
//     at this size (the UNet's, the VAE decode's, with tiles chosen when
//     the whole decode would not fit), and the time per step from this
//     machine's history of measured runs; a job that does not fit is
//     refused before anything loads (Plan, Admit).
//   - load: the checkpoint's text encoder, UNet and VAE (or --vae's),
//     each a part of the stage with its bytes and time.
//   - encode: CLIP tokens and embeddings of the prompt and of the negative
//     prompt (empty: the empty prompt's embedding, as sd.cpp).
//   - generate: the initial noise (diffusion/rng, reseeded per image as
//     sd.cpp does), img2img's encoded init image and start step, and the
//     sampler's steps, each a part event with its time, s/step and ETA;
//     cancel takes effect between network calls and a NaN or Inf fails the
//     step that made it (diffusion.StepError). Each final latent is saved
//     in the job's folder ([4][H/8][W/8] float32 and its JSON description)
//     before anything is decoded.
//   - decode: the VAE decoder on latent/0.18215, tiled when the plan says.
//   - deliver: PNGs with A1111's "parameters" text (Infotext) and the
//     glassbox job record.
//
// Decode re-runs decode and deliver from a job's saved latents (glassbox
// decode JOB), so a decode that failed loses no sampling.
//
// The networks are behind small interfaces (TextEncoder, EpsNet, VAE) built
// by Nets from the checkpoint's components, so the job is tested with fakes.
// Latents are flat float32 [C][H][W] slices, x fastest; images planar
// [3][H][W].
//
// Imports: api, pipeline, plan, checkpoint, tokenizer/clip, textenc/clip,
// diffusion, diffusion/rng, diffusion/unet, vae, imageio, compute,
// internal/home.
package image
