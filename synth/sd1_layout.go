package synth

import (
	"fmt"
	"sort"
)

// SDTensor is one tensor of a diffusion checkpoint's layout.
type SDTensor struct {
	Name  string
	Shape []int // outermost first, as PyTorch's size()
}

// SD1Tensors lists the tensors of a Stable Diffusion 1.5 checkpoint in the
// original LDM (CompVis) names, sorted byte-wise: the CLIP ViT-L/14 text
// model under cond_stage_model.transformer.text_model. (no position_ids),
// the UNet under model.diffusion_model. and the KL-f8 autoencoder under
// first_stage_model. (its attention q/k/v/proj_out as 1×1 convolutions,
// as are the UNet's proj_in/proj_out). No alphas_cumprod, no EMA weights.
// The module trees follow the LDM configs v1-inference.yaml
// (ldm.modules.diffusionmodules.openaimodel.UNetModel, ldm.models.autoencoder
// .AutoencoderKL) and transformers' CLIPTextModel.
func SD1Tensors() []SDTensor {
	var l sdLayout
	l.clipText("cond_stage_model.transformer.text_model.", sd1CLIP)
	l.unet("model.diffusion_model.", sd1UNet)
	l.autoencoderKL("first_stage_model.", sd1VAE)
	sort.Slice(l.ts, func(i, j int) bool { return l.ts[i].Name < l.ts[j].Name })
	return l.ts
}

// clipConfig is a CLIP text transformer's shape.
type clipConfig struct {
	vocabSize, ctxLen, dim, hiddenDim, layers int
}

// unetConfig is an LDM UNet's shape (openaimodel.UNetModel's arguments).
type unetConfig struct {
	inChannels, outChannels, modelChannels int
	channelMult                            []int
	numResBlocks                           int
	attnLevels                             []bool // a spatial transformer after each res block of this level
	contextDim                             int
}

// vaeConfig is an AutoencoderKL's shape (ddconfig).
type vaeConfig struct {
	ch, inChannels, outChannels, zChannels, embedDim int
	chMult                                           []int
	numResBlocks                                     int
}

var (
	sd1CLIP = clipConfig{vocabSize: 49408, ctxLen: 77, dim: 768, hiddenDim: 3072, layers: 12}
	sd1UNet = unetConfig{inChannels: 4, outChannels: 4, modelChannels: 320, channelMult: []int{1, 2, 4, 4},
		numResBlocks: 2, attnLevels: []bool{true, true, true, false}, contextDim: 768}
	sd1VAE = vaeConfig{ch: 128, inChannels: 3, outChannels: 3, zChannels: 4, embedDim: 4,
		chMult: []int{1, 2, 4, 4}, numResBlocks: 2}
)

type sdLayout struct{ ts []SDTensor }

func (l *sdLayout) add(name string, shape ...int) {
	l.ts = append(l.ts, SDTensor{Name: name, Shape: shape})
}

// linear adds name.weight [out, in] and, if bias, name.bias [out].
func (l *sdLayout) linear(name string, in, out int, bias bool) {
	l.add(name+".weight", out, in)
	if bias {
		l.add(name+".bias", out)
	}
}

// conv adds a k×k convolution with bias: weight [out, in, k, k], bias [out].
func (l *sdLayout) conv(name string, in, out, k int) {
	l.add(name+".weight", out, in, k, k)
	l.add(name+".bias", out)
}

// norm adds a LayerNorm or GroupNorm's weight and bias [ch].
func (l *sdLayout) norm(name string, ch int) {
	l.add(name+".weight", ch)
	l.add(name+".bias", ch)
}

