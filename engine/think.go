package engine

import (
	"math"
	"strings"

	"github.com/glassbox-ai/glassbox/chat"
)

// The tags reasoning models (Qwen3, DeepSeek-R1 and its distillations,
// QwQ) put around their thinking.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// replySplitter separates a reply's thinking from its answer as its text
// is released: push takes the next text, flush ends the reply.
type replySplitter interface {
	push(s string) (think, answer string)
	flush() (think, answer string)
}

// thinkSplitter separates a reply's thinking from its answer as the text
// is released: a reply that starts with <think> (after whitespace), or
// whose prompt left the block open, thinks until </think>; the rest is the
// answer, its leading whitespace dropped. A tag split across tokens is
// held back until it is whole. Only a block at the start counts: a
// <think> later in an answer is text.
type thinkSplitter struct {
	state   uint8 // thinkStart, thinkIn, thinkAnswer
	held    string
	trimmed bool // the answer's leading whitespace is behind us
	fresh   bool // the block just opened: a newline here is the tag's
}

const (
	thinkStart  uint8 = iota // nothing but whitespace seen: a block may open
	thinkIn                  // inside the block
	thinkAnswer              // after it (or there was none)
)

func newThinkSplitter(open bool) *thinkSplitter {
	if open {
		return &thinkSplitter{state: thinkIn, fresh: true}
	}
	return &thinkSplitter{}
}

// push takes the next released text and returns what of it (with what was
// held) is thinking and what is answer.
func (t *thinkSplitter) push(s string) (think, answer string) {
	buf := t.held + s
	t.held = ""
	for buf != "" {
		switch t.state {
		case thinkStart:
			rest := strings.TrimLeft(buf, " \t\r\n")
			switch {
			case strings.HasPrefix(rest, thinkOpen):
				t.state, t.fresh = thinkIn, true
				buf = rest[len(thinkOpen):]
			case strings.HasPrefix(thinkOpen, rest):
				t.held = buf // "", "<", "<th", …: wait for more
				return think, answer
			default:
				t.state = thinkAnswer
			}
		case thinkIn:
			if t.fresh {
				buf, t.fresh = strings.TrimPrefix(buf, "\n"), false
				continue
			}
			if i := strings.Index(buf, thinkClose); i >= 0 {
				think += buf[:i]
				buf = buf[i+len(thinkClose):]
				t.state = thinkAnswer
				continue
			}
			keep := chat.HeldBack(buf, thinkClose)
			think += buf[:len(buf)-keep]
			t.held = buf[len(buf)-keep:]
			return think, answer
		case thinkAnswer:
			if !t.trimmed {
				buf = strings.TrimLeft(buf, " \t\r\n")
				if buf == "" {
					return think, answer
				}
				t.trimmed = true
			}
			answer += buf
			buf = ""
		}
	}
	return think, answer
}

// flush returns what is held at the end of the reply: an unfinished tag is
// text of the part it was in.
func (t *thinkSplitter) flush() (think, answer string) {
	h := t.held
	t.held = ""
	if t.state == thinkIn {
		return h, ""
	}
	if t.state == thinkStart {
		h = strings.TrimLeft(h, " \t\r\n")
	}
	return "", h
}

// promptOpensThink reports whether a rendered prompt leaves a thinking
// block open (its generation prompt ends with <think>, as DeepSeek-R1's
// template writes it).
func promptOpensThink(prompt string) bool {
	return strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), thinkOpen)
}

// thinkFirst lets a reasoning model think before its constrained answer,
// as Ollama constrains such a model's answer only: at the start of the
// reply the vocabulary's <think> token may come beside what the answer's
// constraint allows; inside the block (opened by that token or by the
// prompt) every token may; from the token that completes </think> on, the
// answer's constraint applies. Without the block the constraint applies
// from the first token, as it does alone.
type thinkFirst struct {
	inner Constraint
	open  int              // the <think> token, −1 if the vocabulary has none
	piece func(int) string // a token's text
	state uint8            // thinkStart, thinkIn, thinkAnswer
	tail  string           // the block's last bytes, for a </think> split over tokens
}

func newThinkFirst(inner Constraint, open int, piece func(int) string, opened bool) *thinkFirst {
	c := &thinkFirst{inner: inner, open: open, piece: piece}
	if opened {
		c.state = thinkIn
	}
	return c
}

func (c *thinkFirst) Mask(logits []float32) bool {
	switch {
	case c.state == thinkIn:
		return true
	case c.state == thinkStart && c.open >= 0 && c.open < len(logits):
		keep := logits[c.open]
		ok := c.inner.Mask(logits)
		logits[c.open] = keep
		return ok || keep > float32(math.Inf(-1))
	}
	return c.inner.Mask(logits)
}

func (c *thinkFirst) Accept(id int) {
	switch c.state {
	case thinkStart:
		if id == c.open {
			c.state = thinkIn
			return
		}
		c.state = thinkAnswer
	case thinkIn:
		c.tail += c.piece(id)
		if strings.Contains(c.tail, thinkClose) {
			c.state, c.tail = thinkAnswer, ""
		} else if n := len(thinkClose) - 1; len(c.tail) > n {
			c.tail = c.tail[len(c.tail)-n:]
		}
		return
	}
	c.inner.Accept(id)
}

// thinkToken returns the id of a vocabulary's one <think> token, or −1.
func thinkToken(encode func(string) ([]int, error), piece func(int) string) int {
	ids, err := encode(thinkOpen)
	if err != nil || len(ids) != 1 || piece(ids[0]) != thinkOpen {
		return -1
	}
	return ids[0]
}
