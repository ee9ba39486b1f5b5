package gemma

import (
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() { model.Register("gemma2", Load2) }

// Load2 binds a gemma2-architecture file: even layers local (sliding
// window), odd layers global, all with the file's RoPE base; attention
// scores soft-capped at <arch>.attn_logit_softcapping and the final logits
// at <arch>.final_logit_softcapping (50 and 30 in Google's models).
func Load2(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfig(f, "gemma2")
	if err != nil {
		return nil, err
	}
	c := &cfg
	if c.SlidingWindow <= 0 {
		return nil, fmt.Errorf("load: gemma2: gemma2.attention.sliding_window is %d: the local layers need a positive window", c.SlidingWindow)
	}
	a := model.Arch{
		AttnSoftcap:  softcap(f, "gemma2", "attn_logit_softcapping"),
		LogitSoftcap: softcap(f, "gemma2", "final_logit_softcapping"),
	}
	// query_pre_attn_scalar is head_dim (2B, 9B), but dim/heads in the
	// 27B model (46 layers).
	a.AttnScale = float32(1 / math.Sqrt(float64(c.HeadDim)))
	if c.NumLayers == 46 {
		a.AttnScale = float32(1 / math.Sqrt(float64(c.Dim/c.NumHeads)))
	}
	// The local layers' RoPE is the global one: the model's.
	return load(f, cfg, a, false, func(i int) bool { return i%2 == 0 }, nil)
}
