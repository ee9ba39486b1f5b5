package server

import (
	"context"
	"strings"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/chat"
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
	IDs            []int // the tokens it comes from (a character split across tokens comes with its last)
}

// followStream is follow for a streamed answer: deltas go to send as they
// come. With tools (GenerateRequest.parsesCalls) a reply's text goes out
// only up to where a call may begin (toolStream); what is left to send once
// the reply is whole — the rest of its content, with the calls cut out by
// the Backend, and the logprobs of what was held — is returned.
func (s *Server) followStream(ctx context.Context, g *generation, req *GenerateRequest, send func(d delta) error) (*Result, delta, error) {
	if !req.parsesCalls() {
		res, err := s.follow(ctx, g, send)
		return res, delta{}, err
	}
	var ts toolStream
	res, err := s.follow(ctx, g, func(d delta) error {
		if out := ts.push(d); out.Text != "" || out.Thinking != "" {
			return send(out)
		}
		return nil
	})
	if err != nil {
		return nil, delta{}, err
	}
	return res, delta{Text: ts.rest(res.Text), Logprobs: ts.lps}, nil
}

// toolStream decides what of a reply with tools can be streamed as it
// comes: its text up to the first tool-call marker (chat.ToolCallMarkers),
// less a tail that may be a marker's start. From a marker on, and for a
// reply that opens with a JSON value (it may be a call), the rest is held
// until the reply is whole and its calls are parsed. Thinking passes.
type toolStream struct {
	sent    strings.Builder // the text sent
	pending string          // text not sent yet
	hold    bool            // everything from pending on waits for the end
	started bool            // the reply's first non-space byte has come
	lps     []api.Logprob   // logprobs not sent yet
}

func (t *toolStream) push(d delta) (out delta) {
	out.Thinking = d.Thinking
	t.lps = append(t.lps, d.Logprobs...)
	text := t.pending + d.Text
	t.pending = text
	if t.hold {
		return out
	}
	if !t.started {
		trimmed := strings.TrimLeft(text, " \t\r\n")
		switch {
		case trimmed == "":
			return out
		case trimmed[0] == '{' || trimmed[0] == '[':
			t.hold = true
			return out
		}
		t.started = true
	}
	cut := len(text)
	for _, m := range chat.ToolCallMarkers {
		if i := strings.Index(text, m); i >= 0 && i < cut {
			cut = i
		}
	}
	if cut < len(text) {
		t.hold = true
	} else {
		cut = len(text) - chat.HeldBack(text, chat.ToolCallMarkers...)
	}
	out.Text, t.pending = text[:cut], text[cut:]
	if out.Text != "" {
		t.sent.WriteString(out.Text)
		out.Logprobs, t.lps = t.lps, nil
	}
	return out
}

// rest is what of content (the reply with its calls cut out, trimmed) the
// client has not been sent.
func (t *toolStream) rest(content string) string {
	sent := t.sent.String()
	if strings.HasPrefix(content, sent) {
		return content[len(sent):]
	}
	if trimmed := strings.TrimSpace(sent); strings.HasPrefix(content, trimmed) {
		return content[len(trimmed):]
	}
	return ""
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
	var ids []int
	for ev := range events {
		if ev.Type != api.TypeToken || ev.Token == nil {
			continue
		}
		if lp := ev.Token.Logprob; lp != nil {
			pending = append(pending, *lp)
		}
		ids = append(ids, ev.Token.ID)
		if ev.Token.Text == "" && ev.Token.Thinking == "" {
			continue
		}
		if err := onToken(delta{Text: ev.Token.Text, Thinking: ev.Token.Thinking, Logprobs: pending, IDs: ids}); err != nil {
			return nil, err
		}
		pending, ids = nil, nil
	}
	select {
	case <-g.done:
		return g.res, g.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
