package checkpoint

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// The SD 1.5 component sizes of golden/sd15/README.md §2.1.
var sd15Counts = map[string][2]int64{
	"text encoder": {196, 123060480},
	"UNet":         {686, 859520964},
	"VAE":          {248, 83653863},
}

func checkCounts(t *testing.T, c *Components, bytesPer int64) {
	t.Helper()
	for _, comp := range []Component{c.TextEncoder, c.UNet, c.VAE} {
		want := sd15Counts[comp.Name]
		if int64(comp.Tensors) != want[0] || comp.Params != want[1] || comp.Bytes != bytesPer*want[1] {
			t.Errorf("%s: %d tensors, %d params, %d bytes; want %d, %d, %d", comp.Name, comp.Tensors, comp.Params, comp.Bytes, want[0], want[1], bytesPer*want[1])
		}
	}
}

func TestSD1Components(t *testing.T) {
	c, err := SD1Components(layout(set("model_ema.decay"), set("model_ema.num_updates"), set("alphas_cumprod", 1000)), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, c, 2)
	if c.EMA.Tensors != 2 || c.Other.Tensors != 1 || c.Other.Params != 1000 {
		t.Errorf("EMA %+v, other %+v", c.EMA, c.Other)
	}
	if c.UNet.Prefix != PrefixUNet || c.UNet.DTypeList() != "F16" {
		t.Errorf("UNet %+v", c.UNet)
	}
	// The views name tensors as the networks do.
	if _, ok := c.TextEncoder.Source.Tensor("embeddings.token_embedding.weight"); !ok {
		t.Error("text encoder view lacks embeddings.token_embedding.weight")
	}
	if _, ok := c.VAE.Source.Tensor("decoder.conv_in.weight"); !ok {
		t.Error("VAE view lacks decoder.conv_in.weight")
	}
	if _, ok := c.UNet.Source.Tensor("out.2.weight"); !ok {
		t.Error("UNet view lacks out.2.weight")
	}
}

// TestSD1ComponentsVAE: a separate VAE file, in any naming, gives the same
// view as the checkpoint's own; the checkpoint's own VAE is then unused.
func TestSD1ComponentsVAE(t *testing.T) {
	ldm := layout(keep(PrefixVAE, true))
	tests := []struct {
		name   string
		vae    Source
		naming string
	}{
		{"ldm names", ldm, "LDM"},
		{"prefixed", layout(keep(PrefixVAE, false)), "LDM"},
		{"diffusers names", diffusersNames(t, layout(keep(PrefixVAE, true))), "diffusers"},
		{"diffusers, old attention names", renameAll(diffusersNames(t, layout(keep(PrefixVAE, true))), ".to_q.", ".query.", ".to_k.", ".key.", ".to_v.", ".value.", ".to_out.0.", ".proj_attn."), "diffusers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, main := range []*Map{layout(), layout(drop(PrefixVAE))} {
				c, err := SD1Components(main, tc.vae)
				if err != nil {
					t.Fatal(err)
				}
				if c.VAE.Naming != tc.naming {
					t.Errorf("naming %q, want %q", c.VAE.Naming, tc.naming)
				}
				checkCounts(t, c, 2)
				// Every name and shape of the LDM VAE, nothing else.
				got := c.VAE.Source.Names()
				wantNames := ldm.Names()
				if strings.Join(got, ",") != strings.Join(wantNames, ",") {
					t.Fatalf("VAE view has %d names, want %d", len(got), len(wantNames))
				}
				for _, n := range wantNames {
					a, _ := c.VAE.Source.Tensor(n)
					b, _ := ldm.Tensor(n)
					if !slices.Equal(a.Shape, b.Shape) {
						t.Errorf("%s: shape %v, want %v", n, a.Shape, b.Shape)
					}
				}
				if own := int64(len(main.Tensors)) - 196 - 686; own > 0 && int64(c.Other.Tensors) != own {
					t.Errorf("the checkpoint's own VAE: %d tensors in Other, want %d", c.Other.Tensors, own)
				}
			}
		})
	}
}

// renameAll replaces name parts (pairs from, to) in every name.
func renameAll(m *Map, pairs ...string) *Map {
	out := map[string]*Tensor{}
	for n, t := range m.Tensors {
		for i := 0; i < len(pairs); i += 2 {
			n = strings.Replace(n, pairs[i], pairs[i+1], 1)
		}
		nt := *t
		nt.Name = n
		out[n] = &nt
	}
	return &Map{Label: m.Label, Tensors: out}
}

func TestSD1ComponentsErrors(t *testing.T) {
	tests := []struct {
		name  string
		main  Source
		vae   Source
		want  string
		errIs error
	}{
		{"sdxl", layout(context(2048), set(PrefixUNet+"label_emb.0.0.weight", 1280, 2816)), nil, "it is an SDXL model", ErrFamily},
		{"no text encoder", layout(drop("cond_stage_model.")), nil, "has no text encoder", ErrComponent},
		{"unet alone", layout(keep(PrefixUNet, true)), nil, "has no text encoder", ErrComponent},
		{"no vae", layout(drop(PrefixVAE)), nil, "has no VAE (first_stage_model.*; give a VAE file with --vae)", ErrComponent},
		{"vae of 16 channels", layout(set(PrefixVAE+"decoder.conv_in.weight", 512, 16, 3, 3)), nil, `tensor "decoder.conv_in.weight": wrong shape: has shape [512 16 3 3], want [512 4 3 3]: a VAE for 16-channel latents`, ErrShape},
		{"--vae of a unet", layout(), layout(keep(PrefixUNet, true)), "no VAE here", ErrComponent},
		{"--vae of 16 channels", layout(), with(only("decoder.up.0.block.0.conv1.weight"), set("decoder.conv_in.weight", 512, 16, 3, 3)), "16-channel latents", ErrShape},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SD1Components(tc.main, tc.vae)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.errIs) || !strings.HasPrefix(err.Error(), "load: test.safetensors") {
				t.Fatalf("err = %v, want %q (%v)", err, tc.want, tc.errIs)
			}
		})
	}
}

// TestSD1ComponentsOldTextEncoderNames: a checkpoint whose text encoder
// lacks transformers' text_model level is read the same.
func TestSD1ComponentsOldTextEncoderNames(t *testing.T) {
	main := renameAll(layout(), PrefixTextEncoder, "cond_stage_model.transformer.")
	c, err := SD1Components(main, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, c, 2)
	if c.TextEncoder.Prefix != "cond_stage_model.transformer." {
		t.Errorf("prefix %q", c.TextEncoder.Prefix)
	}
}

// TestMixedDTypes: components count each dtype, and the binder reads
// F32, F16 and BF16 tensors alike.
func TestMixedDTypes(t *testing.T) {
	m := layout(func(m map[string]*Tensor) {
		for n, t := range m {
			switch {
			case strings.HasSuffix(n, ".bias"):
				t.DType = tensor.F32
			case strings.HasPrefix(n, PrefixVAE):
				t.DType = tensor.BF16
			}
		}
	})
	c, err := SD1Components(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.VAE.DTypeList(); got != "BF16+F32" {
		t.Errorf("VAE dtypes %q", got)
	}
	if got := c.UNet.DTypeList(); got != "F16+F32" {
		t.Errorf("UNet dtypes %q", got)
	}
	if c.UNet.Bytes <= 2*c.UNet.Params || c.UNet.Bytes >= 4*c.UNet.Params {
		t.Errorf("UNet bytes %d for %d params", c.UNet.Bytes, c.UNet.Params)
	}
}
