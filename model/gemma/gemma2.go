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
	m := &Model{
		cfg:       cfg,
		attnCap:   softcap(f, "gemma2", "attn_logit_softcapping"),
		softcap:   softcap(f, "gemma2", "final_logit_softcapping"),
		localBase: c.RopeBase,
	}
	// query_pre_attn_scalar is head_dim (2B, 9B), but dim/heads in the
	// 27B model (46 layers).
	m.attnScale = float32(1 / math.Sqrt(float64(c.HeadDim)))
	if c.NumLayers == 46 {
		m.attnScale = float32(1 / math.Sqrt(float64(c.Dim/c.NumHeads)))
	}
	m.w, m.bytes, err = bind(f, c, false, func(i int) bool { return i%2 == 0 })
	if err != nil {
		return nil, err
	}
	m.localFreqs = m.w.RopeFreqs
	return m, nil
}
