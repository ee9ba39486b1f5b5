package plan

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints the plan for people: model, device, memory by
// component, placement, speed with its basis, verdict, warnings and
// alternatives.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	s, m, o, d := p.Model, &p.Memory, p.Options, p.Device
	name := s.Name
	if name == "" {
		name = s.Arch
	}
	fmt.Fprintf(&b, "model      %s (%s, %s, %s params, %s file)\n", name, s.Arch, orDash(s.FileType), formatCount(s.Params), FormatBytes(s.FileBytes))
	fmt.Fprintf(&b, "device     %s\n", deviceLine(d))
	fmt.Fprintf(&b, "settings   ctx %d, batch %d, parallel %d, kv %s", o.Ctx, o.Batch, o.Parallel, o.KV)
	if o.Tokens > 0 {
		fmt.Fprintf(&b, ", %d tokens", o.Tokens)
	}
	if o.Prompt > 0 {
		fmt.Fprintf(&b, " (prompt %d)", o.Prompt)
	}
	b.WriteString("\n\nmemory (peak resident)\n")
	row := func(label string, n int64, note string) {
		fmt.Fprintf(&b, "  %-22s %10s  %s\n", label, FormatBytes(n), note)
	}
	if s.Layers > 0 {
		lo, hi := minMax(m.LayerBytes)
		note := "each " + FormatBytes(lo)
		if lo != hi {
			note = fmt.Sprintf("%s to %s each", FormatBytes(lo), FormatBytes(hi))
		}
		var layers int64
		for _, x := range m.LayerBytes {
			layers += x
		}
		row(fmt.Sprintf("weights: %d layers", s.Layers), layers, note)
	}
	if s.Tied {
		row("output (tied)", 0, "logits read the embedding table")
	} else {
		row("output matrix", m.OutputBytes, "")
	}
	row("norms and other", m.OtherBytes, "")
	embNote := fmt.Sprintf("rows read from the file as used, of a %s table", FormatBytes(m.EmbeddingTable))
	if s.Tied {
		embNote = "whole table (also the output)"
	}
	row("token embedding", m.EmbeddingBytes, embNote)
	if m.LayoutBytes > 0 {
		row("x16 layout", m.LayoutBytes, "the tiles' unpacked scales and padding")
	}
	row("KV cache", m.KVCacheBytes, fmt.Sprintf("%s per token, %s", FormatBytes(m.KVBytesPerTok), o.KV))
	row("compute arena", m.ComputeBytes, fmt.Sprintf("activations for a batch of %d", o.Batch))
	row("runtime overhead", m.OverheadBytes, "Go runtime, parsed header, tokenizer")
	row("GC slack", m.GCSlackBytes, "per-token garbage between collections")
	if m.DraftBytes > 0 {
		row("draft model", m.DraftBytes, "speculative decoding: its weights, KV cache and arena")
	}
	row("total", m.TotalBytes, "")

	pl := &p.Placement
	fmt.Fprintf(&b, "\nplacement  %s\n", pl.Summary)
	fmt.Fprintf(&b, "           RAM %s of %s available", FormatBytes(pl.RAMBytes), FormatBytes(pl.RAMAvailableBytes))
	if d.GPU != nil {
		fmt.Fprintf(&b, "; %s memory %s of %s", d.GPU.Name, FormatBytes(pl.VRAMBytes), FormatBytes(d.GPU.VRAM))
	}
	sp := &p.Speed
	fmt.Fprintf(&b, "\nspeed      prefill %s (%s-bound), generation %s (%s-bound) at position %d\n",
		formatTokPerS(sp.PrefillTokensPerS), shortLimit(sp.PrefillLimit), formatTokPerS(sp.DecodeTokensPerS), shortLimit(sp.DecodeLimit), sp.AtPosition)
	fmt.Fprintf(&b, "           %s per token read, %s per token\n", FormatBytes(sp.DecodeBytesPerToken), FormatRate(sp.DecodeFLOPsPerToken, "FLOP"))
	fmt.Fprintf(&b, "           basis: %s\n", sp.Basis)
	if c := d.Calibration; c != nil {
		fmt.Fprintf(&b, "           error bar: %s\n", c)
	}
	if sp.DecodeCorrectionRuns > 0 {
		fmt.Fprintf(&b, "           generation ±%.0f%% after correction by %d runs of similar models\n", 100*sp.DecodeErrorBar, sp.DecodeCorrectionRuns)
	}
	fmt.Fprintf(&b, "\nverdict    %s\n", p.Verdict)
	for _, x := range p.Warnings {
		fmt.Fprintf(&b, "warning    %s\n", x)
	}
	for _, x := range p.Notes {
		fmt.Fprintf(&b, "note       %s\n", x)
	}
	for i, a := range p.Alternatives {
		label := "instead"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(&b, "%-10s %s\n", label, a.Summary)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func deviceLine(d *Device) string {
	out := d.Name
	if desc, _, ok := ProfileDescription(d.Name); ok {
		out += ": " + desc
	} else if d.CPU != "" {
		out += fmt.Sprintf(": %s, %d cores", d.CPU, d.Cores)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shortLimit(l string) string {
	if l == "memory bandwidth" {
		return "bandwidth"
	}
	return l
}

func minMax(xs []int64) (lo, hi int64) {
	if len(xs) == 0 {
		return 0, 0
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// formatCount prints a parameter count: "8.03 B", "125 M", "293 k".
func formatCount(n int64) string {
	f := float64(n)
	switch {
	case f >= 1e9:
		return fmt.Sprintf("%.3g B", f/1e9)
	case f >= 1e6:
		return fmt.Sprintf("%.3g M", f/1e6)
	case f >= 1e3:
		return fmt.Sprintf("%.3g k", f/1e3)
	}
	return fmt.Sprint(n)
}
