package server

import (
	"context"
	"fmt"
	"sort"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// History reads jobs that have left the manager's memory: the journal.
type History interface {
	// Job returns a job's summary; an unknown id wraps ErrJobNotFound.
	Job(ctx context.Context, id string) (api.Job, error)
	// Jobs returns up to limit jobs created before the job with id before
	// ("" = the newest), newest first.
	Jobs(ctx context.Context, before string, limit int) ([]api.Job, error)
	// Events returns a job's events with Seq > after, in order.
	Events(ctx context.Context, id string, after int64) ([]api.Event, error)
}

// ManagerJobs adapts a pipeline.Manager, and optionally the journal for
// jobs it no longer holds, to Jobs.
type ManagerJobs struct {
	M       *pipeline.Manager
	History History // may be nil: only jobs in memory are known
}

// Start submits work to the manager.
func (mj *ManagerJobs) Start(ctx context.Context, spec JobSpec, work func(ctx context.Context) (any, error)) (api.Job, error) {
	var params any
	if spec.Params != nil {
		params = spec.Params
	}
	j := mj.M.Submit(ctx, pipeline.Params{Kind: spec.Kind, Model: spec.Model, Params: params}, work)
	return j.Info(), nil
}

func (mj *ManagerJobs) Get(ctx context.Context, id string) (api.Job, error) {
	if j := mj.M.Job(id); j != nil {
		return j.Info(), nil
	}
	if mj.History != nil {
		return mj.History.Job(ctx, id)
	}
	return api.Job{}, notFound(id)
}

func notFound(id string) error { return fmt.Errorf("job %q: %w", id, ErrJobNotFound) }

func (mj *ManagerJobs) List(ctx context.Context, before string, limit int) ([]api.Job, error) {
	byID := map[string]api.Job{}
	if mj.History != nil {
		old, err := mj.History.Jobs(ctx, before, limit)
		if err != nil {
			return nil, err
		}
		for _, j := range old {
			byID[j.ID] = j
		}
	}
	for _, j := range mj.M.Jobs() {
		if before == "" || j.ID() < before {
			byID[j.ID()] = j.Info() // the live summary wins
		}
	}
	out := make([]api.Job, 0, len(byID))
	for _, j := range byID {
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID > out[b].ID })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (mj *ManagerJobs) Cancel(ctx context.Context, id string) error {
	if j := mj.M.Job(id); j != nil {
		j.Cancel("cancelled by client")
		return nil
	}
	// An ended job in the journal: nothing to stop.
	_, err := mj.Get(ctx, id)
	return err
}

func (mj *ManagerJobs) Events(ctx context.Context, id string, after int64) (<-chan api.Event, error) {
	if j := mj.M.Job(id); j != nil {
		ch, cancel := j.Subscribe(after + 1)
		context.AfterFunc(ctx, cancel)
		return ch, nil
	}
	if mj.History == nil {
		return nil, notFound(id)
	}
	evs, err := mj.History.Events(ctx, id, after)
	if err != nil {
		return nil, err
	}
	ch := make(chan api.Event, len(evs))
	for _, ev := range evs {
		ch <- ev
	}
	close(ch)
	return ch, nil
}
