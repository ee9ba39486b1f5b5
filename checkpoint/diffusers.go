package checkpoint

import (
	"sort"
	"strconv"
	"strings"
)

// diffusersVAE views a VAE in diffusers' names (diffusers
// models/autoencoders/autoencoder_kl.py, Encoder/Decoder in vae.py) in
// LDM's (ldm/modules/diffusionmodules/model.py): down_blocks.i.resnets.j →
// down.i.block.j, conv_shortcut → nin_shortcut, downsamplers.0 →
// downsample, mid_block.resnets.0/1 → mid.block_1/2, mid_block.attentions.0
// (group_norm, to_q|query, to_k|key, to_v|value, to_out.0|proj_attn) →
// mid.attn_1 (norm, q, k, v, proj_out), conv_norm_out → norm_out, and the
// decoder's up_blocks in the reverse order (diffusers counts from the
// latent, LDM from the image). Attention weights, linear [c, c] in
// diffusers, are viewed as LDM's 1×1 convolutions [c, c, 1, 1] (the same
// bytes). Names it does not know keep their name.
func diffusersVAE(src Source) Source {
	ups := 0
	for _, n := range src.Names() {
		if rest, ok := strings.CutPrefix(n, "decoder.up_blocks."); ok {
			i, err := strconv.Atoi(rest[:strings.IndexByte(rest+".", '.')])
			if err == nil && i+1 > ups {
				ups = i + 1
			}
		}
	}
	v := &renamed{src: src, tensors: map[string]*Tensor{}}
	for _, n := range src.Names() {
		t, _ := src.Tensor(n)
		ldm, attn := ldmVAEName(n, ups)
		if _, dup := v.tensors[ldm]; dup {
			continue // two spellings of one tensor (to_q and query): the first, sorted, wins
		}
		nt := *t
		nt.Name = ldm
		if attn && len(t.Shape) == 2 {
			nt.Shape = []int{t.Shape[0], t.Shape[1], 1, 1}
		}
		v.tensors[ldm] = &nt
		v.names = append(v.names, ldm)
	}
	sort.Strings(v.names)
	return v
}

// ldmVAEName translates one diffusers VAE name; attn reports an attention
// projection weight.
func ldmVAEName(n string, ups int) (name string, attn bool) {
	parts := strings.Split(n, ".")
	var out []string
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		next := func() string {
			if i+1 < len(parts) {
				return parts[i+1]
			}
			return ""
		}
		switch {
		case p == "down_blocks":
			out = append(out, "down", next())
			i++
		case p == "up_blocks":
			j, err := strconv.Atoi(next())
			if err != nil {
				return n, false
			}
			out = append(out, "up", strconv.Itoa(ups-1-j))
			i++
		case p == "resnets" && len(out) > 0 && out[len(out)-1] == "mid":
			out = append(out, map[string]string{"0": "block_1", "1": "block_2"}[next()])
			i++
		case p == "resnets":
			out = append(out, "block", next())
			i++
		case p == "downsamplers":
			out = append(out, "downsample")
			i++ // the ".0"
		case p == "upsamplers":
			out = append(out, "upsample")
			i++
		case p == "mid_block":
			out = append(out, "mid")
		case p == "attentions":
			out = append(out, "attn_1")
			i++
		case p == "conv_shortcut":
			out = append(out, "nin_shortcut")
		case p == "conv_norm_out":
			out = append(out, "norm_out")
		case p == "group_norm":
			out = append(out, "norm")
		case p == "to_q" || p == "query":
			out, attn = append(out, "q"), true
		case p == "to_k" || p == "key":
			out, attn = append(out, "k"), true
		case p == "to_v" || p == "value":
			out, attn = append(out, "v"), true
		case p == "to_out" || p == "proj_attn":
			out, attn = append(out, "proj_out"), true
			if p == "to_out" {
				i++ // the ".0"
			}
		default:
			out = append(out, p)
		}
	}
	return strings.Join(out, "."), attn && strings.HasSuffix(n, ".weight")
}

// renamed is a Source whose tensors were renamed (and maybe reshaped).
type renamed struct {
	src     Source
	tensors map[string]*Tensor
	names   []string
}

func (r *renamed) Tensor(name string) (*Tensor, bool) { t, ok := r.tensors[name]; return t, ok }
func (r *renamed) Names() []string                    { return r.names }
func (r *renamed) Path() string                       { return r.src.Path() + " [diffusers names as LDM]" }
