package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/journal"
	"github.com/glassbox-ai/glassbox/metrics"
	"github.com/glassbox-ai/glassbox/server"
)

// History is the journal as the server's History: the journal's "no such
// job" becomes the server's, so an unknown id is a 404.
type History struct{ journal.History }

func (h History) mapErr(err error) error {
	if errors.Is(err, journal.ErrNotFound) {
		return fmt.Errorf("%w: %w", server.ErrJobNotFound, err)
	}
	return err
}

// Job is the journal's record of job id.
func (h History) Job(ctx context.Context, id string) (api.Job, error) {
	j, err := h.History.Job(ctx, id)
	return j, h.mapErr(err)
}

// Events are job id's journaled events after sequence number after.
func (h History) Events(ctx context.Context, id string, after int64) ([]api.Event, error) {
	evs, err := h.History.Events(ctx, id, after)
	return evs, h.mapErr(err)
}

// JournalStats reads the journal writer's counters for /metrics.
func JournalStats(jr *journal.Journal) func() metrics.JournalStats {
	return func() metrics.JournalStats {
		s := jr.Stats()
		return metrics.JournalStats{Events: s.Events, Batches: s.Batches, Errors: s.Errors, Busy: s.Busy}
	}
}
