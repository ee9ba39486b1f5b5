package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ardanlabs/jinja"
)

// Stage is the pipeline stage chat template errors belong to.
const Stage = "encode"

// Message is one turn of a conversation, in the OpenAI/Hugging Face
// layout templates expect. Role is system, user, assistant or tool
// (templates decide what they accept). The optional fields are passed to
// the template only when set, so "message.tool_calls is defined" behaves
// as it does for a Python dict without the key.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is an assistant turn's thinking. Templates read it
	// as reasoning_content (Qwen3, DeepSeek-R1) or as thinking (gpt-oss,
	// LFM2): it is given under both names.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name identify the call a tool turn answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
}

// ToolCall is one function call of an assistant turn.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"` // "function"
	Function ToolFunction `json:"function"`
}

// ToolFunction names the function and its arguments: a JSON object (as
// Hugging Face templates expect) or a JSON string holding one (as the
// OpenAI API sends it); templates such as Qwen3's handle both.
type ToolFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Template is a chat template with the token texts it needs. The zero
// value is not usable; build one with New, FromGGUF or Fallback.
type Template struct {
	Source string // the Jinja2 source
	Origin string // where it came from, for errors: a GGUF key, "fallback", ...
	BOS    string // text of the BOS token, passed as bos_token
	EOS    string // text of the EOS token, passed as eos_token
	// Vars are extra variables for every render (tools, enable_thinking,
	// date_string, ...); per-call vars override them. Values are Go values
	// (nil, bool, int, int64, float64, string, []any, map[string]any) or
	// json.RawMessage, which keeps the key order of JSON objects — pass
	// tool definitions that way, since tojson prints a Go map's keys
	// sorted but a JSON object's in their order, as Python does.
	Vars map[string]any
	// Now is the clock of strftime_now and of Limits.MaxTime; nil means
	// time.Now.
	Now func() time.Time
	// Limits bounds each render; the zero value means DefaultLimits.
	Limits Limits

	compiled *jinja.Template
	meters   []string // the meter functions the compiled template calls
}

// Error is a chat template failure: a syntax error at compile time or a
// failure while rendering (including the template's own raise_exception).
type Error struct {
	Origin string
	Op     string // "compile" or "render"
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: chat template (%s): %s: %v", Stage, e.Origin, e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Stage reports the pipeline stage ("encode").
func (e *Error) Stage() string { return Stage }

// ErrEmpty is returned for a template with no source text.
var ErrEmpty = errors.New("template is empty")

// New compiles src. origin names it in errors.
func New(src, origin, bos, eos string) (Template, error) {
	t := Template{Source: src, Origin: origin, BOS: bos, EOS: eos}
	if err := t.compile(); err != nil {
		return Template{}, err
	}
	return t, nil
}

func (t *Template) compile() error {
	if t.compiled != nil {
		return nil
	}
	if t.Source == "" {
		return &Error{Origin: t.origin(), Op: "compile", Err: ErrEmpty}
	}
	c, err := compiled.get(trimFinalNewline(t.Source))
	if err != nil {
		return &Error{Origin: t.origin(), Op: "compile", Err: err}
	}
	t.compiled, t.meters = c.t, c.meters
	return nil
}

// A server compiles a model's template for every request (FromGGUF), so
// compiled templates are kept, by source, up to cacheBytes of sources; a
// compiled template is only read by renders, which may run at once.
var compiled = cache{entries: map[string]*bounded{}}

const cacheBytes = 8 << 20

type bounded struct {
	t      *jinja.Template
	meters []string
	err    error
}

type cache struct {
	mu      sync.Mutex
	entries map[string]*bounded
	order   []string // oldest first
	bytes   int
}

// get returns the compiled bounded form of src (see bound), compiling it
// on first use.
func (c *cache) get(src string) (*bounded, error) {
	c.mu.Lock()
	b, ok := c.entries[src]
	c.mu.Unlock()
	if !ok {
		b = compileBounded(src)
		c.mu.Lock()
		if _, ok := c.entries[src]; !ok && len(src) <= cacheBytes {
			for c.bytes+len(src) > cacheBytes {
				c.bytes -= len(c.order[0])
				delete(c.entries, c.order[0])
				c.order = c.order[1:]
			}
			c.entries[src] = b
			c.order = append(c.order, src)
			c.bytes += len(src)
		}
		c.mu.Unlock()
	}
	if b.err != nil {
		return nil, b.err
	}
	return b, nil
}

func compileBounded(src string) *bounded {
	out, meters, err := bound(src)
	if err != nil {
		return &bounded{err: err}
	}
	t, err := safeCompile(out)
	if err != nil { // the engine refuses what bound wrote: a bug of bound
		return &bounded{err: fmt.Errorf("the bounded template does not compile: %w", err)}
	}
	return &bounded{t: t, meters: meters}
}

func (t *Template) origin() string {
	if t.Origin == "" {
		return "template"
	}
	return t.Origin
}

// trimFinalNewline drops one trailing newline, as Jinja2 does by default
// (keep_trailing_newline=False).
func trimFinalNewline(s string) string {
	if n := len(s); n > 0 && s[n-1] == '\n' {
		s = s[:n-1]
		if n := len(s); n > 0 && s[n-1] == '\r' {
			s = s[:n-1]
		}
	}
	return s
}

// Render renders msgs. With addGenerationPrompt the output ends with the
// header of an assistant turn, ready for the model to continue. vars add to
// (and override) t.Vars and the built-in variables.
func (t Template) Render(msgs []Message, addGenerationPrompt bool, vars map[string]any) (string, error) {
	out, _, err := t.render(msgs, addGenerationPrompt, vars)
	return out, err
}

// render is Render, also returning the meter (nil if the render did not start).
func (t Template) render(msgs []Message, addGenerationPrompt bool, vars map[string]any) (string, *meter, error) {
	if err := t.compile(); err != nil {
		return "", nil, err
	}
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		v, err := m.value()
		if err != nil {
			return "", nil, &Error{Origin: t.origin(), Op: fmt.Sprintf("message %d", i), Err: err}
		}
		list[i] = v
	}
	now := t.Now
	if now == nil {
		now = time.Now
	}
	data := map[string]jinja.Value{
		"messages":              jinja.NewList(list),
		"add_generation_prompt": jinja.NewBool(addGenerationPrompt),
		"bos_token":             jinja.NewString(t.BOS),
		"eos_token":             jinja.NewString(t.EOS),
		"strftime_now": jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Undefined(), fmt.Errorf("strftime_now: want one format string, got %d arguments", len(args))
			}
			return jinja.NewString(strftime(args[0].AsString(), now())), nil
		}),
	}
	for _, m := range []map[string]any{t.Vars, vars} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if reserved(k) {
				return "", nil, &Error{Origin: t.origin(), Op: "variable " + k, Err: errors.New("the name is reserved")}
			}
			v, err := toValue(m[k])
			if err != nil {
				return "", nil, &Error{Origin: t.origin(), Op: "variable " + k, Err: err}
			}
			data[k] = v
		}
	}
	m := newMeter(t.Limits, now)
	m.install(data, t.meters)
	out, err := safeRender(t.compiled, data)
	if m.failed != nil { // a limit, which the engine may have reported as something else
		err = m.failed
	}
	if err == nil && int64(len(out)) > m.lim.MaxOutput {
		err = &LimitError{Limit: "MaxOutput", What: "the prompt is", Need: int64(len(out)), Max: m.lim.MaxOutput, Unit: "bytes"}
	}
	if err != nil {
		return "", m, &Error{Origin: t.origin(), Op: "render", Err: err}
	}
	return out, m, nil
}

