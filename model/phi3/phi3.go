// Package phi3 is the Phi-3 architecture: Llama's decoder with the Q, K and
// V projections fused into one attn_qkv matrix and the gate and up
// projections fused into ffn_up (gate rows first), RoPE on the two halves of
// each head (GPT-NeoX layout), and sliding-window attention where the file
// sets attention.sliding_window (a query at p sees keys p−window < k ≤ p).
// The fused matrices are bound as row-range views, so the forward pass is
// Llama's: model.Transformer's, with NeoX RoPE.
//
// Reference: Abdin et al. 2024, "Phi-3 Technical Report" (arXiv:2404.14219).
// LongRoPE (Ding et al. 2024, arXiv:2402.13753; the 128k models): the
// rope_factors_short tensor divides the angles when the session's context
// fits the original one (rope.scaling.original_context_length), else
// rope_factors_long; rotated q and k are multiplied by
// rope.scaling.attn_factor (default √(1 + ln(ctx/orig)/ln(orig))), as
// llama.cpp's rope does with its mscale.
//
// Imports: model, gguf.
package phi3

import (
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() { model.Register("phi3", Load) }

// Load binds a phi3-architecture file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfig(f, "phi3")
	if err != nil {
		return nil, err
	}
	c := &cfg
	b := model.NewBinder(f)
	t := model.NewTransformer(b, cfg)
	t.Arch = model.Arch{NeoX: true, AttnScale: float32(1 / math.Sqrt(float64(c.HeadDim))), RotatedScale: 1}
	if b.Has("rope_factors_long.weight") || b.Has("rope_factors_short.weight") {
		short := b.Vector("rope_factors_short.weight", c.RopeDim/2)
		long := b.Vector("rope_factors_long.weight", c.RopeDim/2)
		origCtx, err := model.Int(f, "phi3", "rope.scaling.original_context_length", c.CtxLen)
		if err != nil {
			return nil, err
		}
		if origCtx <= 0 {
			return nil, fmt.Errorf("load: phi3: rope.scaling.original_context_length %d must be positive", origCtx)
		}
		t.Arch.RotatedScale = longRopeAttnFactor(f, c.CtxLen, origCtx)
		// A session's divisors: the short factors while its context fits
		// the original one, else the long ones (times any scaling).
		t.Arch.SessionRope = func(o model.SessionOptions) []float32 {
			if o.CtxLen > origCtx {
				return c.RopeFactors(long)
			}
			return c.RopeFactors(short)
		}
	}
	for i := range t.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		qkv := b.Split(p+"attn_qkv.weight", c.Dim, c.QDim(), c.KVDim(), c.KVDim())
		gateUp := b.Split(p+"ffn_up.weight", c.Dim, c.HiddenDim, c.HiddenDim)
		t.Layers[i] = model.Block{
			AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
			Q:        qkv[0],
			K:        qkv[1],
			V:        qkv[2],
			Window:   c.SlidingWindow,
			O:        b.Matrix(p+"attn_output.weight", c.Dim, c.QDim()),
			FFNNorm:  b.Vector(p+"ffn_norm.weight", c.Dim),
			FFN:      model.FFN{Gate: gateUp[0], Up: gateUp[1], Down: b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim)},
		}
	}
	return t.Finish(b)
}

// longRopeAttnFactor is rope.scaling.attn_factor, or the LongRoPE default
// √(1 + ln(ctx/orig)/ln(orig)) for a model trained to ctx from orig.
func longRopeAttnFactor(f *gguf.File, ctx, orig int) float32 {
	if v, err := f.Meta.Float("phi3.rope.scaling.attn_factor"); err == nil && v > 0 {
		return float32(v)
	}
	if ctx <= orig || orig <= 1 {
		return 1
	}
	return float32(math.Sqrt(1 + math.Log(float64(ctx)/float64(orig))/math.Log(float64(orig))))
}
