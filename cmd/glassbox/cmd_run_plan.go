package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
)

// recordRuns stores every finished run in the calibration history
// (plan.RecordRun). Tests that run glassbox inside their own process turn
// it off: the peak RSS would be the test binary's, not a run's.
var recordRuns = true

// admitRun is the plan stage of glassbox run: the model's header is
// planned for this job's settings on this machine (a full context, the
// worst case, since the prompt is not encoded yet) and admitted against
// the device and --mem-budget before anything is loaded. A job that cannot
// fit fails here with the plan's numbers and best alternative; one that
// fits only badly runs with the plan's warnings. A header the planner
// cannot read (an architecture it does not know) skips the stage with the
// reason, and the load stage gives the verdict on the file.
func admitRun(ctx context.Context, path, draft string, f *runFlags, dev *plan.Device, devErr error, budget int64) (*plan.Plan, error) {
	tr := pipeline.TraceFrom(ctx)
	if dev == nil {
		tr.OnStageSkipped(pipeline.StagePlan, fmt.Sprintf("no device inventory (%v): the job runs unplanned", devErr))
		return nil, nil
	}
	opts := f.planOptions()
	if draft != "" {
		// The draft is held beside the model: its memory counts.
		dhdr, err := gguf.Open(draft)
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StageLoad, fmt.Errorf("the draft model: %w", err), "")
		}
		dp, err := plan.ForModel(dhdr, opts, dev)
		dhdr.Close()
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StagePlan, fmt.Errorf("the draft model: %w", err), "")
		}
		opts.DraftBytes = dp.Memory.ModelBytes()
	}
	hdr, err := gguf.Open(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	defer hdr.Close()
	p, err := plan.ForModel(hdr, opts, dev)
	if errors.Is(err, plan.ErrSettings) {
		return nil, pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	if err != nil {
		tr.OnStageSkipped(pipeline.StagePlan, fmt.Sprintf("the planner cannot read this header (%v): the job runs unplanned", err))
		return nil, nil
	}
	if err := plan.AdmitJob(ctx, p, budget); err != nil {
		return nil, err
	}
	if *f.session.exact {
		tr.OnWarning("plan_exact", "--exact dequantizes the weights to F32: the job needs more memory than planned")
	}
	return p, nil
}

// planOptions are the job's settings as the planner sees them.
func (f *runFlags) planOptions() plan.Options {
	return plan.Options{Ctx: *f.session.ctx, Batch: *f.session.batch, Parallel: 1, KV: f.session.options().KVName(), Threads: *f.session.threads}
}

// generateRoofline is the best generation rate p's device allows a model
// that reads weightBytes per token with threads workers, and what bounds
// it, for the generate stage (engine.Request.Roofline, Limiter). Decoding
// reads every weight once per token, so at best tokens/s = bandwidth ÷
// bytes per token (Williams, Waterman, Patterson, "Roofline", CACM 2009);
// one thread reads at the probe's single-thread bandwidth. When the plan
// finds the step compute-bound, the bound is the device's peak ÷ FLOPs
// per token. Zero when the plan or its figures are missing.
func generateRoofline(p *plan.Plan, weightBytes int64, threads int) (float64, string) {
	if p == nil || p.Device == nil || p.Device.Bandwidth <= 0 || weightBytes <= 0 {
		return 0, ""
	}
	d := p.Device
	how := "measured"
	if d.Estimated {
		how = "estimated"
	}
	bw := d.Bandwidth
	if threads == 1 && !d.Estimated && d.Name == "this machine" && singleThreadBandwidth != nil {
		if one := singleThreadBandwidth(); one > 0 {
			bw, how = min(one, bw), "measured, 1 thread"
		}
	}
	if p.Speed.DecodeLimit == "compute" && p.Speed.DecodeFLOPsPerToken > 0 {
		peak := max(d.PeakInt8, d.PeakF32)
		if peak > 0 {
			return peak / p.Speed.DecodeFLOPsPerToken, fmt.Sprintf("compute (%s peak, %s)", plan.FormatRate(peak, "OP/s"), how)
		}
	}
	return bw / float64(weightBytes), fmt.Sprintf("memory bandwidth (%s, %s)", plan.FormatRate(bw, "B/s"), how)
}

// singleThreadBandwidth is the newest cached probe's one-thread read
// bandwidth on this machine in bytes/s (0: none).
var singleThreadBandwidth = func() float64 {
	if r, ok := newestRoofline(); ok {
		return r.ReadGBs1 * 1e9
	}
	return 0
}

// recordRun stores what a finished run measured beside the plan for its
// actual length (prompt and generated tokens), so calibration compares
// like with like: this process's peak RSS and the prefill and generation
// speeds.
func recordRun(p *plan.Plan, res *engine.Result) error {
	if p == nil || res == nil {
		return nil
	}
	o := p.Options
	o.Tokens = min(res.PromptTokens+len(res.Tokens), o.Ctx)
	o.Prompt = min(res.PromptTokens, o.Tokens)
	actual, err := plan.ForShape(p.Model, o, p.Device)
	if err != nil {
		return err
	}
	return plan.RecordRun(actual, rate(res.PromptTokens, res.PrefillTime), res.DecodeRate(), res.DecodeSteps())
}