// Render compiles tmpl and renders msgs with it; vars supplies bos_token,
// eos_token and any other variables the template reads.
func Render(tmpl string, msgs []Message, addGenerationPrompt bool, vars map[string]any) (string, error) {
	t, err := New(tmpl, "template", "", "")
	if err != nil {
		return "", err
	}
	return t.Render(msgs, addGenerationPrompt, vars)
}

// Templates come from model files, which are untrusted input; a panic in
// the template engine becomes an error naming the template instead of a
// crash.

func safeCompile(src string) (c *jinja.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("template engine failed: %v", r)
		}
	}()
	return jinja.Compile(src)
}

func safeRender(c *jinja.Template, data map[string]jinja.Value) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("template engine failed: %v", r)
		}
	}()
	return c.RenderValues(data)
}

// value is the message as the template sees it: a dict with role and
// content first, then the optional keys that are set.
func (m Message) value() (jinja.Value, error) {
	d := jinja.NewDict()
	set := d.AsDict().Set
	set("role", jinja.NewString(m.Role))
	set("content", jinja.NewString(m.Content))
	if m.ReasoningContent != "" {
		set("reasoning_content", jinja.NewString(m.ReasoningContent))
		set("thinking", jinja.NewString(m.ReasoningContent))
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]jinja.Value, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			call := jinja.NewDict()
			if c.ID != "" {
				call.AsDict().Set("id", jinja.NewString(c.ID))
			}
			if c.Type != "" {
				call.AsDict().Set("type", jinja.NewString(c.Type))
			}
			fn := jinja.NewDict()
			fn.AsDict().Set("name", jinja.NewString(c.Function.Name))
			if len(c.Function.Arguments) > 0 {
				args, err := toValue(c.Function.Arguments)
				if err != nil {
					return jinja.Value{}, fmt.Errorf("tool call %d (%s): arguments: %w", i, c.Function.Name, err)
				}
				fn.AsDict().Set("arguments", args)
			}
			call.AsDict().Set("function", fn)
			calls[i] = call
		}
		set("tool_calls", jinja.NewList(calls))
	}
	if m.ToolCallID != "" {
		set("tool_call_id", jinja.NewString(m.ToolCallID))
	}
	if m.Name != "" {
		set("name", jinja.NewString(m.Name))
	}
	return d, nil
}
