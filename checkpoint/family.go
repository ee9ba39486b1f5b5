package checkpoint

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Family is the kind of model a set of tensors is, as far as its names and
// shapes tell.
type Family string

// The families Detect names. Only SD1 runs; the others are recognized so a
// wrong file fails with what it is.
const (
	SD1          Family = "SD 1.x"
	SD1Inpaint   Family = "SD 1.x inpainting"
	SD1Pix2Pix   Family = "SD 1.x instruct-pix2pix"
	SD2          Family = "SD 2.x"
	SD2Inpaint   Family = "SD 2.x inpainting"
	SD2Depth     Family = "SD 2.x depth-to-image"
	SDXL         Family = "SDXL"
	SDXLRefiner  Family = "SDXL refiner"
	SDXLInpaint  Family = "SDXL inpainting"
	OtherUNet    Family = "LDM UNet"
	DiffusersNet Family = "diffusers UNet"
	Flux         Family = "Flux"
	SD3          Family = "SD 3.x"
	Wan          Family = "Wan"
	OtherDiT     Family = "diffusion transformer"
	VAE          Family = "VAE"
	WanVAE       Family = "Wan VAE"
	TinyVAE      Family = "tiny autoencoder"
	TextEncoder  Family = "text encoder"
	LoRA         Family = "LoRA"
	ControlNet   Family = "ControlNet"
	Unknown      Family = "unknown"
)

// ErrFamily marks a checkpoint of a family glassbox does not run.
var ErrFamily = errors.New("not an SD 1.x checkpoint")

// The component prefixes of a single-file LDM (CompVis) checkpoint.
const (
	PrefixTextEncoder = "cond_stage_model.transformer.text_model."
	PrefixUNet        = "model.diffusion_model."
	PrefixVAE         = "first_stage_model."
	// PrefixEMA holds a .ckpt's exponential-moving-average copy of the
	// UNet (names with their dots removed). Like sd.cpp and A1111 with
	// the v1 inference config (use_ema: false), glassbox ignores it.
	PrefixEMA = "model_ema."
)

// Detection is what Detect found.
type Detection struct {
	Family Family
	// Detail says which tensors showed it, with their shapes.
	Detail string
	// Note adds what the tensors cannot tell (SD 2.x: ε or v prediction).
	Note string
	// InChannels, LatentChannels and ContextDim are the UNet's input
	// channels, the latent channels (UNet output or VAE latent) and the
	// cross-attention context width; 0 when not found.
	InChannels, LatentChannels, ContextDim int
}

func (d Detection) String() string {
	s := string(d.Family)
	if d.Detail != "" {
		s += " (" + d.Detail + ")"
	}
	if d.Note != "" {
		s += "; " + d.Note
	}
	return s
}

// index answers name and prefix questions over a source's sorted names.
type index struct {
	src   Source
	names []string
}

func newIndex(src Source) *index { return &index{src: src, names: src.Names()} }

func (x *index) shape(name string) []int {
	if t, ok := x.src.Tensor(name); ok {
		return t.Shape
	}
	return nil
}

func (x *index) has(name string) bool { _, ok := x.src.Tensor(name); return ok }

// hasPrefix reports whether some name starts with p.
func (x *index) hasPrefix(p string) bool {
	i := sort.SearchStrings(x.names, p)
	return i < len(x.names) && strings.HasPrefix(x.names[i], p)
}

// find returns the first name (sorted) with prefix p that contains sub and
// ends with suffix.
func (x *index) find(p, sub, suffix string) (string, bool) {
	for i := sort.SearchStrings(x.names, p); i < len(x.names) && strings.HasPrefix(x.names[i], p); i++ {
		n := x.names[i]
		if strings.Contains(n[len(p):], sub) && strings.HasSuffix(n, suffix) {
			return n, true
		}
	}
	return "", false
}

// anyContains reports whether some name contains sub.
func (x *index) anyContains(sub string) (string, bool) {
	for _, n := range x.names {
		if strings.Contains(n, sub) {
			return n, true
		}
	}
	return "", false
}

// dim returns shape[i] of the named tensor, or 0.
func (x *index) dim(name string, i int) int {
	s := x.shape(name)
	if i < len(s) {
		return s[i]
	}
	return 0
}

func shapeOf(x *index, name string) string { return fmt.Sprintf("%s %v", name, x.shape(name)) }

