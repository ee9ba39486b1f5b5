package plan

import (
	"context"
	"fmt"

	"github.com/glassbox-ai/glassbox/pipeline"
)

// Admit decides whether a planned job may start: it fails in stage "plan",
// before anything is loaded, when the job does not fit the device or needs
// more than budget bytes (0: no budget). The error carries the numbers
// (needed_bytes, available_bytes or budget_bytes) and the best alternative
// as its hint. A job that fits only badly (Bad) is admitted; AdmitJob
// reports its warnings.
//
// Admit holds p to the budget first (ApplyBudget), so that the plan a
// caller prints after it gives the same verdict as the error.
func Admit(p *Plan, budget int64) error {
	p.ApplyBudget(budget)
	need := p.Memory.TotalBytes
	if p.OverBudget {
		return pipeline.Errorf(pipeline.StagePlan, p.hint(), "needs %s, over the memory budget of %s",
			FormatBytes(need), FormatBytes(p.BudgetBytes)).
			With("needed_bytes", need).With("budget_bytes", p.BudgetBytes)
	}
	if !p.Fits {
		return pipeline.Errorf(pipeline.StagePlan, p.hint(), "%s", p.Verdict).
			With("needed_bytes", p.needed()).With("available_bytes", p.available())
	}
	return nil
}

// ApplyBudget holds the plan to a memory budget of budget bytes (0: none):
// a plan that fits the device but needs more than the budget no longer
// fits, and its verdict says so with both numbers. A plan that does not
// fit the device keeps that verdict, the stronger one.
func (p *Plan) ApplyBudget(budget int64) {
	if budget <= 0 || p.OverBudget {
		return
	}
	p.BudgetBytes = budget
	if !p.Fits || p.Memory.TotalBytes <= budget {
		return
	}
	p.Fits, p.OverBudget = false, true
	p.Verdict = fmt.Sprintf("over the memory budget: needs %s, the budget is %s", FormatBytes(p.Memory.TotalBytes), FormatBytes(budget))
}

// hint is the first alternative.
func (p *Plan) hint() string {
	if len(p.Alternatives) == 0 {
		if p.OverBudget {
			return "raise the memory budget to at least " + FormatBytes(p.Memory.TotalBytes)
		}
		if !p.Fits {
			return "no shorter context, KV type or smaller format fits this device; plan for other hardware with --device"
		}
		return ""
	}
	return p.Alternatives[0].Summary
}

// AdmitJob is Admit run as the job's plan stage: it reports the stage's
// start and result, and a warning event for each of the plan's warnings
// through the trace in ctx.
func AdmitJob(ctx context.Context, p *Plan, budget int64) error {
	tr := pipeline.TraceFrom(ctx)
	tr.OnStageStart(pipeline.StagePlan)
	if err := Admit(p, budget); err != nil {
		return err
	}
	cw := p.ctxWarning()
	for _, w := range p.Warnings {
		code := "plan"
		if w == cw {
			code = CtxWarningCode
		}
		tr.OnWarning(code, w)
	}
	tr.OnStageDone(pipeline.StagePlan, pipeline.StageStats{Bytes: p.Memory.TotalBytes,
		Placement: p.Placement.Kind, Note: p.Verdict})
	return nil
}

// Roofline returns the planned best rate for a stage in tokens per second
// and what limits it, for StageStats.Roofline and Limiter (0 and "" for
// stages the planner does not predict).
func (p *Plan) Roofline(s pipeline.Stage) (float64, string) {
	switch s {
	case pipeline.StagePrefill:
		return p.Speed.PrefillTokensPerS, p.Speed.PrefillLimit
	case pipeline.StageGenerate:
		return p.Speed.DecodeTokensPerS, p.Speed.DecodeLimit
	}
	return 0, ""
}

// String is the verdict with the total, for logs.
func (p *Plan) String() string {
	return fmt.Sprintf("%s (%s peak, %s)", p.Verdict, FormatBytes(p.Memory.TotalBytes), p.Placement.Summary)
}
