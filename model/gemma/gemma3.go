package gemma

import (
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() { model.Register("gemma3", Load3) }

// localRopeBase is the RoPE base of Gemma 3's sliding-window layers (the
// reference implementation's rope_local_base_freq).
const localRopeBase = 10000

// Load3 binds a gemma3-architecture file: pattern−1 local layers, then a
// global one (<arch>.attention.sliding_window_pattern, 6 by default).
func Load3(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfig(f, "gemma3")
	if err != nil {
		return nil, err
	}
	c := &cfg
	if limit := softcap(f, "gemma3", "attn_logit_softcapping"); limit > 0 {
		return nil, fmt.Errorf("load: gemma3: attention-logit soft-capping (%g) is a Gemma 2 feature, not in Gemma 3", limit)
	}
	pattern, err := model.Int(f, "gemma3", "attention.sliding_window_pattern", 6)
	if err != nil {
		return nil, err
	}
	if pattern <= 0 || c.SlidingWindow <= 0 {
		return nil, fmt.Errorf("load: gemma3: sliding window %d with pattern %d: both must be positive", c.SlidingWindow, pattern)
	}
	a := model.Arch{LogitSoftcap: softcap(f, "gemma3", "final_logit_softcapping")}
	// Queries are scaled by 1/√head_dim, except in the 27B model (62
	// layers), whose query_pre_attn_scalar is dim/heads.
	a.AttnScale = float32(1 / math.Sqrt(float64(c.HeadDim)))
	if c.NumLayers == 62 {
		a.AttnScale = float32(1 / math.Sqrt(float64(c.Dim/c.NumHeads)))
	}
	// The local layers' RoPE: base 10000, no scaling.
	local := &model.RoPE{Base: localRopeBase}
	return load(f, cfg, a, true, func(i int) bool { return i%pattern < pattern-1 }, local)
}
