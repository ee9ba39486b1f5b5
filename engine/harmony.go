package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/glassbox-ai/glassbox/chat"
)

// OpenAI's harmony response format, which gpt-oss models write
// (https://cookbook.openai.com/articles/openai-harmony): a reply is a
// sequence of messages, each a header and a body. The prompt ends with
// "<|start|>assistant", so the first header has no role:
//
//	<|channel|>analysis<|message|>THINKING<|end|>
//	<|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//
// A tool call names its recipient in the header, after the channel or in
// the role part before it, and its body is the arguments:
//
//	<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
//	<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>
//
// <|return|> and <|call|> end generation (the tokenizer makes them
// end-of-generation tokens, and <|end|> not), so they seldom reach the
// text; the other tags are released as text for the splitter to read.
const (
	harmonyStart     = "<|start|>"
	harmonyChannel   = "<|channel|>"
	harmonyMessage   = "<|message|>"
	harmonyConstrain = "<|constrain|>"
	harmonyEnd       = "<|end|>"
	harmonyReturn    = "<|return|>"
	harmonyCall      = "<|call|>"
)

// harmonyTags are the tags a body may meet: the first three end it; the
// next two end it too (a model that forgot <|end|>) but begin the next
// header; the last two have no place in a body and are dropped.
var harmonyTags = []string{harmonyEnd, harmonyReturn, harmonyCall, harmonyStart, harmonyChannel, harmonyMessage, harmonyConstrain}

// harmonyMaxHeader bounds a header's text: role, channel, recipient and
// content type. Text that has no <|message|> within it is not a header
// but a reply outside the format, which is answer.
const harmonyMaxHeader = 256

// Parts a message's body goes to.
const (
	partAnswer uint8 = iota // final, commentary without a recipient (a preamble), no channel
	partThink               // analysis
	partCall                // to=functions.NAME: the arguments of a call
	partDrop                // to a recipient that is not ours (built-in browser, python), or from another role
)

// harmonySplitter separates a harmony reply into thinking, answer and
// tool calls as its text is released: the analysis channel is thinking;
// the final channel, and commentary without a recipient (a preamble to
// calls), answer; a message to functions.NAME (on any channel) a call,
// whose arguments are held until the message ends. Messages to other
// recipients, and messages of roles other than the assistant's, are
// dropped. A body that meets <|start|> or <|channel|> before its <|end|>
// ends there (the model forgot the <|end|>). A tag split across tokens is
// held back until it is whole, so every way of cutting a reply gives the
// same parts; the tags never reach them. Consecutive messages of one part
// are joined by a newline.
type harmonySplitter struct {
	body    bool   // in a message's body (else before or in a header)
	part    uint8  // the body's part
	channel string // the body's channel
	held    string // header text so far, or body text that may begin a tag
	name    string // the function the body calls (partCall)
	args    strings.Builder
	calls   []harmonyToolCall
	hide    bool    // thinking is dropped (think false: gpt-oss cannot stop thinking)
	wrote   [2]bool // text of answer, thinking has been released
	fresh   bool    // the body has released nothing yet
}

// harmonyToolCall is a call as the reply wrote it.
type harmonyToolCall struct {
	name, args string
}

// newHarmonySplitter returns a splitter for a reply whose prompt ended
// with a message open: its header (the prompt's text from its last
// <|start|> to its <|message|>; "" when the prompt ends before a header,
// as the generation prompt "<|start|>assistant" does). hide drops the
// thinking.
func newHarmonySplitter(open string, hide bool) *harmonySplitter {
	h := &harmonySplitter{hide: hide}
	if open != "" {
		h.open(open)
	}
	return h
}

