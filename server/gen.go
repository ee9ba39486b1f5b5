package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// generation is one generation as its handler sees it: the job, and the
// Backend's result once the work has returned.
type generation struct {
	job   api.Job
	start time.Time     // when the request arrived
	done  chan struct{} // closed when the work has returned
	res   *Result       // valid after done
	err   error         // valid after done
}

// startGeneration admits req through the queue and starts it as a job
// whose context is ctx (also ended by shutdown). It refuses at once, with
// no job created, when the server is closing or the queue is full.
func (s *Server) startGeneration(ctx context.Context, spec JobSpec, req *GenerateRequest) (*generation, *Error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, toError(ErrShuttingDown)
	}
	s.jobs.Add(1)
	s.mu.Unlock()

	tk, err := s.queue.admit()
	if err != nil {
		s.jobs.Done()
		return nil, toError(err)
	}
	if req.KeepAlive == nil && s.cfg.DefaultKeepAlive != 0 {
		ka := s.cfg.DefaultKeepAlive
		req.KeepAlive = &ka
	}
	g := &generation{start: time.Now(), done: make(chan struct{})}
	// The job ends with ctx (the client, for the compatible APIs) or with
	// the server's base context (shutdown).
	jctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.base, cancel)
	work := func(ctx context.Context) (any, error) {
		defer func() {
			stop()
			cancel()
			close(g.done)
			s.jobs.Done()
		}()
		res, err := s.run(ctx, tk, req)
		g.res, g.err = res, err
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	job, err := s.cfg.Jobs.Start(jctx, spec, work)
	if err != nil {
		tk.drop()
		stop()
		cancel()
		s.jobs.Done()
		return nil, toError(err)
	}
	g.job = job
	return g, nil
}

// run waits for a slot, reporting the queue position through the job's
// trace, then generates.
func (s *Server) run(ctx context.Context, tk *ticket, req *GenerateRequest) (*Result, error) {
	tr := pipeline.TraceFrom(ctx)
	queued := tk.wt != nil
	if queued {
		tr.OnStageStart(pipeline.StageQueued)
	}
	release, err := tk.wait(ctx, func(pos, waiting int) {
		// The trace counts from 0 (0 = next).
		tr.OnProgress(pipeline.StageQueued, int64(pos-1), int64(waiting))
	})
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageQueued, err, "")
	}
	defer release()
	if queued {
		tr.OnStageDone(pipeline.StageQueued, pipeline.StageStats{})
	}
	return s.cfg.Backend.Generate(ctx, req)
}

// requestContext is the context of a compatible-API generation: it ends
// when the client disconnects or the handler returns.
func (s *Server) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithCancel(r.Context())
}

// jobSpec describes req for the job manager and the journal.
func jobSpec(kind string, req *GenerateRequest) JobSpec {
	params, _ := json.Marshal(req) // plain data: cannot fail
	return JobSpec{Kind: kind, Model: req.Model, Params: params}
}