// clipText is transformers' CLIPTextModel.text_model.
func (l *sdLayout) clipText(p string, c clipConfig) {
	l.add(p+"embeddings.token_embedding.weight", c.vocabSize, c.dim)
	l.add(p+"embeddings.position_embedding.weight", c.ctxLen, c.dim)
	for i := range c.layers {
		b := fmt.Sprintf("%sencoder.layers.%d.", p, i)
		l.norm(b+"layer_norm1", c.dim)
		for _, proj := range []string{"q_proj", "k_proj", "v_proj", "out_proj"} {
			l.linear(b+"self_attn."+proj, c.dim, c.dim, true)
		}
		l.norm(b+"layer_norm2", c.dim)
		l.linear(b+"mlp.fc1", c.dim, c.hiddenDim, true)
		l.linear(b+"mlp.fc2", c.hiddenDim, c.dim, true)
	}
	l.norm(p+"final_layer_norm", c.dim)
}

// unet is openaimodel.UNetModel: input blocks (a res block and maybe a
// spatial transformer per block, a downsampling conv between levels), the
// middle block, output blocks over the concatenated skips (upsampling at
// the end of each level but the last), and the output head.
func (l *sdLayout) unet(p string, c unetConfig) {
	mc := c.modelChannels
	embDim := 4 * mc
	l.linear(p+"time_embed.0", mc, embDim, true)
	l.linear(p+"time_embed.2", embDim, embDim, true)

	l.conv(p+"input_blocks.0.0", c.inChannels, mc, 3)
	skips := []int{mc}
	ch, block := mc, 1
	for level, mult := range c.channelMult {
		for range c.numResBlocks {
			b := fmt.Sprintf("%sinput_blocks.%d.", p, block)
			l.resBlock(b+"0", ch, mult*mc, embDim)
			ch = mult * mc
			if c.attnLevels[level] {
				l.spatialTransformer(b+"1", ch, c.contextDim)
			}
			skips = append(skips, ch)
			block++
		}
		if level != len(c.channelMult)-1 {
			l.conv(fmt.Sprintf("%sinput_blocks.%d.0.op", p, block), ch, ch, 3)
			skips = append(skips, ch)
			block++
		}
	}

	l.resBlock(p+"middle_block.0", ch, ch, embDim)
	l.spatialTransformer(p+"middle_block.1", ch, c.contextDim)
	l.resBlock(p+"middle_block.2", ch, ch, embDim)

	block = 0
	for level := len(c.channelMult) - 1; level >= 0; level-- {
		out := c.channelMult[level] * mc
		for i := range c.numResBlocks + 1 {
			b := fmt.Sprintf("%soutput_blocks.%d.", p, block)
			skip := skips[len(skips)-1]
			skips = skips[:len(skips)-1]
			l.resBlock(b+"0", ch+skip, out, embDim)
			ch = out
			sub := 1
			if c.attnLevels[level] {
				l.spatialTransformer(b+"1", ch, c.contextDim)
				sub++
			}
			if level > 0 && i == c.numResBlocks {
				l.conv(fmt.Sprintf("%s%d.conv", b, sub), ch, ch, 3)
			}
			block++
		}
	}

	l.norm(p+"out.0", mc)
	l.conv(p+"out.2", mc, c.outChannels, 3)
}

// resBlock is openaimodel.ResBlock: GroupNorm, SiLU, conv; the time
// embedding projected and added; GroupNorm, SiLU, dropout, conv; a 1×1
// skip_connection when the width changes.
func (l *sdLayout) resBlock(p string, in, out, embDim int) {
	l.norm(p+".in_layers.0", in)
	l.conv(p+".in_layers.2", in, out, 3)
	l.linear(p+".emb_layers.1", embDim, out, true)
	l.norm(p+".out_layers.0", out)
	l.conv(p+".out_layers.3", out, out, 3)
	if in != out {
		l.conv(p+".skip_connection", in, out, 1)
	}
}

