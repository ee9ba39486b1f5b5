// Package video is the text-to-video job: Wan 2.1 (T2V-1.3B class) files and a
// prompt in, an MP4 out, through the pipeline's stages as the official
// WanT2V.generate (github.com/Wan-Video/Wan2.1 wan/text2video.py) runs them,
// so that a seed gives the video the official code gives.
//
//   - plan: before anything is bound, the memory of each component (umT5,
//     DiT, VAE: their tensors in the files, the VAE widened to float32) and
//     of the activations at frames × height × width (the DiT's Forward, the
//     two prompts' cross-attention keys and values, the sampler's latents,
//     the streaming VAE decode, which does not grow with the frame count);
//     a job over the budget is refused with every number.
//   - load: the umT5 encoder, the DiT and the VAE decoder, each a part with
//     its bytes and time.
//   - encode: the prompt and the negative prompt (Wan's default when empty)
//     through the SentencePiece unigram tokenizer (the --spiece file or the
//     spiece_model tensor of the umT5 file) and umT5, or token ids given as
//     they are (a text prompt cut to 511 tokens and EOS as Wan cuts it, with
//     a prompt_truncated warning). The umT5 file is then closed, before the DiT's matrices
//     (which alias their file's mapping) are first read, so umT5 and the
//     DiT are never resident together.
//   - generate: each prompt's DiT text embedding and cross-attention keys
//     and values (PrepareText); torch's CPU generator seeded with the seed
//     draws the noise (rng cpu, Wan's; rng cuda: Philox),
//     then FlowUniPC (or flow Euler) over Wan's shifted schedule with CFG;
//     each step is a part event with its s/step and ETA, a cancel stops the
//     DiT between two blocks, and a NaN or Inf fails the step that made it
//     (diffusion.StepError). The final latent is saved in the job's folder
//     ([16][T][H/8][W/8] float32 and its JSON description) before decoding.
//   - decode and deliver: the VAE decodes one latent frame after another
//     (vae.WanVAE.DecodeFrames) and each video frame, clamped and converted
//     to 8 bits as Wan's cache_video does, goes straight to an ffmpeg
//     subprocess (H.264, yuv420p, 16 fps) and, with FramesDir, to
//     frame_NNN.png files; so the memory does not grow with the frames.
//     Each frame is also a preview event (api.Preview with Frame and
//     Frames: a PNG of at most 256 pixels a side) when the trace takes
//     previews.
//     A missing ffmpeg fails the plan stage before any sampling unless
//     FramesDir is set, in which case the PNGs are written and the MP4 is
//     skipped with a warning.
//
// Decode re-runs decode and deliver from a job's saved latent (glassbox
// decode JOB) with only the VAE loaded, so a decode or an ffmpeg that failed
// loses no sampling.
//
// Layout: latents are flat float32 [C][T][H][W] (PyTorch's, batch dropped),
// frames planar RGB [3][H][W] in [-1, 1].
//
// Imports: api, pipeline, plan, checkpoint, compute, tokenizer, textenc/t5,
// diffusion, diffusion/rng, diffusion/wan, vae and the standard library.
package video
