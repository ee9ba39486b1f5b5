package pipeline

import (
	"context"
	"testing"
)

// TestTraceWarned: a trace remembers the codes of its warnings, a composed
// trace those of either part, and the no-op trace none.
func TestTraceWarned(t *testing.T) {
	var got []string
	a := &Trace{Warning: func(code, _ string) { got = append(got, code) }}
	ctx := WithTrace(context.Background(), a)
	TraceFrom(ctx).OnWarning("x", "first")
	if !TraceFrom(ctx).Warned("x") || TraceFrom(ctx).Warned("y") {
		t.Fatal("plain trace: Warned wrong")
	}
	ctx2 := WithTrace(ctx, &Trace{})
	if !TraceFrom(ctx2).Warned("x") {
		t.Error("composed trace forgot its part's warning")
	}
	TraceFrom(ctx2).OnWarning("y", "second")
	if !TraceFrom(ctx).Warned("y") || len(got) != 2 {
		t.Errorf("warning through the composed trace: inner Warned(y) %v, hook saw %v", TraceFrom(ctx).Warned("y"), got)
	}
	TraceFrom(context.Background()).OnWarning("z", "nobody listens")
	if TraceFrom(context.Background()).Warned("z") {
		t.Error("the no-op trace remembered a warning")
	}
}

// TestOnlyTrace: a context from OnlyTrace calls its own trace's hooks and
// not those of the trace it replaced; WithTrace calls both.
func TestOnlyTrace(t *testing.T) {
	var outer, inner []string
	ctx := WithTrace(context.Background(), &Trace{StageSkipped: func(s Stage, r string) { outer = append(outer, r) }})
	only := OnlyTrace(ctx, &Trace{StageSkipped: func(s Stage, r string) { inner = append(inner, r) }})
	TraceFrom(only).OnStageSkipped(StageLoad, "a")
	TraceFrom(WithTrace(ctx, &Trace{})).OnStageSkipped(StageLoad, "b")
	TraceFrom(OnlyTrace(ctx, nil)).OnStageSkipped(StageLoad, "c")
	if len(inner) != 1 || inner[0] != "a" || len(outer) != 1 || outer[0] != "b" {
		t.Errorf("OnlyTrace's hooks saw %q, the replaced trace's %q; want [a] and [b]", inner, outer)
	}
}
