package pipeline

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// barWidth is the width of a stage bar at 100% of the job's time.
const barWidth = 30

// stageRow is what Explain knows about one stage of a job.
type stageRow struct {
	stage    string
	start    time.Time
	dur      time.Duration
	ended    bool // stage_done seen
	skipped  string
	stats    *api.StageStats
	lastProg *api.Progress
	tokens   int64 // token events seen in the stage
	parts    []partRow
}

// partRow is a finished part of a stage (a component loaded, a step).
type partRow struct {
	name  string
	dur   time.Duration
	stats *api.StageStats
}

// Explain writes a human account of a job: one bar per stage on the job's
// time axis with its numbers, the warnings, and a verdict — where the time
// went and what limited it, or for a failed or cancelled job the stage,
// the cause and the hint. events is the job's log (all of it, in order).
// The wording is documented in docs/JOBS.md (the verdict table).
func Explain(w io.Writer, job api.Job, events []api.Event) error {
	rows, order, warnings := collect(events)
	total := time.Duration(job.DurationMS * float64(time.Millisecond))
	var b strings.Builder
	fmt.Fprintf(&b, "job %s", job.ID)
	if desc := strings.TrimSpace(strings.Join(nonEmpty(job.Kind, job.Model), ", ")); desc != "" {
		fmt.Fprintf(&b, " (%s)", desc)
	}
	fmt.Fprintf(&b, ": %s in %s\n", job.State, fmtDur(total))
	for _, name := range order {
		r := rows[name]
		if r.skipped != "" {
			fmt.Fprintf(&b, "  %-9s %-*s skipped: %s\n", r.stage, barWidth, "", r.skipped)
			continue
		}
		mark := ""
		if !r.ended {
			mark = "  ← " + endWord(job.State)
		}
		fmt.Fprintf(&b, "  %-9s %-*s %8s%s%s\n", r.stage, barWidth, bar(r.dur, total), fmtDur(r.dur), details(r), mark)
		for _, p := range r.parts {
			fmt.Fprintf(&b, "    %-*s %8s%s\n", barWidth+8, p.name, fmtDur(p.dur), partDetails(p))
		}
	}
	for _, wn := range warnings {
		fmt.Fprintf(&b, "  warning: %s\n", wn)
	}
	for _, line := range verdict(job, rows, total) {
		fmt.Fprintf(&b, "%s\n", line)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Explain writes the job's explanation as it stands (see the function Explain).
func (j *Job) Explain(w io.Writer) error { return Explain(w, j.Info(), j.Events(0)) }

func collect(events []api.Event) (map[string]*stageRow, []string, []string) {
	rows := map[string]*stageRow{}
	var order, warnings []string
	get := func(s string, t time.Time) *stageRow {
		r, ok := rows[s]
		if !ok {
			r = &stageRow{stage: s, start: t}
			rows[s] = r
			order = append(order, s)
		}
		return r
	}
	var open *stageRow
	for _, ev := range events {
		switch ev.Type {
		case api.TypeStageStart:
			open = get(ev.Stage, ev.Time)
			open.start = ev.Time
		case api.TypeStageDone:
			r := get(ev.Stage, ev.Time)
			r.dur = time.Duration(ev.DurationMS * float64(time.Millisecond))
			r.ended, r.stats = true, ev.Stats
			if open == r {
				open = nil
			}
		case api.TypeStageSkipped:
			get(ev.Stage, ev.Time).skipped = ev.Reason
		case api.TypePart:
			r := get(ev.Stage, ev.Time)
			r.parts = append(r.parts, partRow{name: ev.Part, dur: time.Duration(ev.DurationMS * float64(time.Millisecond)), stats: ev.Stats})
		case api.TypeProgress:
			if ev.Progress != nil {
				get(ev.Stage, ev.Time).lastProg = ev.Progress
			}
		case api.TypeToken:
			if ev.Stage != "" {
				get(ev.Stage, ev.Time).tokens++
			}
		case api.TypeWarning:
			if ev.Warning != nil {
				warnings = append(warnings, ev.Warning.Code+": "+ev.Warning.Message)
			}
		case api.TypeError, api.TypeState:
			// A stage still open when the job ends lasted until then.
			if open != nil && (ev.Type == api.TypeError || api.Terminal(ev.State)) {
				open.dur = ev.Time.Sub(open.start)
				open = nil
			}
		}
	}
	return rows, order, warnings
}

func endWord(state string) string {
	switch state {
	case api.StateFailed:
		return "failed here"
	case api.StateCancelled:
		return "stopped here"
	}
	return "running"
}

// bar draws d as a share of total in eighth blocks.
func bar(d, total time.Duration) string {
	if total <= 0 || d <= 0 {
		return "▏"
	}
	eighths := int(float64(d) / float64(total) * barWidth * 8)
	eighths = min(max(eighths, 1), barWidth*8)
	partial := []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	return strings.Repeat("█", eighths/8) + partial[eighths%8]
}

// details are a stage's numbers after its duration.
func details(r *stageRow) string {
	var parts []string
	st := r.stats
	if st == nil {
		st = &api.StageStats{}
	}
	if st.Bytes > 0 {
		// Bytes are read while loading and inferring, written when
		// delivering; elsewhere (a plan's estimate) they are just bytes.
		s := fmtBytes(st.Bytes)
		switch Stage(r.stage) {
		case StageLoad, StagePrefill, StageGenerate, StageDecode:
			s += " read"
			if r.dur > 0 {
				s += fmt.Sprintf(" (%s/s)", fmtBytes(int64(float64(st.Bytes)/r.dur.Seconds())))
			}
		case StageDeliver:
			s += " written"
		}
		parts = append(parts, s)
	}
	items, unit := st.Items, st.Unit
	if items == 0 && r.lastProg != nil && r.stage != string(StageQueued) {
		items, unit = r.lastProg.Done, r.lastProg.Unit
		if unit == "bytes" {
			items = 0
		}
	}
	if items == 0 && r.tokens > 0 {
		items, unit = r.tokens, "tokens"
	}
	if items > 0 {
		if unit == "" {
			unit = "items"
		}
		s := fmt.Sprintf("%d %s", items, unit)
		rate := StageStats{Items: items, Unit: unit, EndToken: st.EndToken}.Rate(r.stage, r.dur.Seconds())
		if rate > 0 && (r.stage == string(StagePrefill) || r.stage == string(StageGenerate) || r.stage == string(StageDecode)) {
			s += fmt.Sprintf(", %s %s/s", fmtRate(rate), unit)
		}
		parts = append(parts, s)
		if st.Roofline > 0 && rate > 0 {
			parts = append(parts, fmt.Sprintf("%.0f%% of roofline", 100*rate/st.Roofline))
		}
	}
	if st.PeakRSS > 0 {
		parts = append(parts, "peak "+fmtBytes(st.PeakRSS))
	}
	if st.Placement != "" {
		parts = append(parts, st.Placement)
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, " · ")
}

// partDetails are a part's numbers after its duration.
func partDetails(p partRow) string {
	st := p.stats
	if st == nil {
		return ""
	}
	var out []string
	if st.Bytes > 0 {
		out = append(out, fmtBytes(st.Bytes))
	}
	if st.Items > 0 {
		out = append(out, api.Count(st.Items, st.Unit))
	}
	if st.Note != "" {
		out = append(out, st.Note)
	}
	if len(out) == 0 {
		return ""
	}
	return "  " + strings.Join(out, " · ")
}

// verdict is the closing account: what happened and why.
func verdict(job api.Job, rows map[string]*stageRow, total time.Duration) []string {
	switch job.State {
	case api.StateFailed, api.StateCancelled:
		e := job.Error
		if e == nil {
			return []string{"verdict: " + job.State + " (no error recorded)"}
		}
		at := total // a stage that failed before it started: the job's end
		if r := rows[e.Stage]; r != nil {
			at = r.start.Sub(job.Created) + r.dur
		}
		out := []string{}
		if job.State == api.StateCancelled {
			out = append(out, fmt.Sprintf("verdict: cancelled in %s after %s: %s", e.Stage, fmtDur(at), e.Cause))
		} else {
			out = append(out, fmt.Sprintf("verdict: failed in %s after %s: %s", e.Stage, fmtDur(at), e.Cause))
		}
		if len(e.Numbers) > 0 && job.State == api.StateFailed {
			out = append(out, "  numbers: "+fmtNumbers(e.Numbers))
		}
		if e.Hint != "" {
			out = append(out, "  hint: "+e.Hint)
		}
		if e.Internal {
			out = append(out, "  this is a bug in glassbox: please report it with this job's events (glassbox events "+job.ID+" --json)")
		}
		return out
	case api.StateQueued, api.StateRunning:
		return []string{fmt.Sprintf("verdict: still %s, in %s", job.State, job.Stage)}
	}
	return doneVerdict(rows, total)
}

func doneVerdict(rows map[string]*stageRow, total time.Duration) []string {
	var out []string
	share := func(s Stage) (time.Duration, float64) {
		r := rows[string(s)]
		if r == nil || total <= 0 {
			return 0, 0
		}
		return r.dur, float64(r.dur) / float64(total)
	}
	if d, f := share(StageLoad); f >= 0.5 {
		out = append(out, fmt.Sprintf("verdict: %s of %s was loading the model (reading the file, laying out its weights for the kernels): it was not resident (glassbox serve keeps a model loaded between jobs; each CLI run loads it again).",
			fmtDur(d), fmtDur(total)))
	} else if d, f := share(StageQueued); f >= 0.5 {
		out = append(out, fmt.Sprintf("verdict: %s of %s was waiting in the queue: the server was busy.", fmtDur(d), fmtDur(total)))
	} else if d, f := share(StagePrefill); f >= 0.5 {
		out = append(out, fmt.Sprintf("verdict: %s of %s was reading the prompt (prefill): a shorter prompt, or a cached one, would answer sooner.",
			fmtDur(d), fmtDur(total)))
	}
	for _, s := range []Stage{StageGenerate, StagePrefill} {
		r := rows[string(s)]
		if r == nil || r.stats == nil || r.stats.Rate(string(s), r.dur.Seconds()) <= 0 {
			continue
		}
		st := r.stats
		rate := st.Rate(string(s), r.dur.Seconds())
		unit := st.Unit
		if unit == "" {
			unit = "items"
		}
		name := map[Stage]string{StageGenerate: "generation", StagePrefill: "prefill"}[s]
		line := fmt.Sprintf("%s ran at %s %s/s", name, fmtRate(rate), unit)
		if st.Roofline > 0 {
			pct := 100 * rate / st.Roofline
			line += fmt.Sprintf(", %.0f%% of this machine's roofline (%s %s/s)", pct, fmtRate(st.Roofline), unit)
			if st.Limiter != "" {
				line += fmt.Sprintf(", limited by %s", st.Limiter)
			}
			if pct < 50 {
				line += "; well below the roofline: overhead outside the arithmetic"
			}
		}
		if st.Note != "" {
			line += "; " + st.Note
		}
		prefix := "  "
		if len(out) == 0 {
			prefix = "verdict: "
		}
		out = append(out, prefix+line+".")
		break
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("verdict: done in %s.", fmtDur(total)))
	}
	return out
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), -1
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTP"[i])
}

func fmtRate(r float64) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f", r)
	}
	if r > 0 && r < 0.1 { // diffusion steps on a CPU: 0.022, not 0.0
		return fmt.Sprintf("%.2g", r)
	}
	return fmt.Sprintf("%.1f", r)
}

func fmtNumbers(n map[string]int64) string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, n[k])
	}
	return strings.Join(parts, " ")
}
