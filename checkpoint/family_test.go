package checkpoint

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/synth"
	"github.com/glassbox-ai/glassbox/tensor"
)

// layout is a Map of the SD 1.5 layout's names and shapes without data
// (detection and component views read shapes only), edited by the
// functions given.
func layout(edits ...func(m map[string]*Tensor)) *Map {
	m := map[string]*Tensor{}
	for _, t := range synth.SD1Tensors() {
		m[t.Name] = &Tensor{Name: t.Name, DType: tensor.F16, Shape: t.Shape}
	}
	for _, e := range edits {
		e(m)
	}
	return &Map{Label: "test.safetensors", Tensors: m}
}

// set gives name the shape (adding it if missing).
func set(name string, shape ...int) func(map[string]*Tensor) {
	return func(m map[string]*Tensor) { m[name] = &Tensor{Name: name, DType: tensor.F16, Shape: shape} }
}

// drop removes every name with the prefix.
func drop(prefix string) func(map[string]*Tensor) {
	return func(m map[string]*Tensor) {
		for n := range m {
			if strings.HasPrefix(n, prefix) {
				delete(m, n)
			}
		}
	}
}

// keep keeps only names with the prefix, removing it.
func keep(prefix string, strip bool) func(map[string]*Tensor) {
	return func(m map[string]*Tensor) {
		old := maps.Clone(m)
		clear(m)
		for n, t := range old {
			if rest, ok := strings.CutPrefix(n, prefix); ok {
				if strip {
					n = rest
				}
				t.Name = n
				m[n] = t
			}
		}
	}
}

// context sets the width of every cross-attention key and value input.
func context(width int) func(map[string]*Tensor) {
	return func(m map[string]*Tensor) {
		for n, t := range m {
			if strings.Contains(n, "attn2.to_k.") || strings.Contains(n, "attn2.to_v.") {
				t.Shape = []int{t.Shape[0], width}
			}
		}
	}
}

// only is a Map of just the named tensors (shape [1] unless given).
func only(names ...string) *Map {
	m := map[string]*Tensor{}
	for _, n := range names {
		m[n] = &Tensor{Name: n, DType: tensor.F32, Shape: []int{1}}
	}
	return &Map{Label: "test.safetensors", Tensors: m}
}

func with(m *Map, edits ...func(map[string]*Tensor)) *Map {
	for _, e := range edits {
		e(m.Tensors)
	}
	return m
}