// Detect tells the family of src's tensors from their names and shapes.
func Detect(src Source) Detection {
	x := newIndex(src)
	for _, d := range detectors {
		if det, ok := d(x); ok {
			return det
		}
	}
	return unknown(x)
}

// detectors are tried in order; the first that recognizes the tensors wins.
var detectors = []func(*index) (Detection, bool){
	detectLoRA, detectControlNet, detectLDMUNet, detectDiT, detectDiffusersUNet,
	detectVAE, detectTextEncoder, detectTinyVAE,
}

func detectLoRA(x *index) (Detection, bool) {
	for _, sub := range []string{"lora_up.weight", "lora_down.weight", ".lora_A.", ".lora_B.", "lora_unet_", "lora_te"} {
		if n, ok := x.anyContains(sub); ok {
			return Detection{Family: LoRA, Detail: "adapter weights such as " + n + ", not a whole model"}, true
		}
	}
	return Detection{}, false
}

func detectControlNet(x *index) (Detection, bool) {
	if n, ok := x.find("", "input_hint_block.", ".weight"); ok {
		return Detection{Family: ControlNet, Detail: n + ": a control network applied beside a UNet, not a whole model"}, true
	}
	return Detection{}, false
}

// detectLDMUNet reads the UNet of an LDM-named checkpoint (or of a UNet
// file in those names without the model.diffusion_model. prefix): its
// input convolution gives the input channels (4 plain, 9 inpainting:
// latent + mask + masked image, 8 instruct-pix2pix, 5 SD 2 depth), its
// output convolution the latent channels, and the cross-attention keys the
// context width (768 CLIP ViT-L/14: SD 1.x; 1024 OpenCLIP ViT-H: SD 2.x;
// 2048 CLIP-L + bigG: SDXL; 1280 bigG alone: the SDXL refiner).
func detectLDMUNet(x *index) (Detection, bool) {
	p := PrefixUNet
	if !x.has(p+"input_blocks.0.0.weight") && x.has("input_blocks.0.0.weight") && x.has("out.2.weight") {
		p = ""
	}
	in0 := p + "input_blocks.0.0.weight"
	if !x.has(in0) {
		if x.hasPrefix("conditioner.embedders.") {
			return Detection{Family: SDXL, Detail: "conditioner.embedders.* text encoders"}, true
		}
		return Detection{}, false
	}
	d := Detection{InChannels: x.dim(in0, 1), LatentChannels: x.dim(p+"out.2.weight", 0)}
	var ctxName string
	if n, ok := x.find(p, "attn2.to_k", ".weight"); ok {
		ctxName, d.ContextDim = n, x.dim(n, 1)
	}
	facts := []string{fmt.Sprintf("%s: %d input channels", shapeOf(x, in0), d.InChannels)}
	if ctxName != "" {
		facts = append(facts, fmt.Sprintf("%s: %d-wide context", shapeOf(x, ctxName), d.ContextDim))
	}
	label := p + "label_emb.0.0.weight"
	sdxl := x.has(label) || x.hasPrefix("conditioner.embedders.")
	if x.has(label) {
		facts = append(facts, shapeOf(x, label)+": a size/crop conditioning embedding")
	}
	if p == "" {
		facts = append(facts, "a UNet alone, without model.diffusion_model. prefix, text encoder or VAE")
	}
	d.Detail = strings.Join(facts, "; ")
	switch {
	case sdxl && d.ContextDim == 1280:
		d.Family = SDXLRefiner
	case sdxl && d.InChannels == 9:
		d.Family = SDXLInpaint
	case sdxl:
		d.Family = SDXL
	case d.ContextDim == 768 && d.InChannels == 4 && d.LatentChannels == 4:
		d.Family = SD1
	case d.ContextDim == 768 && d.InChannels == 9:
		d.Family = SD1Inpaint
	case d.ContextDim == 768 && d.InChannels == 8:
		d.Family = SD1Pix2Pix
	case d.ContextDim == 1024:
		d.Family = SD2
		switch d.InChannels {
		case 9:
			d.Family = SD2Inpaint
		case 5:
			d.Family = SD2Depth
		}
		d.Note = "SD 2.x-768 models predict v and the 2.x-base models ε; the tensors do not say which (the config does)"
	default:
		d.Family = OtherUNet
	}
	return d, true
}

