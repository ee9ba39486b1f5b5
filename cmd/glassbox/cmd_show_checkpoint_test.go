package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/safetensors"
	"github.com/glassbox-ai/glassbox/tensor"
)

// writeSafetensors writes zero-filled tensors of the given shapes.
func writeSafetensors(t *testing.T, path string, shapes map[string][]int) {
	t.Helper()
	var ts []safetensors.WriteTensor
	for name, shape := range shapes {
		n := 2
		for _, d := range shape {
			n *= d
		}
		ts = append(ts, safetensors.WriteTensor{Name: name, DType: tensor.F16, Shape: shape, Fill: func(w io.Writer) error {
			_, err := w.Write(make([]byte, n))
			return err
		}})
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := safetensors.Write(f, ts, nil); err != nil {
		t.Fatal(err)
	}
}

func TestShowCheckpoint(t *testing.T) {
	dir := t.TempDir()
	vae := filepath.Join(dir, "vae.safetensors")
	writeSafetensors(t, vae, map[string][]int{
		"decoder.conv_in.weight": {512, 4, 3, 3}, "decoder.up.0.block.0.conv1.weight": {8}, "encoder.conv_in.weight": {8},
	})
	xl := filepath.Join(dir, "sdxl.safetensors")
	writeSafetensors(t, xl, map[string][]int{
		"model.diffusion_model.input_blocks.0.0.weight":                                    {320, 4, 3, 3},
		"model.diffusion_model.input_blocks.4.1.transformer_blocks.0.attn2.to_k.weight":    {640, 2048},
		"model.diffusion_model.label_emb.0.0.weight":                                       {1280, 2816},
		"conditioner.embedders.0.transformer.text_model.embeddings.token_embedding.weight": {4, 768},
		"first_stage_model.decoder.conv_in.weight":                                         {512, 4, 3, 3},
	})
	tests := []struct {
		name     string
		path     string
		family   checkpoint.Family
		runnable bool
		text     []string // lines of the text output
	}{
		{"sd15-rand", sdtest.SD15(t, "f16"), checkpoint.SD1, true, []string{
			"family                 SD 1.x (model.diffusion_model.input_blocks.0.0.weight [320 4 3 3]: 4 input channels",
			"runs                   yes",
			"file                   2.0 GiB (safetensors, 1130 tensors)",
			"text encoder           123.1M parameters, 234.7 MiB F16, 196 tensors, cond_stage_model.transformer.text_model.",
			"UNet                   859.5M parameters, 1.6 GiB F16, 686 tensors, model.diffusion_model.",
			"VAE                    83.7M parameters, 159.6 MiB F16, 248 tensors, first_stage_model.",
		}},
		{"vae file", vae, checkpoint.VAE, false, []string{
			"family                 VAE (decoder.conv_in.weight [512 4 3 3]: a KL autoencoder with 4 latent channels, LDM names)",
			"runs                   no: a VAE alone (give it with --vae beside an SD 1.x checkpoint)",
			"VAE                    18K parameters, 36.0 KiB F16, 3 tensors, (no prefix)",
		}},
		{"sdxl", xl, checkpoint.SDXL, false, []string{
			"runs                   no: glassbox runs SD 1.x checkpoints",
			"conditioner*           3K parameters, 6.0 KiB F16, 1 tensor, conditioner.",
		}},
		{"taef2", shared.Path(t, "models/taef2/taef2_decoder.pth"), checkpoint.TinyVAE, false, []string{
			"file                   2.6 MiB (pth, 79 tensors)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runCmd(t, "", "show", "-m", tc.path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, l := range tc.text {
				if !strings.Contains(out, "  "+l+"\n") && !strings.Contains(out, "  "+l) {
					t.Errorf("output lacks %q:\n%s", l, out)
				}
			}
			js, errs, code := runCmd(t, "", "show", "--json", "--tensors", tc.path)
			if code != 0 {
				t.Fatalf("--json: exit %d: %s", code, errs)
			}
			var in checkpoint.Info
			if err := json.Unmarshal([]byte(js), &in); err != nil {
				t.Fatal(err)
			}
			if in.Family != tc.family || in.Runnable != tc.runnable || len(in.TensorList) != in.Tensors || (in.Problem == "") != tc.runnable {
				t.Errorf("json: family %q runnable %v, %d of %d tensors listed, problem %q", in.Family, in.Runnable, len(in.TensorList), in.Tensors, in.Problem)
			}
		})
	}
}
