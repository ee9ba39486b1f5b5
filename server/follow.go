package server

import (
	"context"

	"github.com/glassbox-ai/glassbox/api"
)

// follow relays a generation's token texts to onToken, in order, until the
// job ends, and returns the Backend's result. With logprobs asked for,
// each text comes with the logprobs of the tokens that released it (a
// token whose text is held back — part of a character, a possible stop
// string — passes its logprob on to the next text; those of a stop string
// never arrive). It returns early with onToken's error (a client that
// stopped reading); the caller then cancels the context the generation
// was started with.
// delta is what a generation adds to its reply at once: answer text,
// thinking (a reasoning model's, when separated), and the logprobs of the
// tokens that released them.
type delta struct {
	Text, Thinking string
	Logprobs       []api.Logprob
}

// followStream is follow for a streamed answer: deltas go to send as they
// come, or, when the reply must be sent whole (GenerateRequest.wholeReply),
// nothing is sent and the logprobs are kept and returned with the result.
func (s *Server) followStream(ctx context.Context, g *generation, req *GenerateRequest, send func(d delta) error) (*Result, []api.Logprob, error) {
	var held []api.Logprob
	res, err := s.follow(ctx, g, func(d delta) error {
		if req.wholeReply() {
			held = append(held, d.Logprobs...)
			return nil
		}
		return send(d)
	})
	return res, held, err
}

// follow relays a generation's deltas to onToken, in order, until the
// job ends, and returns the Backend's result. With logprobs asked for,
// each delta comes with the logprobs of the tokens that released it (a
// token whose text is held back — part of a character, a possible stop
// string — passes its logprob on to the next delta; those of a stop string
// never arrive). It returns early with onToken's error (a client that
// stopped reading); the caller then cancels the context the generation
// was started with.
func (s *Server) follow(ctx context.Context, g *generation, onToken func(d delta) error) (*Result, error) {
	events, err := s.cfg.Jobs.Events(ctx, g.job.ID, 0)
	if err != nil {
		return nil, err
	}
	var pending []api.Logprob
	for ev := range events {
		if ev.Type != api.TypeToken || ev.Token == nil {
			continue
		}
		if lp := ev.Token.Logprob; lp != nil {
			pending = append(pending, *lp)
		}
		if ev.Token.Text == "" && ev.Token.Thinking == "" {
			continue
		}
		if err := onToken(delta{Text: ev.Token.Text, Thinking: ev.Token.Thinking, Logprobs: pending}); err != nil {
			return nil, err
		}
		pending = nil
	}
	select {
	case <-g.done:
		return g.res, g.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
