package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/gguf"
)

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"with hint", Errorf(StageEncode, "try --ctx 8192", "prompt has %d tokens but the context holds %d", 5000, 4096),
			"encode: prompt has 5000 tokens but the context holds 4096 (try --ctx 8192)"},
		{"no hint", Errorf(StageLoad, "", "model %q: no such file", "x"), `load: model "x": no such file`},
		{"stage-prefixed cause", &Error{Stage: StageLoad, Err: &gguf.Error{Path: "m.gguf", Offset: 4, Err: gguf.ErrBadMagic}},
			"load: m.gguf: at byte 4: not a GGUF file"},
		{"nil cause", &Error{Stage: StagePlan}, "plan: unknown error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStageOf(t *testing.T) {
	base := errors.New("boom")
	tests := []struct {
		name  string
		err   error
		want  Stage
		found bool
	}{
		{"nil", nil, "", false},
		{"plain", base, "", false},
		{"pipeline error", Errorf(StagePrefill, "", "x"), StagePrefill, true},
		{"wrapped pipeline error", fmt.Errorf("run: %w", Errorf(StageDecode, "", "x")), StageDecode, true},
		{"gguf error", fmt.Errorf("open: %w", &gguf.Error{Offset: -1, Err: gguf.ErrTruncated}), StageLoad, true},
		{"joined", errors.Join(base, Errorf(StageDeliver, "", "y")), StageDeliver, true},
		{"outer wins", &Error{Stage: StagePlan, Err: &gguf.Error{Offset: -1, Err: gguf.ErrTruncated}}, StagePlan, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := StageOf(tt.err)
			if got != tt.want || ok != tt.found {
				t.Errorf("StageOf = %q, %v; want %q, %v", got, ok, tt.want, tt.found)
			}
		})
	}
}

func TestErrorUnwrapAndNumbers(t *testing.T) {
	e := Errorf(StageLoad, "try a Q4_K_M file", "needs %d bytes, %d available: %w", 8, 4, context.Canceled).
		With("requested", 8).With("available", 4)
	if !errors.Is(e, context.Canceled) {
		t.Error("errors.Is does not see the wrapped cause")
	}
	a := APIError(fmt.Errorf("outer: %w", e), StagePlan)
	if a.Stage != "load" || a.Hint != "try a Q4_K_M file" || a.Numbers["requested"] != 8 || a.Numbers["available"] != 4 {
		t.Errorf("APIError = %+v", a)
	}
	if a.Cause != "needs 8 bytes, 4 available: context canceled" {
		t.Errorf("Cause = %q", a.Cause)
	}
	if a.Message != "load: outer: load: needs 8 bytes, 4 available: context canceled (try a Q4_K_M file)" {
		t.Errorf("Message = %q", a.Message)
	}
	p := APIError(errors.New("disk\nfull"), StageDeliver)
	if p.Stage != "deliver" || p.Message != "deliver: disk; full" || p.Cause != "disk; full" {
		t.Errorf("plain APIError = %+v", p)
	}
}

func TestWrap(t *testing.T) {
	if Wrap(StageLoad, nil, "h") != nil {
		t.Fatal("Wrap(nil) != nil")
	}
	g := &gguf.Error{Offset: -1, Err: gguf.ErrTruncated}
	if s, _ := StageOf(Wrap(StageEncode, g, "")); s != StageLoad {
		t.Errorf("Wrap overrode gguf's own stage: %q", s)
	}
	if s, _ := StageOf(Wrap(StageEncode, errors.New("x"), "")); s != StageEncode {
		t.Errorf("Wrap stage = %q", s)
	}
}

func TestTraceNilSafeAndCompose(t *testing.T) {
	ctx := context.Background()
	tr := TraceFrom(ctx)
	if tr == nil {
		t.Fatal("TraceFrom returned nil")
	}
	tr.OnStageStart(StageLoad) // must not panic
	var nilTrace *Trace
	nilTrace.OnToken(1, "x")

	var got []string
	inner := &Trace{StageStart: func(s Stage) { got = append(got, "inner:"+string(s)) }}
	outer := &Trace{StageStart: func(s Stage) { got = append(got, "outer:"+string(s)) },
		Token: func(tok api.Token) { got = append(got, fmt.Sprintf("tok:%d:%s", tok.ID, tok.Text)) }}
	ctx = WithTrace(WithTrace(ctx, outer), inner)
	TraceFrom(ctx).OnStageStart(StageLoad)
	TraceFrom(ctx).OnToken(7, "hi")
	TraceFrom(ctx).OnWarning("c", "m") // neither has it
	want := []string{"inner:load", "outer:load", "tok:7:hi"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}
