package checkpoint

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/glassbox-ai/glassbox/tensor"
)

// Info is what `glassbox show` reports about a checkpoint, from its
// directory alone (no weight is read). Its JSON field names are stable
// (documented in the README under `glassbox show`).
type Info struct {
	Path        string            `json:"path"`
	FileBytes   int64             `json:"file_bytes"`
	Format      string            `json:"format"` // "safetensors" or "pth"
	Tensors     int               `json:"tensors"`
	Parameters  int64             `json:"parameters"`
	TensorBytes int64             `json:"tensor_bytes"`
	DTypes      []DTypeShare      `json:"dtypes"`
	Metadata    map[string]string `json:"metadata,omitempty"` // safetensors __metadata__

	Family         Family `json:"family"`
	FamilyDetail   string `json:"family_detail,omitempty"`
	FamilyNote     string `json:"family_note,omitempty"`
	InChannels     int    `json:"in_channels,omitempty"`
	LatentChannels int    `json:"latent_channels,omitempty"`
	ContextDim     int    `json:"context_dim,omitempty"`
	// Runnable is true for an SD 1.x checkpoint with its three networks;
	// Problem says why not (the load-stage error glassbox image would give).
	Runnable bool   `json:"runnable"`
	Problem  string `json:"problem,omitempty"`

	// Components are the networks found: an SD 1.x checkpoint's three, a
	// VAE file's VAE. Groups, for other files, count the tensors by their
	// first name component.
	Components []ComponentInfo `json:"components,omitempty"`
	Groups     []ComponentInfo `json:"groups,omitempty"`
	// EMA (model_ema.*, ignored) and Other (outside the components,
	// unused) of an SD 1.x checkpoint.
	EMA   *ComponentInfo `json:"ema,omitempty"`
	Other *ComponentInfo `json:"other,omitempty"`

	TensorList []TensorInfo `json:"tensor_list,omitempty"`
}

// DTypeShare is the part of a file in one element type.
type DTypeShare struct {
	Type       string `json:"type"`
	Tensors    int    `json:"tensors"`
	Parameters int64  `json:"parameters"`
	Bytes      int64  `json:"bytes"`
}

// ComponentInfo is a Component's counts.
type ComponentInfo struct {
	Name       string `json:"name"`
	Prefix     string `json:"prefix,omitempty"`
	Path       string `json:"path,omitempty"` // when not the checkpoint itself
	Naming     string `json:"naming,omitempty"`
	Tensors    int    `json:"tensors"`
	Parameters int64  `json:"parameters"`
	Bytes      int64  `json:"bytes"`
	DTypes     string `json:"dtypes"` // "F16", "F16+F32", most elements first
}

// TensorInfo is one tensor of the listing.
type TensorInfo struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Shape []int  `json:"shape"`
	Bytes int64  `json:"bytes"`
}

func componentInfo(name, prefix string, s Stats) ComponentInfo {
	return ComponentInfo{Name: name, Prefix: prefix, Tensors: s.Tensors, Parameters: s.Params, Bytes: s.Bytes, DTypes: s.DTypeList()}
}

// Summarize describes f (with every tensor when withTensors).
func Summarize(f *File, withTensors bool) *Info {
	in := &Info{Path: f.Path(), Format: f.Format, Metadata: f.Meta}
	if st, err := os.Stat(f.Path()); err == nil {
		in.FileBytes = st.Size()
	}
	all := StatsOf(f)
	in.Tensors, in.Parameters, in.TensorBytes = all.Tensors, all.Params, all.Bytes
	perType := map[string]*DTypeShare{}
	for _, n := range f.Names() {
		t, _ := f.Tensor(n)
		var s Stats
		s.add(t)
		d := perType[t.DType.String()]
		if d == nil {
			d = &DTypeShare{Type: t.DType.String()}
			perType[d.Type] = d
		}
		d.Tensors++
		d.Parameters += s.Params
		d.Bytes += s.Bytes
		if withTensors {
			in.TensorList = append(in.TensorList, TensorInfo{Name: n, Type: t.DType.String(), Shape: t.Shape, Bytes: s.Bytes})
		}
	}
	for _, d := range perType {
		in.DTypes = append(in.DTypes, *d)
	}
	sort.Slice(in.DTypes, func(i, j int) bool { return in.DTypes[i].Bytes > in.DTypes[j].Bytes })

	d := Detect(f)
	in.Family, in.FamilyDetail, in.FamilyNote = d.Family, d.Detail, d.Note
	in.InChannels, in.LatentChannels, in.ContextDim = d.InChannels, d.LatentChannels, d.ContextDim
	switch c, err := SD1Components(f, nil); {
	case err == nil:
		in.Runnable = true
		for _, comp := range []Component{c.TextEncoder, c.UNet, c.VAE} {
			ci := componentInfo(comp.Name, comp.Prefix, comp.Stats)
			ci.Naming = comp.Naming
			in.Components = append(in.Components, ci)
		}
		if c.EMA.Tensors > 0 {
			e := componentInfo("EMA weights (ignored)", PrefixEMA, c.EMA)
			in.EMA = &e
		}
		if c.Other.Tensors > 0 {
			o := componentInfo("other (unused)", "", c.Other)
			in.Other = &o
		}
		return in
	default:
		in.Problem = err.Error()
	}
	if d.Family == VAE {
		if v, naming, err := VAEView(f); err == nil {
			ci := componentInfo("VAE", vaePrefix(f), StatsOf(v))
			ci.Naming = naming
			in.Components = append(in.Components, ci)
			in.Problem += "; as a VAE it goes with --vae"
		}
	}
	in.Groups = groups(f)
	return in
}

func vaePrefix(src Source) string {
	if newIndex(src).hasPrefix(PrefixVAE) {
		return PrefixVAE
	}
	return ""
}

// maxGroups is how many groups Summarize lists before folding the rest.
const maxGroups = 12

// groups counts the tensors by their first name component.
func groups(src Source) []ComponentInfo {
	by := map[string]*Stats{}
	var order []string
	for _, n := range src.Names() {
		g, _, found := strings.Cut(n, ".")
		if found {
			g += "."
		}
		if by[g] == nil {
			by[g] = &Stats{}
			order = append(order, g)
		}
		t, _ := src.Tensor(n)
		by[g].add(t)
	}
	var out []ComponentInfo
	var rest Stats
	for i, g := range order {
		if i >= maxGroups-1 && len(order) > maxGroups {
			s := by[g]
			rest.Tensors, rest.Params, rest.Bytes = rest.Tensors+s.Tensors, rest.Params+s.Params, rest.Bytes+s.Bytes
			for dt, n := range s.DTypes {
				if rest.DTypes == nil {
					rest.DTypes = map[tensor.DType]int64{}
				}
				rest.DTypes[dt] += n
			}
			continue
		}
		out = append(out, componentInfo(strings.TrimSuffix(g, ".")+"*", g, *by[g]))
	}
	if rest.Tensors > 0 {
		out = append(out, componentInfo(fmt.Sprintf("%d more groups", len(order)-maxGroups+1), "", rest))
	}
	return out
}
