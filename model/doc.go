// Package model defines what an architecture gives the engine: a Config read
// from GGUF metadata, a Model holding the bound weights (immutable, shared),
// and Sessions that each own a KV cache and run the forward pass over it.
//
// Architectures live in their own packages (model/llama, model/qwen2, ...)
// and register a Loader here in init. Load picks the loader by
// general.architecture, so a file of an unknown architecture fails at load
// with the list of supported ones. Import model/all to register every
// architecture.
//
// The Llama family shares one decoder block and one forward pass
// (block.go, read top to bottom: Block, Arch, Transformer): each part an
// architecture adds — projection biases, per-head Q/K norms, NeoX RoPE or
// a layer's own RoPE, sliding windows, attention sinks, post-norms, the
// gated unit, embedding/residual/logit multipliers, soft-caps — is a field
// that is nil or zero when absent. An architecture's package is then its
// loader: read the Config, bind the tensors (NewTransformer, BindBlock
// with the Parts it has, or its own names), and set what differs.
//
// Layout: activations are row-major [seqLen][dim] float32 slices; a weight
// that maps dim → out is a compute.Matrix of out rows of dim elements (GGUF's
// ne[0] is the row length), so y = W·x is one dot product per row.
//
// Imports: gguf, tensor, compute.
package model
