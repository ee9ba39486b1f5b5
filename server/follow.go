package server

import (
	"context"

	"github.com/glassbox-ai/glassbox/api"
)

// follow relays a generation's token texts to onToken, in order, until the
// job ends, and returns the Backend's result. It returns early with
// onToken's error (a client that stopped reading); the caller then cancels
// the context the generation was started with.
func (s *Server) follow(ctx context.Context, g *generation, onToken func(text string) error) (*Result, error) {
	events, err := s.cfg.Jobs.Events(ctx, g.job.ID, 0)
	if err != nil {
		return nil, err
	}
	for ev := range events {
		if ev.Type != api.TypeToken || ev.Token == nil || ev.Token.Text == "" {
			continue
		}
		if err := onToken(ev.Token.Text); err != nil {
			return nil, err
		}
	}
	select {
	case <-g.done:
		return g.res, g.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
