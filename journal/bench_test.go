package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// sink is the float the fake forward pass writes, so it is not optimised away.
var sink float32

// forward stands in for one decode step: a dot product over n floats, a
// memory-bound loop like a real matmul-vector.
func forward(w []float32) {
	var s float32
	for i, v := range w {
		s += v * float32(i&7)
	}
	sink = s
}

// BenchmarkGenerate measures the journal's overhead on generation: one op
// runs a 256-token generation with a fake decode step twice, without and
// with the journal recording every event, interleaved so both see the same
// machine load. It reports the fastest run of each (the least disturbed by
// other processes) and their ratio as overhead-%, plus the extra CPU time
// the journal's writer spends per token (on another core when one is free).
//
//	go test -run '^$' -bench Generate -benchtime 30x ./journal/
func BenchmarkGenerate(b *testing.B) {
	for _, n := range []int{1 << 16, 1 << 20} { // ~25 µs and ~0.5 ms per token here
		w := make([]float32, n)
		for i := range w {
			w[i] = float32(i%13) / 13
		}
		const tokens = 256
		gen := func(ctx context.Context) (any, error) {
			tr := pipeline.TraceFrom(ctx)
			tr.OnStageStart(pipeline.StagePrefill)
			tr.OnStageDone(pipeline.StagePrefill, pipeline.StageStats{Items: 8, Unit: "tokens"})
			tr.OnStageStart(pipeline.StageGenerate)
			for i := range tokens {
				forward(w)
				tr.OnToken(i, " tok")
			}
			tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{Items: tokens, Unit: "tokens"})
			return nil, nil
		}
		b.Run(fmt.Sprintf("step=%dKi", n>>10), func(b *testing.B) {
			jr, err := Open(filepath.Join(b.TempDir(), FileName), Options{Logger: quiet, Retention: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer jr.Close()
			plain := pipeline.NewManager(pipeline.Options{})
			journaled := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr}})
			run := func(m *pipeline.Manager) (wall, cpu time.Duration) {
				c0 := cpuTime()
				t0 := time.Now()
				if _, err := m.Submit(context.Background(), pipeline.Params{}, gen).Wait(context.Background()); err != nil {
					b.Fatal(err)
				}
				wall = time.Since(t0)
				if err := jr.Flush(); err != nil { // count the writer's work in the CPU time
					b.Fatal(err)
				}
				return wall, cpuTime() - c0
			}
			minPlain, minJournal := time.Duration(1<<62), time.Duration(1<<62)
			var cpuPlain, cpuJournal time.Duration
			for range b.N {
				w0, c0 := run(plain)
				w1, c1 := run(journaled)
				minPlain, minJournal = min(minPlain, w0), min(minJournal, w1)
				cpuPlain += c0
				cpuJournal += c1
			}
			b.ReportMetric(float64(minPlain.Microseconds())/tokens, "µs/token-plain")
			b.ReportMetric(float64(minJournal.Microseconds())/tokens, "µs/token-journal")
			b.ReportMetric(100*(float64(minJournal)/float64(minPlain)-1), "overhead-%")
			b.ReportMetric(float64((cpuJournal-cpuPlain).Microseconds())/float64(b.N*tokens), "cpu-µs/token")
		})
	}
}

// BenchmarkWriteBatch measures the writer alone: one op is one token
// event, written in batches of 256 (as during generation).
func BenchmarkWriteBatch(b *testing.B) {
	jr, err := Open(filepath.Join(b.TempDir(), FileName), Options{Logger: quiet, Retention: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer jr.Close()
	jr.JobUpdated(api.Job{ID: "jbench", Created: time.Now(), State: api.StateRunning})
	jr.Flush()
	now := time.Now().UTC()
	batch := make([]item, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(batch) {
		for k := range batch {
			batch[k] = item{ev: &api.Event{Seq: int64(i + k + 1), Time: now, Job: "jbench", Type: api.TypeToken,
				Stage: "generate", Token: &api.Token{ID: k, Text: " tok"}}}
		}
		if err := jr.write(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenHook measures what one token costs the job's goroutine:
// the Trace hook, the event appended to the job's log and handed to the
// sinks (the journal only queues it). One op is one token.
//
//	go test -run '^$' -bench TokenHook ./journal/
func BenchmarkTokenHook(b *testing.B) {
	for _, withJournal := range []bool{false, true} {
		b.Run(fmt.Sprintf("journal=%v", withJournal), func(b *testing.B) {
			var sinks []pipeline.Sink
			if withJournal {
				jr, err := Open(filepath.Join(b.TempDir(), FileName), Options{Logger: quiet, Retention: -1})
				if err != nil {
					b.Fatal(err)
				}
				defer jr.Close()
				sinks = []pipeline.Sink{jr}
			}
			m := pipeline.NewManager(pipeline.Options{Sinks: sinks})
			b.ReportAllocs()
			job := m.Submit(context.Background(), pipeline.Params{}, func(ctx context.Context) (any, error) {
				tr := pipeline.TraceFrom(ctx)
				tr.OnStageStart(pipeline.StageGenerate)
				b.ResetTimer()
				for i := range b.N {
					tr.OnToken(i, " tok")
				}
				b.StopTimer()
				return nil, nil
			})
			if _, err := job.Wait(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
	}
}
