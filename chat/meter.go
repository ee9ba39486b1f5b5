package chat

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// meter is the state of one render of a bounded template (bound.go): what
// it has spent, and the functions the rewritten template calls. Every
// function checks, before it builds anything, that the result fits the
// limits. Errors of the meter are sticky: once one happened, every later
// call fails with it and Render reports it, so the engine cannot lose one.
type meter struct {
	lim       Limits
	now       func() time.Time
	deadline  time.Time
	nextClock int64 // steps at which the clock is read next

	steps, built int64
	depth        int // macro and caller calls in progress
	// bufs are the sizes of the buffers being written: bufs[0] is the
	// prompt; a macro or caller call adds its buffer at base, a set or
	// filter block one above the buffer around it.
	bufs   []int64
	base   int
	failed error
}

// valueSize is what the meter charges for one list or dict item (a
// jinja.Value and its share of the backing array).
const valueSize = 32

// clockEvery is how many steps pass between readings of the clock.
const clockEvery = 32

func newMeter(lim Limits, now func() time.Time) *meter {
	m := &meter{lim: lim.withDefaults(), now: now, bufs: make([]int64, 1, 8)}
	m.deadline = now().Add(m.lim.MaxTime)
	return m
}

// write charges n bytes written to the buffer at level (see writer.level)
// of the current frame; a write at a level forgets any buffer above it (a
// block left by a loop's break).
func (m *meter) write(line, level int, n int64) error {
	i := m.base + max(level, 0)
	for len(m.bufs) <= i {
		m.bufs = append(m.bufs, 0)
	}
	m.bufs = m.bufs[:i+1]
	if m.bufs[i] += n; i == 0 {
		if m.bufs[0] > m.lim.MaxOutput {
			return m.limit(line, "MaxOutput", "the prompt would grow to", m.bufs[0], m.lim.MaxOutput, "bytes")
		}
		return nil
	}
	if m.bufs[i] > m.lim.MaxValue {
		return m.limit(line, "MaxValue", "the output of a macro or block would be a string of", m.bufs[i], m.lim.MaxValue, "bytes")
	}
	return m.build(line, "an output", n)
}

// open starts the buffer of a set or filter block at level.
func (m *meter) open(level int) {
	i := m.base + max(level, 0)
	for len(m.bufs) < i {
		m.bufs = append(m.bufs, 0)
	}
	m.bufs = append(m.bufs[:i], 0)
}

func (m *meter) fail(err error) error {
	if m.failed == nil {
		m.failed = err
	}
	return err
}

func (m *meter) limit(line int, limit, what string, need, max int64, unit string) error {
	return m.fail(&LimitError{Limit: limit, Line: line, What: what, Need: need, Max: max, Unit: unit})
}

// step charges n steps and reads the clock now and then.
func (m *meter) step(line int, n int64) error {
	if m.steps += n; m.steps > m.lim.MaxSteps {
		return m.limit(line, "MaxSteps", "the render would take", m.steps, m.lim.MaxSteps, "steps")
	}
	if m.steps >= m.nextClock {
		m.nextClock = m.steps + clockEvery
		if now := m.now(); now.After(m.deadline) {
			took := now.Sub(m.deadline) + m.lim.MaxTime
			return m.limit(line, "MaxTime", "the render took", took.Milliseconds(), m.lim.MaxTime.Milliseconds(), "ms")
		}
	}
	return nil
}

// scan charges the steps of reading n bytes.
func (m *meter) scan(line int, n int) error { return m.step(line, 1+int64(n)>>12) }

// build charges n bytes built.
func (m *meter) build(line int, what string, n int64) error {
	if m.built += n; m.built > m.lim.MaxBuilt {
		return m.limit(line, "MaxBuilt", what+" would bring what the render built to", m.built, m.lim.MaxBuilt, "bytes")
	}
	return nil
}

// str checks and charges a string of n bytes about to be built by what.
func (m *meter) str(line int, what string, n int64) error {
	if n > m.lim.MaxValue || n < 0 {
		if n < 0 {
			n = math.MaxInt64
		}
		return m.limit(line, "MaxValue", what+" would build a string of", n, m.lim.MaxValue, "bytes")
	}
	if err := m.scan(line, int(n)); err != nil {
		return err
	}
	return m.build(line, what, n)
}

// items checks and charges a list or dict of n items about to be built.
func (m *meter) items(line int, what string, n int64) error {
	if n > m.lim.MaxItems || n < 0 {
		return m.limit(line, "MaxItems", what+" would build a list of", n, m.lim.MaxItems, "items")
	}
	if err := m.step(line, 1+n>>6); err != nil {
		return err
	}
	return m.build(line, what, n*valueSize)
}

// grow checks that a list or dict grown by added items to n fits, and
// charges the added items.
func (m *meter) grow(line int, what string, n, added int64) error {
	if n > m.lim.MaxItems {
		return m.limit(line, "MaxItems", what+" would grow a list to", n, m.lim.MaxItems, "items")
	}
	if err := m.step(line, 1+added>>6); err != nil {
		return err
	}
	return m.build(line, what, added*valueSize)
}