// harmonyOpenHeader is the header of the message a rendered prompt
// leaves open (a continued assistant message), or "".
func harmonyOpenHeader(prompt string) string {
	i := strings.LastIndex(prompt, harmonyStart)
	if i < 0 {
		return ""
	}
	tail := prompt[i:]
	j := strings.Index(tail, harmonyMessage)
	if j < 0 {
		return ""
	}
	for _, end := range harmonyTags[:3] {
		if strings.Contains(tail[j:], end) {
			return ""
		}
	}
	return tail[:j]
}

// push takes the next released text and returns what of it (with what was
// held) is thinking and what is answer.
func (h *harmonySplitter) push(s string) (think, answer string) {
	buf := h.held + s
	h.held = ""
	for buf != "" {
		if !h.body {
			rest := strings.TrimLeft(buf, " \t\r\n")
			i := strings.Index(rest, harmonyMessage)
			switch {
			case i >= 0 && i <= harmonyMaxHeader:
				h.open(rest[:i])
				buf = rest[i+len(harmonyMessage):]
			case len(rest) >= harmonyMaxHeader+len(harmonyMessage):
				// Not a header: a reply outside the format.
				h.body, h.part, h.channel, h.fresh = true, partAnswer, "", true
				buf = rest
			default:
				h.held = rest // a header not yet whole
				return think, answer
			}
			continue
		}
		i, tag := harmonyTag(buf)
		if i < 0 {
			keep := chat.HeldBack(buf, harmonyTags...)
			h.emit(buf[:len(buf)-keep], &think, &answer)
			h.held = buf[len(buf)-keep:]
			return think, answer
		}
		h.emit(buf[:i], &think, &answer)
		buf = buf[i:]
		switch tag {
		case harmonyMessage, harmonyConstrain:
			buf = buf[len(tag):]
			continue
		case harmonyEnd, harmonyReturn, harmonyCall:
			buf = buf[len(tag):]
		}
		h.close()
	}
	return think, answer
}

// flush returns what is held at the end of the reply and ends its last
// message: an unfinished tag in a body is text of its part; an unfinished
// header (the reply was cut) is dropped, unless it has no tag at all (a
// short reply outside the format: answer).
func (h *harmonySplitter) flush() (think, answer string) {
	held := h.held
	h.held = ""
	if !h.body {
		if held == "" || strings.Contains(held, "<|") {
			return "", ""
		}
		h.body, h.part, h.channel, h.fresh = true, partAnswer, "", true
	}
	h.emit(held, &think, &answer)
	h.close()
	return think, answer
}

// harmonyTag finds the first tag in s: its index and the tag, or −1.
func harmonyTag(s string) (int, string) {
	at, tag := -1, ""
	for _, t := range harmonyTags {
		if i := strings.Index(s, t); i >= 0 && (at < 0 || i < at) {
			at, tag = i, t
		}
	}
	return at, tag
}

// open starts the body of the message whose header is hdr: its role (if
// it names one), channel and recipient decide the part.
func (h *harmonySplitter) open(hdr string) {
	role, channel, recipient := parseHarmonyHeader(hdr)
	h.body, h.channel, h.fresh, h.name = true, channel, true, ""
	switch {
	case role != "" && role != "assistant":
		h.part = partDrop
	case strings.HasPrefix(recipient, "functions."):
		h.part, h.name = partCall, strings.TrimPrefix(recipient, "functions.")
		h.args.Reset()
	case recipient != "":
		h.part = partDrop
	case channel == "analysis":
		h.part = partThink
	default:
		h.part = partAnswer
	}
}

