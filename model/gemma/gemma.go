// Package gemma is the text decoder of Gemma 2 and Gemma 3: pre- and
// post-norms around both sublayers (four RMSNorms per block; llama.cpp's
// converter stores the norm weights with Gemma's "1 +" already added), a
// GELU-gated feed-forward network, embeddings scaled by √dim, RoPE on the
// two halves of each head, and local sliding-window layers interleaved
// with global ones. The two differ in three places:
//
//   - Gemma 3 (gemma3.go) normalizes each query and key head (RMSNorm)
//     before RoPE, has five local layers to one global by default, and
//     gives the local layers RoPE base 10000 without scaling.
//   - Gemma 2 (gemma2.go) alternates local and global layers (even layers
//     local), with one RoPE base, and soft-caps the attention scores,
//     s → 50·tanh(s/50) by default.
//   - Both soft-cap the final logits when the file sets it (Gemma 2: 30).
//
// Both are model.Block with post-norms, a GELU gate and per-layer windows
// and RoPE: the forward pass is model.Transformer's.
//
// References: Gemma Team 2024, "Gemma 2: Improving Open Language Models at
// a Practical Size" (arXiv:2408.00118); Gemma Team 2025, "Gemma 3
// Technical Report" (arXiv:2503.19786).
//
// Imports: model, compute, gguf.
package gemma

import (
	"math"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

// load binds the tensors both generations share, and Gemma 3's query and
// key head norms when qkNorm, for the model a describes (NeoX RoPE and
// the √dim embedding scale added): the layers local tells are
// sliding-window ones, with RoPE localRope (nil: the model's).
func load(f *gguf.File, c model.Config, a model.Arch, qkNorm bool, local func(layer int) bool, localRope *model.RoPE) (model.Model, error) {
	b := model.NewBinder(f)
	t := model.NewTransformer(b, c)
	a.NeoX, a.EmbedScale = true, float32(math.Sqrt(float64(c.Dim)))
	t.Arch = a
	for i := range t.Layers {
		L := model.BindBlock(b, &c, i, model.Parts{QKNorm: qkNorm, PostNorms: true})
		L.FFN.Act = compute.GeGLU
		L.Window = 0
		if local(i) {
			L.Window, L.Rope = c.SlidingWindow, localRope
		}
		t.Layers[i] = L
	}
	return t.Finish(b)
}

// softcap returns <arch>.<key> if the file sets it positive, else 0.
func softcap(f *gguf.File, arch, key string) float32 {
	if v, err := f.Meta.Float(arch + "." + key); err == nil && v > 0 {
		return float32(v)
	}
	return 0
}
