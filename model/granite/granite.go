// Package granite is IBM's Granite 3 architectures, dense (granite) and
// mixture of experts (granitemoe): Llama's decoder with four scalar
// multipliers from the metadata — the embeddings times embedding_scale,
// each sublayer's output times residual_scale before it joins the
// residual stream, attention scores times attention.scale (instead of
// 1/√head_dim), and the logits divided by logit_scale — and, in
// granitemoe, a mixture of experts as every feed-forward network
// (model.Experts). It is model.Block with the multipliers as its Arch:
// the forward pass is model.Transformer's.
//
// Reference: IBM Granite Team 2024, "Granite 3.0 Language Models"
// (https://github.com/ibm-granite/granite-3.0-language-models); the
// multipliers are those of Hugging Face transformers' GraniteConfig
// (embedding_multiplier, residual_multiplier, attention_multiplier,
// logits_scaling), which llama.cpp's converter writes as the four keys.
//
// Imports: model, gguf.
package granite

import (
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() {
	model.Register("granite", func(f *gguf.File) (model.Model, error) { return load(f, "granite") })
	model.Register("granitemoe", func(f *gguf.File) (model.Model, error) { return load(f, "granitemoe") })
}

// Scales are the four multipliers.
type Scales struct {
	Embedding float32 // <arch>.embedding_scale (default 1)
	Residual  float32 // <arch>.residual_scale (default 1)
	Attention float32 // <arch>.attention.scale (default 1/√head_dim)
	Logit     float32 // <arch>.logit_scale: logits are divided by it (default 1)
}

// load binds a granite or granitemoe file.
func load(f *gguf.File, arch string) (model.Model, error) {
	read := model.ReadConfig
	if arch == "granitemoe" {
		read = model.ReadConfigMoE
	}
	cfg, err := read(f, arch)
	if err != nil {
		return nil, err
	}
	if arch == "granitemoe" && cfg.Experts == 0 {
		return nil, fmt.Errorf("load: granitemoe: metadata granitemoe.expert_count is missing (a mixture-of-experts file needs it)")
	}
	c := &cfg
	sc := Scales{Embedding: 1, Residual: 1, Attention: float32(1 / math.Sqrt(float64(c.HeadDim))), Logit: 1}
	for _, k := range []struct {
		key string
		dst *float32
	}{{"embedding_scale", &sc.Embedding}, {"residual_scale", &sc.Residual}, {"attention.scale", &sc.Attention}, {"logit_scale", &sc.Logit}} {
		v, err := model.Float(f, arch, k.key, *k.dst)
		if err != nil {
			return nil, err
		}
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("load: metadata %s.%s = %g must be a positive number", arch, k.key, v)
		}
		*k.dst = v
	}
	if c.RopeYaRN != nil { // YaRN's factor on q and k
		m := c.RopeYaRN.Mscale()
		sc.Attention *= float32(m * m)
	}
	b := model.NewBinder(f)
	t := model.NewTransformer(b, cfg)
	t.Arch = model.Arch{EmbedScale: sc.Embedding, ResidualScale: sc.Residual, AttnScale: sc.Attention, LogitScale: 1 / sc.Logit}
	for i := range t.Layers {
		t.Layers[i] = model.BindBlock(b, c, i, model.Parts{})
	}
	return t.Finish(b)
}
