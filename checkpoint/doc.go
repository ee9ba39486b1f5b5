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
// Tensor data alias the mapped file (little-endian, row-major in PyTorch's
// shape order, outermost dimension first) and stay valid until the file is
// closed.
//
// Imports: safetensors, pth, tensor, kernel.
package checkpoint