// printed is the length of text(v), the engine's printing of v, after
// checking that printing it is bounded: at most MaxValue bytes, MaxDepth
// levels and the steps left, however v's lists and dicts share or contain
// each other.
func (m *meter) printed(line int, v jinja.Value, what string) (int64, error) {
	if v.IsString() {
		return int64(len(v.AsString())), m.scan(line, len(v.AsString()))
	}
	if !v.IsList() && !v.IsDict() {
		return int64(len(text(v))), nil
	}
	w := walk{m: m, line: line, what: what, budget: m.lim.MaxSteps - m.steps}
	w.visit(v, 0)
	if w.err == nil {
		w.err = m.step(line, w.visits)
	}
	return w.total, w.err
}

// walk measures the length of a value's String() within a budget.
type walk struct {
	m      *meter
	line   int
	what   string
	total  int64
	visits int64
	budget int64
	err    error
}

func (w *walk) add(n int64) {
	if w.total += n; w.total > w.m.lim.MaxValue && w.err == nil {
		w.err = w.m.limit(w.line, "MaxValue", w.what+" prints a value of", w.total, w.m.lim.MaxValue, "bytes")
	}
}

func (w *walk) visit(v jinja.Value, depth int) {
	if w.err != nil {
		return
	}
	if w.visits++; w.visits > w.budget {
		w.err = w.m.limit(w.line, "MaxSteps", w.what+" would take the render to", w.m.steps+w.visits, w.m.lim.MaxSteps, "steps")
		return
	}
	if depth > w.m.lim.MaxDepth {
		w.err = w.m.limit(w.line, "MaxDepth", w.what+" reaches a value nested", int64(depth), int64(w.m.lim.MaxDepth), "levels deep")
		return
	}
	switch {
	case v.IsString():
		w.add(int64(len(v.AsString())) + 2) // 'quoted'
	case v.IsList():
		items := v.AsList().Items
		w.add(2 + 2*max(int64(len(items))-1, 0))
		for _, it := range items {
			w.visit(it, depth+1)
		}
	case v.IsDict():
		d := v.AsDict()
		w.add(2 + 2*max(int64(len(d.Keys))-1, 0))
		for _, k := range d.Keys {
			w.add(int64(len(k)) + 4) // 'key':
			w.visit(d.Data[k], depth+1)
		}
	case v.IsCallable():
		w.add(int64(len(v.AsCallable().Name)) + 11) // <callable name>
	case v.IsUndefined():
		w.add(9)
	case v.IsNone():
		w.add(4)
	default:
		w.add(int64(len(text(v))))
	}
}

// measure checks that v can be printed, compared or encoded within the
// limits (see printed).
func (m *meter) measure(line int, v jinja.Value, what string) error {
	_, err := m.printed(line, v, what)
	return err
}

// text is the engine's printing of v (its printValue): strings as they
// are, numbers in Go's %d and %g, True/False, nothing for None, Undefined
// and callables, lists and dicts in Python's notation. Call it after
// printed, which bounds it.
func text(v jinja.Value) string {
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsUndefined(), v.IsNone(), v.IsCallable():
		return ""
	case v.IsBool():
		if v.AsBool() {
			return "True"
		}
		return "False"
	case v.IsInt():
		return strconv.FormatInt(v.AsInt(), 10)
	case v.IsFloat():
		return fmt.Sprintf("%g", v.AsFloat())
	}
	return v.String()
}

// textOf is text(v) after charging for it.
func (m *meter) textOf(line int, v jinja.Value, what string) (string, error) {
	if err := m.measure(line, v, what); err != nil {
		return "", err
	}
	return text(v), nil
}

// toInt and toFloat are the engine's conversions to numbers: a string is
// read with fmt.Sscanf (0 if it does not start with a number).
func toInt(v jinja.Value) int64 {
	switch {
	case v.IsInt():
		return v.AsInt()
	case v.IsFloat():
		return int64(v.AsFloat())
	case v.IsBool():
		if v.AsBool() {
			return 1
		}
	case v.IsString():
		var n int64
		fmt.Sscanf(v.AsString(), "%d", &n)
		return n
	}
	return 0
}

func toFloat(v jinja.Value) float64 {
	switch {
	case v.IsFloat():
		return v.AsFloat()
	case v.IsInt():
		return float64(v.AsInt())
	case v.IsBool():
		if v.AsBool() {
			return 1
		}
	case v.IsString():
		var f float64
		fmt.Sscanf(v.AsString(), "%f", &f)
		return f
	}
	return 0
}

// scanNum charges converting v to a number (reading a string).
func (m *meter) scanNum(line int, vs ...jinja.Value) error {
	for _, v := range vs {
		if v.IsString() {
			if err := m.scan(line, len(v.AsString())); err != nil {
				return err
			}
		}
	}
	return nil
}

// runeCount is the number of items the engine makes of a string ([]rune).
func runeCount(s string) int64 { return int64(utf8.RuneCountInString(s)) }