// detectDiT recognizes the transformer denoisers, with or without the
// model.diffusion_model. prefix ComfyUI single files carry.
func detectDiT(x *index) (Detection, bool) {
	for _, p := range []string{"", PrefixUNet} {
		if n, ok := x.find(p, "double_blocks.0.", ".weight"); ok && x.hasPrefix(p+"single_blocks.") {
			return Detection{Family: Flux, Detail: n + " and " + p + "single_blocks.*: a Flux-style double/single-stream transformer"}, true
		}
		if n, ok := x.find(p, "joint_blocks.0.", ".weight"); ok {
			return Detection{Family: SD3, Detail: n + ": an MMDiT (SD 3/3.5)"}, true
		}
		pe := p + "patch_embedding.weight"
		if x.has(pe) && x.hasPrefix(p+"blocks.0.cross_attn.") {
			s := x.shape(pe)
			d := Detection{Family: Wan, Detail: fmt.Sprintf("%s: a video transformer of width %d", shapeOf(x, pe), x.dim(pe, 0))}
			if len(s) == 5 {
				d.InChannels = s[1]
			}
			return d, true
		}
		if n, ok := x.find(p, "transformer_blocks.0.", ".weight"); ok && !x.hasPrefix(p+"down_blocks.") && !x.hasPrefix(p+"input_blocks.") {
			return Detection{Family: OtherDiT, Detail: n + ": transformer blocks without a UNet's down/up blocks"}, true
		}
	}
	return Detection{}, false
}

// detectDiffusersUNet recognizes a UNet in diffusers' naming (one
// component of a diffusers folder: unet/diffusion_pytorch_model.*).
func detectDiffusersUNet(x *index) (Detection, bool) {
	if !x.has("conv_in.weight") || !x.hasPrefix("down_blocks.") || !x.hasPrefix("up_blocks.") || x.hasPrefix("encoder.") {
		return Detection{}, false
	}
	d := Detection{Family: DiffusersNet, InChannels: x.dim("conv_in.weight", 1), LatentChannels: x.dim("conv_out.weight", 0)}
	d.Detail = fmt.Sprintf("%s: %d input channels, diffusers names (down_blocks.*)", shapeOf(x, "conv_in.weight"), d.InChannels)
	if n, ok := x.find("", "attn2.to_k", ".weight"); ok {
		d.ContextDim = x.dim(n, 1)
		d.Detail += fmt.Sprintf("; %s: %d-wide context", shapeOf(x, n), d.ContextDim)
	}
	d.Note = "a diffusers folder's UNet alone; glassbox reads single-file checkpoints in LDM names"
	return d, true
}

// detectVAE recognizes an autoencoder alone, in LDM names (with or without
// first_stage_model.) or in diffusers names.
func detectVAE(x *index) (Detection, bool) {
	// Wan 2.1's VAE in its own names (Wan2.1_VAE.pth, ComfyUI's
	// wan_2.1_vae.safetensors), as vae.NewWanVAE binds it.
	if s := x.shape("decoder.conv1.weight"); len(s) == 5 && x.has("decoder.head.2.weight") {
		return Detection{Family: WanVAE, LatentChannels: s[1], Detail: shapeOf(x, "decoder.conv1.weight") + ": a 3-D (video) autoencoder"}, true
	}
	for _, p := range []string{"", PrefixVAE} {
		conv := p + "decoder.conv_in.weight"
		if !x.has(conv) {
			continue
		}
		s := x.shape(conv)
		if len(s) == 5 {
			return Detection{Family: WanVAE, LatentChannels: s[1], Detail: shapeOf(x, conv) + ": a 3-D (video) autoencoder"}, true
		}
		d := Detection{Family: VAE, LatentChannels: x.dim(conv, 1)}
		naming := "LDM names"
		if x.hasPrefix(p + "decoder.up_blocks.") {
			naming = "diffusers names"
		}
		d.Detail = fmt.Sprintf("%s: a KL autoencoder with %d latent channels, %s", shapeOf(x, conv), d.LatentChannels, naming)
		if d.LatentChannels != 4 {
			d.Note = "SD 1.x, 2.x and SDXL VAEs have 4 latent channels (16: SD 3 and Flux.1, 32: Flux.2)"
		}
		return d, true
	}
	return Detection{}, false
}