// parseHarmonyHeader reads a header: the role after <|start|> (none when
// the header does not start a message, as the reply's first does not),
// the channel (the last one: gpt-oss sometimes writes a stray
// "<|channel|>commentary" before the real one), and the recipient (to=…
// before or after the channel; "to=assistant" is no recipient). A content
// type (json, <|constrain|>json) is ignored.
func parseHarmonyHeader(hdr string) (role, channel, recipient string) {
	if i := strings.LastIndex(hdr, harmonyStart); i >= 0 {
		hdr = hdr[i+len(harmonyStart):]
		role = hdr[:harmonyWordEnd(hdr)]
		hdr = hdr[len(role):]
	}
	var rest strings.Builder
	for {
		i := strings.Index(hdr, harmonyChannel)
		if i < 0 {
			rest.WriteString(hdr)
			break
		}
		rest.WriteString(hdr[:i])
		rest.WriteByte(' ')
		hdr = hdr[i+len(harmonyChannel):]
		channel = hdr[:harmonyWordEnd(hdr)]
		hdr = hdr[len(channel):]
	}
	for _, f := range strings.Fields(strings.ReplaceAll(rest.String(), "<|", " <|")) {
		if to, ok := strings.CutPrefix(f, "to="); ok && to != "assistant" && recipient == "" {
			recipient = to
		}
	}
	return role, channel, recipient
}

// harmonyWordEnd is where the word at the start of s ends: at white space
// or a tag.
func harmonyWordEnd(s string) int {
	if i := strings.IndexAny(s, " \t\r\n<"); i >= 0 {
		return i
	}
	return len(s)
}

// emit sends body text to its part.
func (h *harmonySplitter) emit(s string, think, answer *string) {
	if s == "" {
		return
	}
	var dst *string
	var k int
	switch h.part {
	case partCall:
		h.args.WriteString(s)
		return
	case partDrop:
		return
	case partThink:
		if h.hide {
			return
		}
		dst, k = think, 1
	default:
		dst, k = answer, 0
	}
	if h.fresh && h.wrote[k] {
		*dst += "\n"
	}
	*dst += s
	h.fresh, h.wrote[k] = false, true
}

// close ends the current message's body.
func (h *harmonySplitter) close() {
	if h.body && h.part == partCall {
		h.calls = append(h.calls, harmonyToolCall{name: h.name, args: h.args.String()})
	}
	h.body, h.part, h.channel, h.name = false, partAnswer, "", ""
	h.args.Reset()
}

// inFinal reports whether the reply is in its final message's body.
func (h *harmonySplitter) inFinal() bool {
	return h.body && h.part == partAnswer && h.channel == "final"
}

// toolCalls returns the calls the reply made, numbered call_0, call_1, …
// Arguments are a JSON object (none: {}); a call whose arguments are not
// one (cut by the token limit) is left out.
func (h *harmonySplitter) toolCalls() []chat.ToolCall {
	var out []chat.ToolCall
	for _, c := range h.calls {
		args := bytes.TrimSpace([]byte(c.args))
		if len(args) == 0 {
			args = []byte("{}")
		}
		var b bytes.Buffer
		if c.name == "" || args[0] != '{' || json.Compact(&b, args) != nil {
			continue
		}
		out = append(out, chat.ToolCall{ID: fmt.Sprintf("call_%d", len(out)), Type: "function",
			Function: chat.ToolFunction{Name: c.name, Arguments: b.Bytes()}})
	}
	return out
}

// harmonyFirst lets a harmony model think before its constrained answer:
// every token may come until the reply's final message begins (its
// header's <|message|>); from there the answer's constraint applies.
type harmonyFirst struct {
	inner  Constraint
	piece  func(int) string // a token's text
	reply  *harmonySplitter // follows the reply's messages
	answer bool             // the final message has begun
}

func newHarmonyFirst(inner Constraint, piece func(int) string, open string) *harmonyFirst {
	c := &harmonyFirst{inner: inner, piece: piece, reply: newHarmonySplitter(open, true)}
	c.answer = c.reply.inFinal()
	return c
}

func (c *harmonyFirst) Mask(logits []float32) bool {
	if c.answer {
		return c.inner.Mask(logits)
	}
	return true
}

func (c *harmonyFirst) Accept(id int) {
	if c.answer {
		c.inner.Accept(id)
		return
	}
	c.reply.push(c.piece(id))
	c.reply.calls = nil // what the constraint follows, not the reply's calls
	c.answer = c.reply.inFinal()
}
