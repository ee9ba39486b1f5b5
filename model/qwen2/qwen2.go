// Package qwen2 is the Qwen2 / Qwen2.5 architecture: Llama's decoder with
// biases on the Q, K and V projections, RoPE on the two halves of each head
// (the GPT-NeoX layout) and, in the small models, the token embedding
// reused as the output matrix — and Qwen2-MoE (qwen2moe: Qwen1.5-MoE,
// Qwen2-57B-A14B), whose every feed-forward network is a mixture of
// experts weighted by their softmax probabilities as they are (not
// renormalized), plus a shared expert gated by a sigmoid (model.Experts).
// It is model.Block with its Q/K/V biases: the forward pass is
// model.Transformer's.
//
// Reference: Qwen Team 2024, "Qwen2 Technical Report" (arXiv:2407.10671).
//
// Imports: model, gguf.
package qwen2

import (
	"fmt"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() {
	model.Register("qwen2", Load)
	model.Register("qwen2moe", LoadMoE)
}

// Load binds a qwen2-architecture file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfig(f, "qwen2")
	if err != nil {
		return nil, err
	}
	return load(f, cfg)
}

// LoadMoE binds a qwen2moe-architecture file.
func LoadMoE(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfigMoE(f, "qwen2moe")
	if err != nil {
		return nil, err
	}
	if cfg.Experts == 0 {
		return nil, fmt.Errorf("load: qwen2moe: metadata qwen2moe.expert_count is missing (a mixture-of-experts file needs it)")
	}
	cfg.ExpertProbs = true // Qwen2-MoE's norm_topk_prob is false
	return load(f, cfg)
}

func load(f *gguf.File, cfg model.Config) (model.Model, error) {
	b := model.NewBinder(f)
	t := model.NewTransformer(b, cfg)
	t.Arch.NeoX = true
	for i := range t.Layers {
		t.Layers[i] = model.BindBlock(b, &cfg, i, model.Parts{QKVBias: true})
	}
	return t.Finish(b)
}
