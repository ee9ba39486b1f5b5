package journal

import (
	"context"

	"github.com/glassbox-ai/glassbox/api"
)

// History adapts a Journal to context-taking lookups with paging, the
// shape a server reads ended jobs through. Unknown ids wrap ErrNotFound.
type History struct{ J *Journal }

// Job returns a job's summary (exact id or unique prefix).
func (h History) Job(ctx context.Context, id string) (api.Job, error) {
	if err := ctx.Err(); err != nil {
		return api.Job{}, err
	}
	return h.J.Job(id)
}

// Jobs returns up to limit jobs created before the job with id before
// ("" = the newest), newest first.
func (h History) Jobs(ctx context.Context, before string, limit int) ([]api.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return h.J.JobsBefore(before, limit)
}

// Events returns a job's events with Seq > after, in order.
func (h History) Events(ctx context.Context, id string, after int64) ([]api.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := h.J.Job(id); err != nil {
		return nil, err
	}
	return h.J.Events(id, after+1)
}
