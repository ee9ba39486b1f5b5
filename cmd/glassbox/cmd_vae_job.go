package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/journal"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
)

// imageJobOpts are the flags every vae job shares.
type imageJobOpts struct {
	home      string
	noJournal bool
	json      bool
	verbose   bool
	threads   int
}

// heapLimited are the kinds whose memory is the Go heap (packed weights,
// activations) and whose plan's total becomes the process's soft memory
// limit (plan.LimitHeap); a text model's weights are a mapped file.
var heapLimited = map[string]bool{"image": true, kindImageDecode: true, "video": true, kindVideoDecode: true}

// runImageJob runs fn as a job of the given kind, recorded in the journal
// (unless --no-journal), printing its events as JSON lines (--json) or its
// stage timeline (--verbose) and returning its result. fn receives the
// job's id and the job folder (where inputs worth keeping are saved; ""
// without a journal).
func runImageJob(ctx context.Context, env *cmdEnv, o *imageJobOpts, kind, model string, params any,
	fn func(ctx context.Context, id, dir string) (any, error)) (any, error) {
	var sinks []pipeline.Sink
	dir := o.home
	if dir == "" {
		dir = home.Home()
	}
	if !o.noJournal {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, pipeline.Wrap(pipeline.StagePlan, fmt.Errorf("glassbox home: %w", err), "pass --no-journal to run without one")
		}
		jr, err := journal.Open(filepath.Join(dir, journal.FileName), journal.Options{})
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StagePlan, err, "pass --no-journal to run without the journal")
		}
		defer jr.Close()
		sinks = append(sinks, jr)
	}
	m := pipeline.NewManager(pipeline.Options{Sinks: sinks})
	ids := make(chan string, 1)
	j := m.Submit(ctx, pipeline.Params{Kind: kind, Model: model, Params: params}, func(ctx context.Context) (any, error) {
		id := <-ids
		jobDir := ""
		if !o.noJournal {
			jobDir = filepath.Join(dir, "jobs", id)
		}
		return fn(ctx, id, jobDir)
	})
	ids <- j.ID()
	events, stop := j.Subscribe(0)
	defer stop()
	var enc *json.Encoder
	if o.json {
		enc = json.NewEncoder(env.stdout)
	}
	var timeline []api.Event
	for ev := range events {
		if enc != nil {
			enc.Encode(ev)
		}
		if !o.json && ev.Type == api.TypeWarning && ev.Warning != nil {
			fmt.Fprintf(env.stderr, "glassbox: warning: %s\n", ev.Warning.Message)
		}
		if ev.Type == api.TypeStageDone || ev.Type == api.TypeStageSkipped || ev.Type == api.TypePart {
			timeline = append(timeline, ev)
		}
		if ev.Type == api.TypeStageDone && ev.Stage == string(pipeline.StagePlan) && ev.Stats != nil && heapLimited[kind] {
			// This process runs this one job: its plan bounds the heap.
			plan.LimitHeap(ev.Stats.Bytes)
		}
		if o.verbose && !o.json && ev.Type == api.TypeProgress && ev.Progress != nil {
			fmt.Fprintf(env.stderr, "\r%s: %d/%d %s", ev.Stage, ev.Progress.Done, ev.Progress.Total, ev.Progress.Unit)
			if ev.Progress.Done == ev.Progress.Total {
				fmt.Fprintln(env.stderr)
			}
		}
	}
	res, err := j.Wait(context.WithoutCancel(ctx))
	if o.verbose && !o.json {
		printTimeline(env.stderr, j.ID(), timeline)
	}
	if err != nil && o.json {
		return nil, nil // the error event was printed
	}
	return res, err
}

func printTimeline(w io.Writer, id string, evs []api.Event) {
	fmt.Fprintf(w, "job %s stage timeline:\n", id)
	var parts []api.Event // a stage's parts come before its stage_done
	for _, ev := range evs {
		if ev.Type == api.TypePart {
			parts = append(parts, ev)
			continue
		}
		if ev.Type == api.TypeStageSkipped {
			fmt.Fprintf(w, "  %-8s skipped: %s\n", ev.Stage, ev.Reason)
			continue
		}
		line := fmt.Sprintf("  %-8s %9.1f ms", ev.Stage, ev.DurationMS)
		if st := ev.Stats; st != nil {
			if st.Items > 0 {
				line += "  " + api.Count(st.Items, st.Unit)
			}
			if st.Bytes > 0 {
				line += "  " + formatBytes(st.Bytes)
			}
			if st.PeakRSS > 0 {
				line += "  peak RSS " + formatBytes(st.PeakRSS)
			}
			if st.Placement != "" {
				line += "  [" + st.Placement + "]"
			}
			if st.Note != "" {
				line += "  (" + st.Note + ")"
			}
		}
		fmt.Fprintln(w, line)
		for _, p := range parts {
			if p.Stage != ev.Stage {
				continue
			}
			pl := fmt.Sprintf("    %-22s %9.1f ms", p.Part, p.DurationMS)
			if st := p.Stats; st != nil {
				if st.Bytes > 0 {
					pl += "  " + formatBytes(st.Bytes)
				}
				if st.Note != "" {
					pl += "  (" + st.Note + ")"
				}
			}
			fmt.Fprintln(w, pl)
		}
		parts = parts[:0]
	}
}

// stageTimer reports one stage through the trace and remembers its time.
type stageTimer struct {
	tr    *pipeline.Trace
	times map[string]float64 // stage → ms, for the job record
}

func newStageTimer(ctx context.Context) *stageTimer {
	return &stageTimer{tr: pipeline.TraceFrom(ctx), times: map[string]float64{}}
}

func (s *stageTimer) run(st pipeline.Stage, fn func() (pipeline.StageStats, error)) error {
	s.tr.OnStageStart(st)
	t0 := time.Now()
	stats, err := fn()
	if err != nil {
		return pipeline.Wrap(st, err, "")
	}
	s.times[string(st)] = float64(time.Since(t0).Microseconds()) / 1000
	s.tr.OnStageDone(st, stats)
	return nil
}

// peakRSS returns the process's resident-memory high-water mark (VmHWM
// on Linux), or 0 where it is not known.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

func jsonEncodeCompact(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
