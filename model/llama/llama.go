// Package llama is the Llama architecture (Llama 2/3/3.x, Mistral,
// TinyLlama, SmolLM, llama2.c checkpoints, and Mixtral): pre-norm decoder
// blocks with RMSNorm, rotary position embeddings on adjacent pairs
// (llama.cpp's converter permutes Q/K so the GGUF weights use the "normal"
// rotation), grouped-query attention and a SwiGLU feed-forward network —
// or, in a file with llama.expert_count (Mixtral), a sparse mixture of
// SwiGLU experts (model.Experts; Jiang et al. 2024, arXiv:2401.04088).
// It is model.Block as it is, with no part added: the forward pass is
// model.Transformer's.
//
// References: Touvron et al. 2023, "Llama 2" (arXiv:2307.09288); Su et al.
// 2021, "RoFormer" (arXiv:2104.09864) for RoPE; Shazeer 2020, "GLU Variants
// Improve Transformer" (arXiv:2002.05202) for SwiGLU; Ainslie et al. 2023,
// "GQA" (arXiv:2305.13245). Llama 3.1 RoPE frequency factors come from the
// optional rope_freqs.weight tensor (angle divided by factor[i]).
//
// Imports: model, gguf.
package llama

import (
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() { model.Register("llama", Load) }

// Load binds a llama-architecture file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfigMoE(f, "llama")
	if err != nil {
		return nil, err
	}
	b := model.NewBinder(f)
	t := model.NewTransformer(b, cfg)
	if b.Has("rope_freqs.weight") { // Llama 3.1's per-pair divisors, times any scaling
		t.Rope.Freqs = cfg.RopeFactors(b.Vector("rope_freqs.weight", cfg.RopeDim/2))
	}
	for i := range t.Layers {
		t.Layers[i] = model.BindBlock(b, &cfg, i, model.Parts{})
	}
	return t.Finish(b)
}
