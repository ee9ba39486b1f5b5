package engine

import "strings"

// The tags reasoning models (Qwen3, DeepSeek-R1 and its distillations,
// QwQ) put around their thinking.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

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
			keep := partialSuffix(buf, thinkClose)
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

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag.
func partialSuffix(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// promptOpensThink reports whether a rendered prompt leaves a thinking
// block open (its generation prompt ends with <think>, as DeepSeek-R1's
// template writes it).
func promptOpensThink(prompt string) bool {
	return strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), thinkOpen)
}