func TestDetect(t *testing.T) {
	const in0 = PrefixUNet + "input_blocks.0.0.weight"
	tests := []struct {
		name   string
		src    Source
		family Family
		detail string // a part of Detail or Note
	}{
		{"sd1", layout(), SD1, "768-wide context"},
		{"sd1 with ema and buffers", layout(set("model_ema.decay"), set("alphas_cumprod", 1000), set(PrefixTextEncoder+"embeddings.position_ids", 1, 77)), SD1, "4 input channels"},
		{"sd1 inpainting", layout(set(in0, 320, 9, 3, 3)), SD1Inpaint, "[320 9 3 3]: 9 input channels"},
		{"sd1 pix2pix", layout(set(in0, 320, 8, 3, 3)), SD1Pix2Pix, "8 input channels"},
		{"sd1 unet alone", layout(keep(PrefixUNet, true)), SD1, "a UNet alone"},
		{"sd2", layout(context(1024), drop("cond_stage_model."), set("cond_stage_model.model.token_embedding.weight", 49408, 1024)), SD2, "the tensors do not say which"},
		{"sd2 inpainting", layout(context(1024), set(in0, 320, 9, 3, 3)), SD2Inpaint, "1024-wide context"},
		{"sd2 depth", layout(context(1024), set(in0, 320, 5, 3, 3)), SD2Depth, "5 input channels"},
		{"sdxl", layout(context(2048), set(PrefixUNet+"label_emb.0.0.weight", 1280, 2816), set("conditioner.embedders.0.transformer.text_model.embeddings.token_embedding.weight", 49408, 768)), SDXL, "size/crop conditioning"},
		{"sdxl refiner", layout(context(1280), set(PrefixUNet+"label_emb.0.0.weight", 1280, 2560)), SDXLRefiner, "1280-wide context"},
		{"sdxl inpainting", layout(context(2048), set(in0, 320, 9, 3, 3), set(PrefixUNet+"label_emb.0.0.weight", 1280, 2816)), SDXLInpaint, "9 input channels"},
		{"sdxl text encoders only", only("conditioner.embedders.1.model.token_embedding"), SDXL, "conditioner.embedders"},
		{"odd unet", layout(context(768), set(PrefixUNet+"out.2.weight", 16, 320, 3, 3)), OtherUNet, "768-wide"},
		{"vae, ldm names", layout(keep(PrefixVAE, true)), VAE, "[512 4 3 3]: a KL autoencoder with 4 latent channels, LDM names"},
		{"vae, prefixed", layout(keep(PrefixVAE, false)), VAE, "4 latent channels"},
		{"vae, 16 channels", with(only("decoder.up.0.block.0.conv1.weight"), set("decoder.conv_in.weight", 512, 16, 3, 3)), VAE, "16: SD 3 and Flux.1"},
		{"vae, diffusers names", diffusersNames(t, layout(keep(PrefixVAE, true))), VAE, "diffusers names"},
		{"wan vae", with(only("encoder.conv1.weight"), set("decoder.conv_in.weight", 384, 16, 3, 3, 3)), WanVAE, "3-D"},
		{"wan vae, Wan's names", with(only("encoder.conv1.weight", "decoder.head.2.weight"), set("decoder.conv1.weight", 384, 16, 3, 3, 3)), WanVAE, "3-D"},
		{"text encoder alone", layout(keep(PrefixTextEncoder, false)), TextEncoder, "SD 1.x text encoder alone"},
		{"clip text model", layout(keep("cond_stage_model.transformer.", true)), TextEncoder, "a CLIP text model, 768 wide"},
		{"t5", with(only("encoder.final_layer_norm.weight"), set("shared.weight", 32128, 4096)), TextEncoder, "T5 encoder, 4096 wide"},
		{"umt5, Wan's names", with(only("blocks.0.attn.q.weight", "blocks.0.ffn.gate.0.weight"), set("token_embedding.weight", 256384, 4096)), TextEncoder, "T5 encoder in Wan's names (umT5), 4096 wide"},
		{"openclip text model", with(only("transformer.resblocks.0.attn.in_proj_weight"), set("token_embedding.weight", 49408, 1024)), TextEncoder, "OpenCLIP text model, 1024 wide"},
		{"flux", only("double_blocks.0.img_attn.qkv.weight", "single_blocks.0.linear1.weight"), Flux, "double/single-stream"},
		{"flux in comfy names", only(PrefixUNet+"double_blocks.0.img_attn.qkv.weight", PrefixUNet+"single_blocks.0.linear1.weight"), Flux, "double_blocks.0"},
		{"sd3", only(PrefixUNet + "joint_blocks.0.x_block.attn.qkv.weight"), SD3, "MMDiT"},
		{"wan", with(only("blocks.0.cross_attn.k.weight"), set("patch_embedding.weight", 1536, 16, 1, 2, 2)), Wan, "video transformer of width 1536"},
		{"other dit", only("transformer_blocks.0.attn.to_q.weight", "pos_embed.proj.weight"), OtherDiT, "without a UNet's"},
		{"diffusers unet", with(only("down_blocks.0.resnets.0.conv1.weight", "up_blocks.0.resnets.0.conv1.weight", "conv_out.weight"),
			set("conv_in.weight", 320, 4, 3, 3), set("down_blocks.1.attentions.0.transformer_blocks.0.attn2.to_k.weight", 640, 768)), DiffusersNet, "768-wide context"},
		{"lora", only("lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight"), LoRA, "not a whole model"},
		{"peft lora", only("unet.down_blocks.0.attentions.0.proj_in.lora_A.weight"), LoRA, "lora_A"},
		{"controlnet", only("control_model.input_hint_block.0.weight", "control_model.zero_convs.0.0.weight"), ControlNet, "control network"},
		{"taesd decoder", with(only("3.conv.0.weight"), set("1.weight", 64, 4, 3, 3)), TinyVAE, "for 4-channel latents"},
		{"taesd encoder", with(only("1.conv.0.weight"), set("0.weight", 64, 3, 3, 3)), TinyVAE, "encoder"},
		{"unknown", only("a", "b", "c", "d"), Unknown, "4 tensors, none of a known family's names (first: a, b, c)"},
		{"empty", only(), Unknown, "no tensors"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Detect(tc.src)
			if d.Family != tc.family || !strings.Contains(d.Detail+"; "+d.Note, tc.detail) {
				t.Fatalf("Detect = %v, want %s with %q", d, tc.family, tc.detail)
			}
			_, err := RequireSD1(tc.src)
			if (err == nil) != (tc.family == SD1) {
				t.Fatalf("RequireSD1: %v", err)
			}
			if err != nil {
				if !errors.Is(err, ErrFamily) || !strings.Contains(err.Error(), "load: test.safetensors") || !strings.Contains(err.Error(), "glassbox runs SD 1.x") || !strings.Contains(err.Error(), map[bool]string{true: "not a model glassbox recognizes", false: string(tc.family)}[tc.family == Unknown]) {
					t.Errorf("RequireSD1 error %q", err)
				}
			}
		})
	}
}

