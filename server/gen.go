package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// generation is one generation (or embedding) as its handler sees it:
// the job, and the Backend's result once the work has returned.
type generation struct {
	job   api.Job
	start time.Time     // when the request arrived
	done  chan struct{} // closed when the work has returned
	res   *Result       // a generation's, valid after done
	emb   *EmbedResult  // an embedding's, valid after done
	img   *ImageResult  // an image job's, valid after done
	name  string        // a pull's: the name the model is stored under, valid after done
	err   error         // valid after done
}

// startGeneration admits req through the queue and starts it as a job
// whose context is ctx (also ended by shutdown). It refuses at once, with
// no job created, when the server is closing or the queue is full.
func (s *Server) startGeneration(ctx context.Context, spec JobSpec, req *GenerateRequest) (*generation, *Error) {
	return s.startWork(ctx, spec, &req.KeepAlive, true, func(ctx context.Context, g *generation) (any, error) {
		res, err := s.cfg.Backend.Generate(ctx, req)
		g.res = res
		return res, err
	})
}

// startEmbedding is startGeneration for an embeddings request: the same
// queue, job, journal and stages.
func (s *Server) startEmbedding(ctx context.Context, spec JobSpec, req *EmbedRequest) (*generation, *Error) {
	return s.startWork(ctx, spec, &req.KeepAlive, true, func(ctx context.Context, g *generation) (any, error) {
		res, err := s.cfg.Backend.Embed(ctx, req)
		g.emb = res
		return res, err
	})
}

// startWork admits a request through the queue (unless !queued: work
// that runs no model, such as a download) and starts do as its job
// (keepAlive, when given, gets the server's default when nil); do records
// its result in g and returns it for the job's result event.
func (s *Server) startWork(ctx context.Context, spec JobSpec, keepAlive **time.Duration, queued bool,
	do func(ctx context.Context, g *generation) (any, error)) (*generation, *Error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, toError(ErrShuttingDown)
	}
	s.jobs.Add(1)
	s.mu.Unlock()

	var tk *ticket
	if queued {
		var err error
		if tk, err = s.queue.admit(); err != nil {
			s.jobs.Done()
			return nil, toError(err)
		}
	}
	if keepAlive != nil && *keepAlive == nil && s.cfg.DefaultKeepAlive != 0 {
		ka := s.cfg.DefaultKeepAlive
		*keepAlive = &ka
	}
	g := &generation{start: time.Now(), done: make(chan struct{})}
	// The job ends with ctx (the client, for the compatible APIs) or with
	// the server's base context (shutdown).
	jctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.base, func() { cancel(context.Cause(s.base)) })
	work := func(ctx context.Context) (any, error) {
		defer func() {
			stop()
			cancel(nil)
			close(g.done)
			s.jobs.Done()
		}()
		var res any
		var err error
		if tk != nil {
			res, err = s.run(ctx, tk, func(ctx context.Context) (any, error) { return do(ctx, g) })
		} else {
			res, err = do(ctx, g)
		}
		g.err = err
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	job, err := s.cfg.Jobs.Start(jctx, spec, work)
	if err != nil {
		if tk != nil {
			tk.drop()
		}
		stop()
		cancel(nil)
		s.jobs.Done()
		return nil, toError(err)
	}
	g.job = job
	return g, nil
}

// run waits for a slot, reporting the queue position through the job's
// trace, then does the work.
func (s *Server) run(ctx context.Context, tk *ticket, work func(ctx context.Context) (any, error)) (any, error) {
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
	return work(ctx)
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
