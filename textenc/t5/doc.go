// Package t5 is the text encoder of Wan 2.1: the encoder of umT5 (Chung
// et al. 2023, "UniMax: Fairer and More Effective Language Sampling for
// Large-Scale Multilingual Pretraining", arXiv:2304.09151), a T5 v1.1
// encoder (Raffel et al. 2020, "Exploring the Limits of Transfer
// Learning with a Unified Text-to-Text Transformer", arXiv:1910.10683)
// whose every block has its own relative position bias, as Wan's
// wan/modules/t5.py runs it (T5EncoderModel, T5Encoder with
// shared_pos=False; umt5_xxl: 24 blocks of 4096, 64 heads, FFN 10240).
//
// Token ids (tokenizer.FromSentencePiece on the model's spiece.model,
// EOS appended) become hidden states [len(ids)][Dim]: the token embedding
// (not scaled), then per block
//
//	x += o(attention(rms(x)·norm1))    scores q·kᵀ + bias[h][bucket(k−q)], no 1/√d
//	x += fc2(fc1(h) ⊙ gelu_tanh(gate(h))),  h = rms(x)·norm2
//
// and a final RMS norm (T5LayerNorm: x·rsqrt(mean(x²) + 1e-6)·w, no mean,
// no bias). The relative position bucket of k − q is bidirectional with
// 32 buckets and max distance 128 (relativeBucket), computed in float32 as
// PyTorch does.
//
// Padding: Wan pads the ids with 0 to 512 positions and masks the padded
// keys with float32's lowest value, runs all 512 rows and keeps the first
// len(ids). A masked key's weight is exactly 0, so the kept rows are those
// of the real tokens alone: Encode runs only them (the padded run, kept in
// the tests, agrees within float rounding), and the caller zero-pads the
// context to 512 rows for the DiT as Wan's WanModel does.
//
// Weights: Wan's names (token_embedding.weight, blocks.N.attn.q.weight,
// blocks.N.ffn.gate.0.weight, blocks.N.pos_embedding.embedding.weight,
// norm.weight; models_t5_umt5-xxl-enc-bf16.pth) or the Hugging Face names
// of ComfyUI's umt5_xxl_*.safetensors (shared.weight,
// encoder.block.N.layer.0.SelfAttention.q.weight,
// ...DenseReluDense.wi_0 = gate, wi_1 = fc1, wo = fc2,
// encoder.final_layer_norm.weight); a file whose blocks after the first
// have no relative_attention_bias shares the first block's (T5 v1.1). The
// shape comes from the tensors. Matrices stay in the file's type (F32,
// F16, BF16), their products accumulated in float32.
//
// Prompts: CleanPrompt is Wan's cleaning before the tokenizer (HTML
// entities, whitespace; not ftfy's repairs), DefaultNegativePrompt the
// negative prompt Wan uses when none is given.
//
// Layout: hidden states are row-major [token][Dim]; weight matrices are
// the checkpoint's [out][in] (compute.MatMul computes x·Wᵀ).
//
// Against the official code in float32 (../shared/golden/wan §3c, §3d) on
// the tiny umT5 (synth's umt5-tiny-s4001): umt5_tiny.out and
// t2v_tiny.context_cond max |Δ| 3.0e-6, rel L2 6.7e-7 (NMSE 4.5e-13);
// t2v_tiny.context_uncond 3.2e-6, 7.9e-7 (NMSE 6.3e-13) — the distance
// of the official code in float64 from its float32 run (2.9e-6, 5.9e-7);
// the tolerances are 3e-5 and 6e-6.
//
// Imports: checkpoint, compute.
package t5
