// Package checkpoint reads diffusion checkpoints as sets of named tensors:
// the single files people download for Stable Diffusion and its relatives
// (.safetensors, or .ckpt/.pth PyTorch zips), and the separate VAE and
// text-encoder files beside them.
//
// A Source is anything that answers "the tensor called name": an opened
// file, a component view of one (the tensors under a prefix, the prefix
// removed), or an in-memory Map in tests. Networks bind their weights from
// a Source through a Binder, which checks every shape and keeps the first
// error, naming the tensor, the shape found and the shape wanted, so a
// network's constructor reads as a list of its layers.
//
// Open tells the formats apart by their first bytes: .safetensors (package
// safetensors), PyTorch zips (.ckpt, .pth, .pt; package pth, the state dict
// bare or under "state_dict" as SD's .ckpt files have it), and a GGUF file,
// refused with what it is (a language model by architecture and name).
//
// Detect names a file's family from its tensors alone: SD 1.x (a UNet with
// 4 input channels and 768-wide cross-attention, CLIP ViT-L/14), its
// inpainting (9 input channels) and instruct-pix2pix (8) variants, SD 2.x
// (1024-wide context; ε or v prediction is not in the tensors), SDXL
// (conditioner.embedders, label_emb, 2048 context) and its refiner, LDM
// UNets alone, diffusers UNets, Flux, SD 3, Wan and other transformers,
// VAEs (LDM or diffusers names, with their latent channels), Wan's 3-D VAE,
// TAESD-style tiny autoencoders, text encoders, LoRAs and ControlNets.
// RequireSD1 turns anything but SD 1.x into a load-stage error (ErrFamily)
// that says what the file is. SD1Components then gives the three networks
// as views under their own names (text encoder: prefix
// cond_stage_model.transformer.text_model., or the older
// cond_stage_model.transformer.; UNet: model.diffusion_model.; VAE:
// first_stage_model.), with tensor, parameter and byte counts and element
// types per component; a separate VAE file (VAEView: LDM names with or
// without first_stage_model., or diffusers' names translated to LDM's)
// replaces the checkpoint's. A .ckpt's model_ema.* copy of the UNet is
// counted and ignored, as sd.cpp and A1111's v1 inference config do;
// buffers such as alphas_cumprod are counted as other, unused tensors.
// Tensors may mix F32, F16 and BF16; the Binder converts each.
//
// Tensor data alias the mapped file (little-endian, row-major in PyTorch's
// shape order, outermost dimension first) and stay valid until the file is
// closed.
//
// Imports: safetensors, pth, gguf (to name a GGUF file given as a
// checkpoint), tensor, kernel.
package checkpoint
