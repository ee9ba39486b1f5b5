package wan

import (
	"errors"
	"fmt"

	"github.com/glassbox-ai/glassbox/checkpoint"
)

// Inspect reads a text-to-video DiT's shape from src's tensor shapes, as New
// does, without binding any weight: the cheap check a server makes when a
// request names the file, before the job is queued.
func Inspect(src checkpoint.Source, numHeads int) (Config, error) {
	sub, _, err := locate(src)
	if err != nil {
		return Config{}, err
	}
	return inferConfig(sub, numHeads)
}

// locate finds the DiT's tensors in src, bare or under one of prefixes
// (returned, with src seen through it), and refuses an image-to-video DiT.
func locate(src checkpoint.Source) (checkpoint.Source, string, error) {
	prefix, found := "", false
	for _, p := range prefixes {
		if _, ok := src.Tensor(p + "patch_embedding.weight"); ok {
			prefix, found = p, true
			break
		}
	}
	if !found {
		return nil, "", &checkpoint.Error{Path: src.Path(), Tensor: "patch_embedding.weight",
			Err: fmt.Errorf("%w, bare or under model.diffusion_model. (is this a Wan DiT?)", checkpoint.ErrMissing)}
	}
	if prefix != "" {
		src = checkpoint.Sub(src, prefix)
	}
	for _, name := range []string{"img_emb.proj.0.weight", "blocks.0.cross_attn.k_img.weight"} {
		if _, ok := src.Tensor(name); ok {
			return nil, "", &checkpoint.Error{Path: src.Path(), Tensor: name,
				Err: errors.New("an image-to-video DiT (CLIP image cross-attention); only text-to-video is supported")}
		}
	}
	return src, prefix, nil
}