func detectTextEncoder(x *index) (Detection, bool) {
	// umT5 in Wan's own names (models_t5_umt5-xxl-enc-bf16.pth) shares
	// OpenCLIP's token_embedding.weight; its blocks tell them apart.
	if e := "token_embedding.weight"; x.has(e) && x.has("blocks.0.attn.q.weight") && x.has("blocks.0.ffn.gate.0.weight") {
		return Detection{Family: TextEncoder, ContextDim: x.dim(e, 1), Detail: fmt.Sprintf("%s: a T5 encoder in Wan's names (umT5), %d wide", shapeOf(x, e), x.dim(e, 1))}, true
	}
	for _, c := range []struct{ name, what string }{
		{PrefixTextEncoder + "embeddings.token_embedding.weight", "the SD 1.x text encoder alone (no UNet)"},
		{"text_model.embeddings.token_embedding.weight", "a CLIP text model"},
		{"text_encoders.clip_l.transformer.text_model.embeddings.token_embedding.weight", "CLIP-L text encoder of an SD 3 file"},
		{"token_embedding.weight", "an OpenCLIP text model"},
		{"shared.weight", "a T5 encoder"},
		{"encoder.block.0.layer.0.SelfAttention.q.weight", "a T5 encoder"},
	} {
		if x.has(c.name) {
			return Detection{Family: TextEncoder, ContextDim: x.dim(c.name, 1), Detail: fmt.Sprintf("%s: %s, %d wide", shapeOf(x, c.name), c.what, x.dim(c.name, 1))}, true
		}
	}
	return Detection{}, false
}

// detectTinyVAE recognizes TAESD-style tiny autoencoders (TAESD, TAESDXL,
// TAEF1, TAEF2): nn.Sequential layers named by number.
func detectTinyVAE(x *index) (Detection, bool) {
	if len(x.names) == 0 {
		return Detection{}, false
	}
	for _, n := range x.names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			return Detection{}, false
		}
	}
	if _, ok := x.find("", ".conv.0.", ".weight"); !ok {
		return Detection{}, false
	}
	switch {
	case x.dim("0.weight", 1) == 3:
		return Detection{Family: TinyVAE, Detail: shapeOf(x, "0.weight") + ": the encoder of a TAESD-style tiny autoencoder (RGB in)"}, true
	case x.has("1.weight"):
		c := x.dim("1.weight", 1)
		return Detection{Family: TinyVAE, LatentChannels: c, Detail: fmt.Sprintf("%s: the decoder of a TAESD-style tiny autoencoder for %d-channel latents", shapeOf(x, "1.weight"), c)}, true
	}
	return Detection{Family: TinyVAE, Detail: "numbered nn.Sequential layers with conv blocks (TAESD style)"}, true
}

func unknown(x *index) Detection {
	first := x.names[:min(3, len(x.names))]
	if len(first) == 0 {
		return Detection{Family: Unknown, Detail: "no tensors"}
	}
	return Detection{Family: Unknown, Detail: fmt.Sprintf("%d tensors, none of a known family's names (first: %s)", len(x.names), strings.Join(first, ", "))}
}

// RequireSD1 returns nil if src is an SD 1.x checkpoint, else a load-stage
// error (ErrFamily) saying which family it is and that glassbox runs
// SD 1.x.
func RequireSD1(src Source) (Detection, error) {
	d := Detect(src)
	if d.Family == SD1 {
		return d, nil
	}
	facts := d.Detail
	if d.Note != "" {
		facts += "; " + d.Note
	}
	what := "it is " + withArticle(d.Family) + " (" + facts + ")"
	if d.Family == Unknown {
		what = "it is not a model glassbox recognizes (" + facts + ")"
	}
	if d.Family == VAE {
		what += "; a VAE file goes with --vae beside a checkpoint"
	}
	return d, &Error{Path: src.Path(), Err: fmt.Errorf("%w: %s; glassbox runs SD 1.x checkpoints (a UNet with 4 input channels and a 768-wide context, the CLIP ViT-L/14 text encoder and a 4-channel KL VAE, in LDM names)", ErrFamily, what)}
}

// withArticle is "an SD 2.x model", "a Flux model".
func withArticle(f Family) string {
	if strings.HasPrefix(string(f), "SD") || strings.HasPrefix(string(f), "LDM") {
		return "an " + string(f) + " model"
	}
	return "a " + string(f) + " model"
}
