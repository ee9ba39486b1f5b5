package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/glassbox-ai/glassbox/checkpoint"
)

// isCheckpoint reports whether path is a file in a diffusion checkpoint
// format (.safetensors or a PyTorch zip), told by its first bytes.
func isCheckpoint(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 9)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	return bytes.HasPrefix(head, []byte("PK\x03\x04")) || n == 9 && head[8] == '{'
}

// showCheckpoint is show for a checkpoint (or VAE, text encoder, ...).
func showCheckpoint(env *cmdEnv, path string, asJSON, tensors bool) error {
	f, err := checkpoint.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	in := checkpoint.Summarize(f, tensors)
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	printCheckpoint(env.stdout, in)
	return nil
}

func printCheckpoint(w io.Writer, in *checkpoint.Info) {
	row := func(k, format string, a ...any) { fmt.Fprintf(w, "  %-22s "+format+"\n", append([]any{k}, a...)...) }
	fmt.Fprintf(w, "%s\n", in.Path)
	family := string(in.Family)
	if in.FamilyDetail != "" {
		family += " (" + in.FamilyDetail + ")"
	}
	row("family", "%s", family)
	if in.FamilyNote != "" {
		row("note", "%s", in.FamilyNote)
	}
	switch {
	case in.Runnable:
		row("runs", "yes")
	case in.Family == checkpoint.VAE:
		row("runs", "no: a VAE alone (give it with --vae beside an SD 1.x checkpoint)")
	case in.Family != checkpoint.SD1:
		row("runs", "no: glassbox runs SD 1.x checkpoints")
	default:
		row("runs", "no: %s", in.Problem)
	}
	row("file", "%s (%s, %d tensors)", humanBytes(in.FileBytes), in.Format, in.Tensors)
	row("parameters", "%s (%d)", humanCount(in.Parameters), in.Parameters)
	for _, d := range in.DTypes {
		row("type "+d.Type, "%s (%d tensors, %s parameters)", humanBytes(d.Bytes), d.Tensors, humanCount(d.Parameters))
	}
	part := func(c checkpoint.ComponentInfo) {
		where := c.Prefix
		if where == "" {
			where = "(no prefix)"
		}
		if c.Path != "" {
			where += " in " + c.Path
		}
		if c.Naming != "" && c.Naming != "LDM" {
			where += ", " + c.Naming + " names"
		}
		row(c.Name, "%s parameters, %s %s, %s, %s", humanCount(c.Parameters), humanBytes(c.Bytes), c.DTypes, plural(c.Tensors, "tensor"), where)
	}
	for _, c := range in.Components {
		part(c)
	}
	for _, c := range []*checkpoint.ComponentInfo{in.EMA, in.Other} {
		if c != nil {
			part(*c)
		}
	}
	if len(in.Components) == 0 {
		for _, g := range in.Groups {
			part(g)
		}
	}
	if len(in.Metadata) > 0 {
		row("metadata", "%d keys", len(in.Metadata))
	}
	if len(in.TensorList) > 0 {
		fmt.Fprintf(w, "\n  %-72s %-5s %-20s %12s\n", "tensor", "type", "shape", "bytes")
		for _, t := range in.TensorList {
			fmt.Fprintf(w, "  %-72s %-5s %-20s %12d\n", t.Name, t.Type, fmt.Sprint(t.Shape), t.Bytes)
		}
	}
}

// plural is "1 tensor", "2 tensors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
