package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/glassbox-ai/glassbox/pipeline"
)

func TestToError(t *testing.T) {
	tests := []struct {
		name         string
		err          error
		status       int
		stage, code  string
		message, hnt string
	}{
		{"prompt too long in prefill",
			pipeline.Errorf(pipeline.StagePrefill, "try --ctx 300", "prompt has 300 tokens but the context holds 128").With("tokens", 300).With("ctx", 128),
			400, "prefill", "bad_prompt", "prompt has 300 tokens but the context holds 128", "try --ctx 300"},
		{"plan refusal", pipeline.Errorf(pipeline.StagePlan, "try Q4_K_M", "needs 9 GiB, 6 GiB available"),
			507, "plan", "does_not_fit", "needs 9 GiB, 6 GiB available", "try Q4_K_M"},
		{"settings the model cannot take", pipeline.Wrap(pipeline.StagePlan, fmt.Errorf("plan: %w: --kv q8_0 needs head dimensions in multiples of 32 (this model's heads have 8)", pipeline.ErrSettings), ""),
			400, "plan", "bad_settings", "invalid settings: --kv q8_0 needs head dimensions in multiples of 32 (this model's heads have 8)", ""},
		{"unknown model", fmt.Errorf("model %q: %w", "x", ErrModelNotFound), 404, "load", "model_not_found", `model "x": model not found`, ""},
		{"load failure", pipeline.Errorf(pipeline.StageLoad, "", "bad tensor"), 500, "load", "load_failed", "bad tensor", ""},
		{"internal", &pipeline.Error{Stage: pipeline.StageGenerate, Err: fmt.Errorf("%w: panic: boom", pipeline.ErrInternal)},
			500, "generate", "internal", "internal error: panic: boom", ""},
		{"cancelled", pipeline.Wrap(pipeline.StageGenerate, context.Canceled, ""), 499, "generate", "cancelled", "context canceled", ""},
		{"shutting down", ErrShuttingDown, 503, "queued", "shutting_down", "server is shutting down", ""},
		{"plain", errors.New("disk on fire"), 500, "deliver", "internal", "disk on fire", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := toError(tc.err)
			if e.Status != tc.status || e.Stage != tc.stage || e.Code != tc.code || e.Message != tc.message || e.Hint != tc.hnt {
				t.Errorf("got %d %s %s %q %q", e.Status, e.Stage, e.Code, e.Message, e.Hint)
			}
		})
	}
	if s := (&Error{Status: http.StatusServiceUnavailable}).openAI().Error.Type; s != "server_overloaded" {
		t.Errorf("503 type %q", s)
	}
}
