package pipeline_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/glassbox-ai/glassbox/pipeline"
)

// An engine reports its stages through the trace in its context and fails
// with a stage-attributed error; the manager turns that into a job's
// numbered events.
func ExampleManager() {
	m := pipeline.NewManager(pipeline.Options{})
	job := m.Submit(context.Background(), pipeline.Params{Kind: "text", Model: "stories260K"},
		func(ctx context.Context) (any, error) {
			tr := pipeline.TraceFrom(ctx)
			tr.OnStageSkipped(pipeline.StageLoad, "model already loaded, 0 ms")
			tr.OnStageStart(pipeline.StageEncode)
			return nil, pipeline.Errorf(pipeline.StageEncode, "try --ctx 8192",
				"prompt has %d tokens but the context holds %d", 5000, 4096).With("tokens", 5000).With("ctx", 4096)
		})
	_, err := job.Wait(context.Background())
	for _, ev := range job.Events(0) {
		fmt.Println(ev.Seq, ev.Type, ev.Stage+ev.State) // a state event has no stage
	}
	fmt.Println(err)
	// Output:
	// 1 state queued
	// 2 state running
	// 3 stage_skipped load
	// 4 stage_start encode
	// 5 error encode
	// 6 state failed
	// encode: prompt has 5000 tokens but the context holds 4096 (try --ctx 8192)
}

func ExampleStageOf() {
	err := fmt.Errorf("run: %w", pipeline.Errorf(pipeline.StagePrefill, "", "out of memory"))
	stage, ok := pipeline.StageOf(err)
	fmt.Println(stage, ok)
	_, ok = pipeline.StageOf(errors.New("no stage"))
	fmt.Println(ok)
	// Output:
	// prefill true
	// false
}