// diffusersNames renames an LDM VAE (no prefix) to diffusers' names: the
// test's own spelling of the mapping, written from the other direction.
func diffusersNames(t *testing.T, m *Map) *Map {
	t.Helper()
	out := map[string]*Tensor{}
	for n, tt := range m.Tensors {
		d := n
		for _, r := range []struct{ from, to string }{
			{"encoder.down.", "encoder.down_blocks."}, {".block.", ".resnets."}, {".downsample.", ".downsamplers.0."},
			{".upsample.", ".upsamplers.0."}, {".nin_shortcut.", ".conv_shortcut."},
			{".mid.block_1.", ".mid_block.resnets.0."}, {".mid.block_2.", ".mid_block.resnets.1."},
			{".mid.attn_1.norm.", ".mid_block.attentions.0.group_norm."}, {".mid.attn_1.q.", ".mid_block.attentions.0.to_q."},
			{".mid.attn_1.k.", ".mid_block.attentions.0.to_k."}, {".mid.attn_1.v.", ".mid_block.attentions.0.to_v."},
			{".mid.attn_1.proj_out.", ".mid_block.attentions.0.to_out.0."}, {".norm_out.", ".conv_norm_out."},
		} {
			d = strings.Replace(d, r.from, r.to, 1)
		}
		if rest, ok := strings.CutPrefix(d, "decoder.up."); ok {
			i := int(rest[0] - '0')
			d = "decoder.up_blocks." + string(rune('0'+3-i)) + rest[1:]
		}
		nt := *tt
		if strings.Contains(d, "attentions.0.to_") && strings.HasSuffix(d, ".weight") {
			nt.Shape = tt.Shape[:2] // diffusers' linear layers
		}
		nt.Name = d
		out[d] = &nt
	}
	return &Map{Label: m.Label, Tensors: out}
}

// FuzzDetect: any names and shapes are detected (and viewed as a VAE)
// without a panic. Each line of the input is a name, a tab and the
// dimensions separated by spaces.
func FuzzDetect(f *testing.F) {
	f.Add("model.diffusion_model.input_blocks.0.0.weight\t320 4 3 3\nmodel.diffusion_model.x.attn2.to_k.weight\t320 768")
	f.Add("decoder.conv_in.weight\t512 4 3 3\ndecoder.up_blocks.9.resnets.0.conv1.weight\t1")
	f.Add("\t\n1.weight\t64\n3.conv.0.weight\t")
	f.Add("patch_embedding.weight\t1 2\nblocks.0.cross_attn.k\t")
	f.Fuzz(func(t *testing.T, s string) {
		m := map[string]*Tensor{}
		for _, line := range strings.Split(s, "\n") {
			name, dims, _ := strings.Cut(line, "\t")
			var shape []int
			for _, d := range strings.Fields(dims) {
				n := 0
				for _, c := range d {
					n = (n*10 + int(c-'0')) % 100000
				}
				shape = append(shape, max(n, 0))
			}
			m[name] = &Tensor{Name: name, DType: tensor.F16, Shape: shape}
		}
		src := &Map{Label: "fuzz", Tensors: m}
		d := Detect(src)
		if d.Family == "" {
			t.Fatal("no family")
		}
		if v, _, err := VAEView(src); err == nil {
			for _, n := range v.Names() {
				if _, ok := v.Tensor(n); !ok {
					t.Fatalf("VAE view lists %q but has no such tensor", n)
				}
			}
		}
		SD1Components(src, src)
	})
}
