package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-ai/glassbox/modelinfo"
	"github.com/glassbox-ai/glassbox/store"
)

func init() {
	register(&command{name: "show", summary: "print what a model file holds (sizes, quantization, tokenizer, tensors; a diffusion checkpoint's family and components)", run: runShow})
}

// supportedArchitectures lists the architectures the engine can run; the
// model registry sets it. nil means the engine is not built in.
var supportedArchitectures func() []string

func runShow(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "show", "-m MODEL [--json] [--tensors]")
	model := fs.String("m", "", "model file path or store name")
	asJSON := fs.Bool("json", false, "print one JSON object")
	tensors := fs.Bool("tensors", false, "include the tensor table")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *model == "" && len(pos) == 1 {
		*model = pos[0]
	}
	if isCheckpoint(*model) {
		return showCheckpoint(env, *model, *asJSON, *tensors)
	}
	f, err := openModel(*model)
	if err != nil {
		return err
	}
	defer f.Close()
	info := modelinfo.Summarize(f, *tensors)
	if supportedArchitectures != nil {
		archs := supportedArchitectures()
		ok := slices.Contains(archs, info.Architecture)
		info.Supported, info.SupportedArch = &ok, archs
	}
	made := madeProfile(*model)
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*modelinfo.Info
			Made *store.Entry `json:"made,omitempty"` // a store model with a profile: from, system, parameters, license
		}{info, made})
	}
	printInfo(env.stdout, info)
	if made != nil {
		row := func(k, format string, a ...any) {
			fmt.Fprintf(env.stdout, "  %-22s "+format+"\n", append([]any{k}, a...)...)
		}
		if made.From != "" {
			row("made from", "%s", made.From)
		} else if made.Ref != "" {
			row("pulled as", "%s (its registry's parameters and system message)", made.Ref)
		}
		if made.System != "" {
			row("system message", "%q", made.System)
		}
		for _, k := range slices.Sorted(maps.Keys(made.Parameters)) {
			row("parameter", "%s %v", k, made.Parameters[k])
		}
		if made.License != "" {
			row("license", "%d bytes", len(made.License))
		}
	}
	return nil
}

// madeProfile returns the store entry of a -m name that has a profile
// (made by create, or pulled from Ollama's registry), or nil.
func madeProfile(name string) *store.Entry {
	if _, err := os.Stat(name); err == nil || name == "" {
		return nil // a file, not a store name
	}
	s, err := store.Default()
	if err != nil {
		return nil
	}
	e, err := s.Find(name)
	if err != nil || !e.HasProfile() {
		return nil
	}
	return &e
}

func printInfo(w io.Writer, in *modelinfo.Info) {
	row := func(k, format string, a ...any) { fmt.Fprintf(w, "  %-22s "+format+"\n", append([]any{k}, a...)...) }
	fmt.Fprintf(w, "%s\n", in.Path)
	arch := in.Architecture
	if in.Supported != nil && !*in.Supported {
		arch += fmt.Sprintf(" (glassbox cannot run this architecture yet; supported: %s)", strings.Join(in.SupportedArch, ", "))
	}
	row("architecture", "%s", arch)
	if in.Name != "" {
		row("name", "%s", in.Name)
	}
	row("file", "%s (GGUF v%d, %d metadata keys)", humanBytes(in.FileBytes), in.GGUFVersion, in.MetadataKeys)
	row("parameters", "%s (%d)", humanCount(in.Parameters), in.Parameters)
	if in.FileType != "" {
		row("file type", "%s", in.FileType)
	}
	if len(in.Quantization) > 0 {
		var parts []string
		for _, q := range in.Quantization {
			parts = append(parts, fmt.Sprintf("%s %s (%d tensors)", q.Type, humanBytes(q.Bytes), q.Tensors))
		}
		row("quantization", "%s", strings.Join(parts, ", "))
	}
	opt := func(k string, v *int64) {
		if v != nil {
			row(k, "%d", *v)
		}
	}
	opt("context length", in.ContextLength)
	opt("embedding length", in.EmbeddingDim)
	opt("layers", in.BlockCount)
	opt("feed-forward length", in.FeedForwardDim)
	if in.Experts != nil && *in.Experts > 0 {
		used := "?"
		if in.ExpertsUsed != nil {
			used = fmt.Sprint(*in.ExpertsUsed)
		}
		row("experts", "%d, %s per token", *in.Experts, used)
		opt("expert feed-forward", in.ExpertFFDim)
	}
	opt("heads", in.HeadCount)
	opt("kv heads", in.HeadCountKV)
	opt("head dim", in.HeadDim)
	opt("sliding window", in.SlidingWindow)
	if in.NormEps != nil {
		row("norm eps", "%s", strconv.FormatFloat(*in.NormEps, 'g', -1, 32))
	}
	if r := in.RoPE; r != nil {
		s := "base " + strconv.FormatFloat(r.FreqBase, 'f', -1, 32)
		if !r.FreqBaseSet {
			s += " (default, key absent)"
		}
		if r.DimensionCount != nil {
			s += fmt.Sprintf(", %d dims", *r.DimensionCount)
		}
		if r.ScalingType != "" {
			s += ", scaling " + r.ScalingType
		}
		if r.ScalingFactor != nil {
			s += fmt.Sprintf(" ×%g", *r.ScalingFactor)
		}
		if r.FreqFactors {
			s += ", frequency factors (rope_freqs.weight)"
		}
		row("rope", "%s", s)
	}
	if t := in.Tokenizer; t != nil {
		s := fmt.Sprintf("%s, %d tokens", t.Model, t.VocabSize)
		if t.Pre != "" {
			s += ", pre-tokenizer " + t.Pre
		}
		if t.Merges > 0 {
			s += fmt.Sprintf(", %d merges", t.Merges)
		}
		if t.BOS != nil {
			s += fmt.Sprintf(", bos %d", *t.BOS)
		}
		if t.EOS != nil {
			s += fmt.Sprintf(", eos %d", *t.EOS)
		}
		row("tokenizer", "%s", s)
		row("chat template", "%s", map[bool]string{true: "present", false: "absent"}[t.ChatTemplate])
	} else {
		row("tokenizer", "none")
	}
	if len(in.Tensors) > 0 {
		fmt.Fprintf(w, "\n  %-40s %-8s %-20s %12s %12s\n", "tensor", "type", "shape", "bytes", "offset")
		for _, t := range in.Tensors {
			fmt.Fprintf(w, "  %-40s %-8s %-20s %12d %12d\n", t.Name, t.Type, fmt.Sprint(t.Shape), t.Bytes, t.Offset)
		}
	}
}

// humanBytes formats n with binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// humanCount formats a parameter count as Ollama reports parameter_size
// (293K, 134.1M, 1.1B).
func humanCount(n int64) string { return modelinfo.HumanCount(n) }
