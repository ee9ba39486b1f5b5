// Package gptoss is OpenAI's gpt-oss (gpt-oss-20b, gpt-oss-120b; the
// GGUF architecture "gpt-oss"): a decoder whose every feed-forward network
// is a mixture of experts, with
//   - biases on the query, key, value and output projections;
//   - a learned attention sink per query head (a logit each head's softmax
//     normalizes over, with no value behind it: compute.Attn.Sinks);
//   - a sliding window on alternate layers (the even ones, as llama.cpp's
//     sliding_window_pattern 2), full attention on the others;
//   - RoPE on the two halves of each head (NeoX), usually with YaRN;
//   - experts with biases after the router and each matrix, the router's
//     chosen scores softmaxed, and the clamped SwiGLU of compute.SwiGLUOAI.
//
// The expert matrices of released files are MXFP4. It is model.Block with
// those parts bound under gpt-oss's names: the forward pass is
// model.Transformer's.
//
// Reference: OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card"
// (arXiv:2508.10925).
//
// Imports: model, compute, gguf.
package gptoss

import (
	"fmt"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

func init() { model.Register("gpt-oss", Load) }

// Load binds a gpt-oss file.
func Load(f *gguf.File) (model.Model, error) {
	cfg, err := model.ReadConfigMoE(f, "gpt-oss")
	if err != nil {
		return nil, err
	}
	c := &cfg
	if c.Experts == 0 {
		return nil, fmt.Errorf("load: gpt-oss: metadata gpt-oss.expert_count is missing (every block is a mixture of experts)")
	}
	if c.SlidingWindow == 0 {
		return nil, fmt.Errorf("load: gpt-oss: metadata gpt-oss.attention.sliding_window is missing (its even layers attend within a window)")
	}
	period, err := swaPeriod(f)
	if err != nil {
		return nil, err
	}
	b := model.NewBinder(f)
	t := model.NewTransformer(b, cfg)
	if t.Tied { // the output matrix is never the embedding's: its absence is the binder's error
		b.Matrix("output.weight", c.VocabSize, c.Dim)
	}
	t.Arch.NeoX = true
	for i := range t.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		L := model.Block{
			AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
			Q:        b.Matrix(p+"attn_q.weight", c.QDim(), c.Dim),
			K:        b.Matrix(p+"attn_k.weight", c.KVDim(), c.Dim),
			V:        b.Matrix(p+"attn_v.weight", c.KVDim(), c.Dim),
			QBias:    b.Vector(p+"attn_q.bias", c.QDim()),
			KBias:    b.Vector(p+"attn_k.bias", c.KVDim()),
			VBias:    b.Vector(p+"attn_v.bias", c.KVDim()),
			Sinks:    b.Vector(p+"attn_sinks.weight", c.NumHeads),
			O:        b.Matrix(p+"attn_output.weight", c.Dim, c.QDim()),
			OBias:    b.Vector(p+"attn_output.bias", c.Dim),
			FFNNorm:  b.Vector(p+"post_attention_norm.weight", c.Dim), // the experts' input norm
		}
		if i%period < period-1 { // llama.cpp's pattern: the last layer of each period is full
			L.Window = c.SlidingWindow
		}
		L.FFN = model.BindFFN(b, c, p)
		e := L.FFN.MoE
		e.RouterBias = b.Vector(p+"ffn_gate_inp.bias", c.Experts)
		e.GateBias = b.Vectors(p+"ffn_gate_exps.bias", c.Experts, c.ExpertHiddenDim)
		e.UpBias = b.Vectors(p+"ffn_up_exps.bias", c.Experts, c.ExpertHiddenDim)
		e.DownBias = b.Vectors(p+"ffn_down_exps.bias", c.Experts, c.Dim)
		e.Act = compute.SwiGLUOAI
		t.Layers[i] = L
	}
	return t.Finish(b)
}

// swaPeriod reads gpt-oss.attention.sliding_window_pattern, the period of
// the layers' pattern (2 when absent: even layers windowed, odd ones full).
func swaPeriod(f *gguf.File) (int, error) {
	const key = "gpt-oss.attention.sliding_window_pattern"
	if !f.Meta.Has(key) {
		return 2, nil
	}
	v, err := f.Meta.Int(key)
	if err != nil || v < 1 || v > 1<<16 {
		return 0, fmt.Errorf("load: gpt-oss: metadata %s: want a period of at least 1 (a per-layer array is not supported)", key)
	}
	return int(v), nil
}
