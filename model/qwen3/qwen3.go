// Package qwen3 is the Qwen3 architectures, dense (qwen3) and mixture of
// experts (qwen3moe, whose every feed-forward network is model.Experts):
// Llama's decoder with an RMSNorm over each query and key head before
// RoPE ("QK-norm"), RoPE on the two halves of each head (GPT-NeoX
// layout), no projection biases, and a head size given by
// attention.key_length (not always dim/heads). It is model.Block with
// its Q/K norms: the forward pass is model.Transformer's.
//
// Reference: Qwen Team 2025, "Qwen3 Technical Report" (arXiv:2505.09388).
//
// Imports: model, gguf.
package qwen3

import (
	"fmt"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() {
	model.Register("qwen3", Load)
	model.Register("qwen3moe", LoadMoE)
}

// Load binds a qwen3-architecture file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfig(f, "qwen3")
	if err != nil {
		return nil, err
	}
	return load(f, cfg)
}

// LoadMoE binds a qwen3moe-architecture file (Qwen3-30B-A3B and its
// kind): Qwen3's blocks with a mixture of experts as every feed-forward
// network (model.Experts; the router's top-k probabilities renormalized,
// the models' norm_topk_prob).
func LoadMoE(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfigMoE(f, "qwen3moe")
	if err != nil {
		return nil, err
	}
	if cfg.Experts == 0 {
		return nil, fmt.Errorf("load: qwen3moe: metadata qwen3moe.expert_count is missing (a mixture-of-experts file needs it)")
	}
	return load(f, cfg)
}

func load(f *gguf.File, cfg model.Config) (model.Model, error) {
	b := model.NewBinder(f)
	t := model.NewTransformer(b, cfg)
	t.Arch.NeoX = true
	for i := range t.Layers {
		t.Layers[i] = model.BindBlock(b, &cfg, i, model.Parts{QKNorm: true})
	}
	return t.Finish(b)
}
