package checkpoint

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/glassbox-ai/glassbox/tensor"
)

// ErrComponent marks a checkpoint that lacks a network the pipeline needs.
var ErrComponent = errors.New("missing component")

// Stats counts a group of tensors.
type Stats struct {
	Tensors int
	Params  int64 // elements
	Bytes   int64 // of the elements, from their shapes and types
	// DTypes counts the elements of each element type.
	DTypes map[tensor.DType]int64
}

func (s *Stats) add(t *Tensor) {
	n := int64(t.Numel())
	s.Tensors++
	s.Params += n
	if b, err := t.DType.RowBytes(n); err == nil {
		s.Bytes += b // from the shape: header-only views have no Data
	}
	if s.DTypes == nil {
		s.DTypes = map[tensor.DType]int64{}
	}
	s.DTypes[t.DType] += n
}

// DTypeList names the element types, the most common first ("F16",
// "F16+F32").
func (s Stats) DTypeList() string {
	type kv struct {
		dt tensor.DType
		n  int64
	}
	var l []kv
	for dt, n := range s.DTypes {
		l = append(l, kv{dt, n})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || l[i].n == l[j].n && l[i].dt.String() < l[j].dt.String() })
	var names []string
	for _, e := range l {
		names = append(names, e.dt.String())
	}
	return strings.Join(names, "+")
}

// StatsOf counts every tensor of src.
func StatsOf(src Source) Stats {
	var s Stats
	for _, n := range src.Names() {
		if t, ok := src.Tensor(n); ok {
			s.add(t)
		}
	}
	return s
}

// Component is one network of a checkpoint, as a view whose names are the
// network's own (the prefix removed).
type Component struct {
	Name   string // "text encoder", "UNet", "VAE"
	Path   string // the file it comes from
	Prefix string // its prefix in that file ("" for a file of its own)
	// Naming is "LDM" or, for a VAE file in diffusers' names viewed in LDM
	// names, "diffusers".
	Naming string
	Source Source
	Stats
}

// Components are an SD 1.x checkpoint's three networks.
type Components struct {
	Detection   Detection
	TextEncoder Component
	UNet        Component
	VAE         Component
	// EMA counts the tensors under model_ema.* (a .ckpt's moving-average
	// copy of the UNet), which are ignored; Other the tensors outside any
	// component (noise-schedule buffers such as alphas_cumprod, a VAE
	// replaced by a separate file, ...), also unused.
	EMA, Other Stats
}

// textEncoderPrefixes are where SD 1.x checkpoints keep CLIP's text model:
// transformers' CLIPTextModel names it text_model.*; files converted with
// older transformers lack that level.
var textEncoderPrefixes = []string{PrefixTextEncoder, "cond_stage_model.transformer."}

// SD1Components checks that main is an SD 1.x checkpoint and returns its
// networks as views. vae, if not nil, is a separate VAE file (--vae) that
// replaces the checkpoint's (see VAEView); a checkpoint without a VAE of
// its own needs one.
func SD1Components(main Source, vae Source) (*Components, error) {
	det, err := RequireSD1(main)
	if err != nil {
		return nil, err
	}
	c := &Components{Detection: det}
	x := newIndex(main)
	missing := func(what, want string) error {
		return &Error{Path: main.Path(), Err: fmt.Errorf("%w: the checkpoint has no %s (%s)", ErrComponent, what, want)}
	}
	for _, p := range textEncoderPrefixes {
		if x.has(p + "embeddings.token_embedding.weight") {
			c.TextEncoder = component("text encoder", main, p)
			break
		}
	}
	if c.TextEncoder.Source == nil {
		return nil, missing("text encoder", PrefixTextEncoder+"embeddings.token_embedding.weight and the rest of CLIP ViT-L/14")
	}
	c.UNet = component("UNet", main, PrefixUNet)
	if c.UNet.Tensors == 0 {
		return nil, missing("UNet", PrefixUNet+"*")
	}
	switch {
	case vae != nil:
		v, naming, err := VAEView(vae)
		if err != nil {
			return nil, err
		}
		c.VAE = Component{Name: "VAE", Path: vae.Path(), Source: v, Naming: naming, Stats: StatsOf(v)}
	case x.hasPrefix(PrefixVAE):
		c.VAE = component("VAE", main, PrefixVAE)
	default:
		return nil, missing("VAE", PrefixVAE+"*; give a VAE file with --vae")
	}
	if err := checkVAE(c.VAE); err != nil {
		return nil, err
	}
	// Everything else (with --vae, the checkpoint's own VAE too).
	vaeOwn := vae == nil
	for _, n := range x.names {
		t, _ := main.Tensor(n)
		switch {
		case strings.HasPrefix(n, c.TextEncoder.Prefix), strings.HasPrefix(n, PrefixUNet):
		case strings.HasPrefix(n, PrefixVAE) && vaeOwn:
		case strings.HasPrefix(n, PrefixEMA):
			c.EMA.add(t)
		default:
			c.Other.add(t)
		}
	}
	return c, nil
}

func component(name string, src Source, prefix string) Component {
	v := Sub(src, prefix)
	return Component{Name: name, Path: src.Path(), Prefix: prefix, Naming: "LDM", Source: v, Stats: StatsOf(v)}
}

// checkVAE checks the latent width: SD 1.x's VAE has 4 latent channels.
func checkVAE(c Component) error {
	t, ok := c.Source.Tensor("decoder.conv_in.weight")
	if !ok {
		return &Error{Path: c.Source.Path(), Tensor: "decoder.conv_in.weight", Err: fmt.Errorf("%w (the VAE has no decoder)", ErrMissing)}
	}
	if len(t.Shape) != 4 || t.Shape[1] != 4 {
		return &Error{Path: c.Source.Path(), Tensor: "decoder.conv_in.weight", Err: fmt.Errorf("%w: has shape %v, want [512 4 3 3]: a VAE for %d-channel latents, SD 1.x's have 4", ErrShape, t.Shape, dimOr0(t.Shape, 1))}
	}
	return nil
}

func dimOr0(s []int, i int) int {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// VAEView returns a VAE's tensors in LDM names without a prefix
// (encoder.*, decoder.*, quant_conv.*, post_quant_conv.*), whatever file
// they come from: a checkpoint (first_stage_model.*), a VAE file in LDM
// names (vae-ft-mse-840000-ema-pruned.safetensors), or a VAE in diffusers'
// names (vae/diffusion_pytorch_model.safetensors), translated name by name
// (naming "diffusers") with its attention projections viewed as the 1×1
// convolutions LDM stores.
func VAEView(src Source) (Source, string, error) {
	x := newIndex(src)
	switch {
	case x.has(PrefixVAE + "decoder.conv_in.weight"):
		return Sub(src, PrefixVAE), "LDM", nil
	case x.has("decoder.conv_in.weight") && x.hasPrefix("decoder.up_blocks."):
		return diffusersVAE(src), "diffusers", nil
	case x.has("decoder.conv_in.weight"):
		return src, "LDM", nil
	}
	d := Detect(src)
	return nil, "", &Error{Path: src.Path(), Err: fmt.Errorf("%w: no VAE here (no decoder.conv_in.weight, with or without first_stage_model.): it is %s", ErrComponent, withArticle(d.Family)+" ("+d.Detail+")")}
}
