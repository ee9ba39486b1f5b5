package plan

import "fmt"

// Alternative is a change of settings or weight format that would make a
// job fit (or run faster), with its predicted figures.
type Alternative struct {
	Change            string  `json:"change"` // "--ctx 4096", "--kv q8_0", "Q4_K_M"
	Summary           string  `json:"summary"`
	TotalBytes        int64   `json:"total_bytes"`
	DecodeTokensPerS  float64 `json:"decode_tokens_per_s"`
	PrefillTokensPerS float64 `json:"prefill_tokens_per_s"`
	Placement         string  `json:"placement"` // "cpu", "gpu" or "split"
}

func (p *Plan) verdict() {
	p.Fits = p.fits()
	sp, pl := &p.Speed, &p.Placement
	speed := formatTokPerS(sp.DecodeTokensPerS)
	slow := sp.DecodeTokensPerS < slowForChatTokS
	switch {
	case !p.Fits:
		p.Verdict = fmt.Sprintf("does not fit: needs %s, %s available", FormatBytes(p.needed()), FormatBytes(p.available()))
	case pl.Kind == "split":
		p.Verdict = fmt.Sprintf("fits with %d/%d layers on CPU, %s", pl.CPULayers, pl.Layers, speed)
	case pl.Kind == "gpu":
		p.Verdict = fmt.Sprintf("fits in %s memory, %s", p.Device.GPU.Name, speed)
	default:
		p.Verdict = "fits, " + speed
	}
	if p.Fits && slow {
		p.Verdict += " (too slow for chat)"
		p.Warnings = append(p.Warnings, fmt.Sprintf("generation at %s is below reading speed (%.0f tok/s)", speed, slowForChatTokS))
	}
	if p.Fits && pl.RAMBytes > pl.RAMAvailableBytes*9/10 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("uses %s of the %s RAM available: other programs may push it into swap",
			FormatBytes(pl.RAMBytes), FormatBytes(pl.RAMAvailableBytes)))
	}
	if p.Device.GPU != nil {
		p.Notes = append(p.Notes, "glassbox runs on the CPU today: GPU placement and speed describe what this hardware would do with a GPU runtime")
	}
	for _, g := range p.Device.GPUsSeen {
		p.Notes = append(p.Notes, "found "+g+", which glassbox cannot use yet: this plan is for the CPU (plan it with --device)")
	}
	if p.Options.Parallel > 1 {
		p.Notes = append(p.Notes, "glassbox's engine decodes one sequence at a time yet: parallel sequences are planned for the server's batching")
	}
	if p.Options.KV == "q8_0" {
		p.Notes = append(p.Notes, "glassbox's engine keeps the KV cache in f16 or f32: a q8_0 cache is planned for other runtimes")
	}
	if w := p.ctxWarning(); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
}

// Bad reports whether the plan fits but badly: too slow for chat, or too
// close to the memory that is available. Admission lets such jobs run with
// a warning.
func (p *Plan) Bad() bool { return p.Fits && len(p.Warnings) > 0 }

// alternatives proposes what would make a job that does not fit (or runs
// slowly, or is split) fit better: a shorter context, a smaller KV cache
// type, fewer parallel sequences, or a smaller weight format.
func alternatives(p *Plan) []Alternative {
	if p.Fits && p.Placement.Kind != "split" && p.Speed.DecodeTokensPerS >= slowForChatTokS {
		return nil
	}
	var out []Alternative
	try := func(change string, s *Shape, o Options) bool {
		q, err := plan(s, o, p.Device)
		if err != nil || !q.Fits || !q.improves(p) {
			return false
		}
		out = append(out, q.alternative(change, p.Fits))
		return true
	}
	o := p.Options
	if o.Tokens == 0 {
		for c := o.Ctx / 2; c >= 256; c /= 2 {
			c := pow2Floor(c)
			oc := o
			oc.Ctx = c
			if try(fmt.Sprintf("--ctx %d", c), p.Model, oc) {
				break
			}
		}
	}
	if o.KV != "q8_0" {
		ok := o
		ok.KV = "q8_0"
		try("--kv q8_0", p.Model, ok)
	}
	if o.Parallel > 1 {
		op := o
		op.Parallel = 1
		try("--parallel 1", p.Model, op)
	}
	// The best-quality smaller format that helps, and, if that one still
	// splits the model, the best one that puts every layer on the GPU.
	cur := p.Model.WeightBytes()
	found := false
	for _, q := range requantTargets {
		s := p.Model.requant(q)
		if s.WeightBytes() >= cur*95/100 {
			continue
		}
		if !found {
			if found = try(q.name, s, o); found && (p.Device.GPU == nil || out[len(out)-1].Placement == "gpu") {
				break
			}
			continue
		}
		if r, err := plan(s, o, p.Device); err == nil && r.Fits && r.Placement.Kind == "gpu" {
			out = append(out, r.alternative(q.name, p.Fits))
			break
		}
	}
	return out
}

// improves reports whether q is better than p: p does not fit and q does,
// or q is faster by a margin.
func (q *Plan) improves(p *Plan) bool {
	if !p.Fits {
		return q.Fits
	}
	if p.Placement.Kind == "split" && q.Placement.Kind == "gpu" {
		return true // every layer on the GPU
	}
	return q.Speed.DecodeTokensPerS > 1.2*p.Speed.DecodeTokensPerS
}

func (q *Plan) alternative(change string, fitsNow bool) Alternative {
	a := Alternative{Change: change, TotalBytes: q.Memory.TotalBytes, DecodeTokensPerS: q.Speed.DecodeTokensPerS,
		PrefillTokensPerS: q.Speed.PrefillTokensPerS, Placement: q.Placement.Kind}
	speed := formatTokPerS(q.Speed.DecodeTokensPerS)
	where := ""
	switch q.Placement.Kind {
	case "gpu":
		where = " in " + q.Device.GPU.Name + " memory"
	case "split":
		where = fmt.Sprintf(" with %d/%d layers on CPU", q.Placement.CPULayers, q.Placement.Layers)
	}
	switch {
	case change[0] == '-' && fitsNow:
		a.Summary = fmt.Sprintf("%s runs%s at %s", change, where, speed)
	case change[0] == '-':
		a.Summary = fmt.Sprintf("%s fits%s, %s", change, where, speed)
	case fitsNow:
		a.Summary = fmt.Sprintf("%s would run%s at %s", change, where, speed)
	default:
		a.Summary = fmt.Sprintf("%s would fit%s at %s", change, where, speed)
	}
	return a
}

func pow2Floor(n int) int {
	p := 1
	for p*2 <= n {
		p *= 2
	}
	return p
}

// CtxWarningCode is the code of the warning that the context is longer
// than the model was trained for (the engine gives the same one when no
// plan stage ran).
const CtxWarningCode = "ctx_exceeds_training"

// ctxWarning is the warning that --ctx is beyond the model's trained
// context, or "".
func (p *Plan) ctxWarning() string {
	m := p.Model
	if m.CtxTrain <= 0 || p.Options.Ctx <= m.CtxTrain {
		return ""
	}
	return fmt.Sprintf("--ctx %d is beyond the %d tokens the model was trained on; output past %d may degrade",
		p.Options.Ctx, m.CtxTrain, m.CtxTrain)
}