// spatialTransformer is attention.SpatialTransformer with one
// BasicTransformerBlock (self-attention, cross-attention over the text
// context, GEGLU feed-forward), proj_in/proj_out as 1×1 convolutions.
func (l *sdLayout) spatialTransformer(p string, ch, contextDim int) {
	l.norm(p+".norm", ch)
	l.conv(p+".proj_in", ch, ch, 1)
	b := p + ".transformer_blocks.0."
	for _, attn := range []struct {
		name  string
		kvDim int
	}{{"attn1", ch}, {"attn2", contextDim}} {
		l.linear(b+attn.name+".to_q", ch, ch, false)
		l.linear(b+attn.name+".to_k", attn.kvDim, ch, false)
		l.linear(b+attn.name+".to_v", attn.kvDim, ch, false)
		l.linear(b+attn.name+".to_out.0", ch, ch, true)
	}
	l.linear(b+"ff.net.0.proj", ch, 8*ch, true) // GEGLU: value and gate halves of 4·ch
	l.linear(b+"ff.net.2", 4*ch, ch, true)
	for _, n := range []string{"norm1", "norm2", "norm3"} {
		l.norm(b+n, ch)
	}
	l.conv(p+".proj_out", ch, ch, 1)
}

// autoencoderKL is ldm.models.autoencoder.AutoencoderKL: the encoder to
// 2·zChannels moments, quant_conv, post_quant_conv and the decoder.
func (l *sdLayout) autoencoderKL(p string, c vaeConfig) {
	// Encoder.
	l.conv(p+"encoder.conv_in", c.inChannels, c.ch, 3)
	ch := c.ch
	for level, mult := range c.chMult {
		for j := range c.numResBlocks {
			l.vaeResBlock(fmt.Sprintf("%sencoder.down.%d.block.%d", p, level, j), ch, mult*c.ch)
			ch = mult * c.ch
		}
		if level != len(c.chMult)-1 {
			l.conv(fmt.Sprintf("%sencoder.down.%d.downsample.conv", p, level), ch, ch, 3)
		}
	}
	l.vaeMid(p+"encoder.mid.", ch)
	l.norm(p+"encoder.norm_out", ch)
	l.conv(p+"encoder.conv_out", ch, 2*c.zChannels, 3)

	l.conv(p+"quant_conv", 2*c.zChannels, 2*c.embedDim, 1)
	l.conv(p+"post_quant_conv", c.embedDim, c.zChannels, 1)

	// Decoder.
	ch = c.ch * c.chMult[len(c.chMult)-1]
	l.conv(p+"decoder.conv_in", c.zChannels, ch, 3)
	l.vaeMid(p+"decoder.mid.", ch)
	for level := len(c.chMult) - 1; level >= 0; level-- {
		out := c.chMult[level] * c.ch
		for j := range c.numResBlocks + 1 {
			l.vaeResBlock(fmt.Sprintf("%sdecoder.up.%d.block.%d", p, level, j), ch, out)
			ch = out
		}
		if level != 0 {
			l.conv(fmt.Sprintf("%sdecoder.up.%d.upsample.conv", p, level), ch, ch, 3)
		}
	}
	l.norm(p+"decoder.norm_out", ch)
	l.conv(p+"decoder.conv_out", ch, c.outChannels, 3)
}

// vaeResBlock is model.ResnetBlock (no time embedding): norm1, conv1,
// norm2, conv2, and a 1×1 nin_shortcut when the width changes.
func (l *sdLayout) vaeResBlock(p string, in, out int) {
	l.norm(p+".norm1", in)
	l.conv(p+".conv1", in, out, 3)
	l.norm(p+".norm2", out)
	l.conv(p+".conv2", out, out, 3)
	if in != out {
		l.conv(p+".nin_shortcut", in, out, 1)
	}
}

// vaeMid is the middle: a res block, single-head attention (q, k, v and
// proj_out as 1×1 convolutions), a res block.
func (l *sdLayout) vaeMid(p string, ch int) {
	l.vaeResBlock(p+"block_1", ch, ch)
	l.norm(p+"attn_1.norm", ch)
	for _, n := range []string{"q", "k", "v", "proj_out"} {
		l.conv(p+"attn_1."+n, ch, ch, 1)
	}
	l.vaeResBlock(p+"block_2", ch, ch)
}

// SD1Params is the number of parameters of SD1Tensors (1,066,235,307).
func SD1Params() int64 {
	var n int64
	for _, t := range SD1Tensors() {
		m := int64(1)
		for _, d := range t.Shape {
			m *= int64(d)
		}
		n += m
	}
	return n
}
