package chat

import (
	"fmt"
	"math"
	"strings"

	"github.com/ardanlabs/jinja"
)

// guardFunc is a function of the meter called by a bounded template as
// __gb_NAME(line, args…): line is the template line of the operation.
type guardFunc func(m *meter, line int, args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error)

// guards are the meter's functions by name (without the __gb_ prefix).
var guards = map[string]guardFunc{
	"add": addChain, "sub": binary(opSub), "mul": binary(opMul), "div": binary(opDiv),
	"fdiv": binary(opFloorDiv), "mod": binary(opMod), "pow": binary(opPow), "cat": catChain,
	"eq": binary(opEq), "ne": binary(opNe), "in": binary(opIn), "notin": binary(opNotIn),
	"lt": binary(ordering(func(c int) bool { return c < 0 })), "gt": binary(ordering(func(c int) bool { return c > 0 })),
	"le": binary(ordering(func(c int) bool { return c <= 0 })), "ge": binary(ordering(func(c int) bool { return c >= 0 })),
	"neg": unary(opNeg), "pos": unary(opPos), "item": guardItem, "slice": guardSlice,
	"m": guardMethod, "call": guardCall, "f": guardFilter, "fblock": guardFilterBlock, "tojson": guardToJSON,
	"out": guardOut, "w": unary(opWatch), "iter": guardIter,
	"tick": guardTick, "enter": guardEnter, "open": guardOpen,
}

// The chains of + and ~, also called by guardOut.
var addChain, catChain = chain(opAdd), chain(opCat)

// install adds the meter's functions names (from bound) to a render's variables.
func (m *meter) install(data map[string]jinja.Value, names []string) {
	for _, name := range names {
		g, ok := guards[name]
		if !ok {
			continue // p, below
		}
		data[guardPrefix+name] = jinja.NewCallable(guardPrefix+name, func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			if m.failed != nil {
				return undef, m.failed
			}
			if len(args) == 0 || !args[0].IsInt() {
				return undef, m.fail(fmt.Errorf("%s called without a line", guardPrefix+name))
			}
			return g(m, int(args[0].AsInt()), args[1:], kw)
		})
	}
	data[guardPrefix+"p"] = jinja.NewCallable(guardPrefix+"p", m.curry)
	data["range"] = jinja.NewCallable("range", m.rangeFn)
}

// curry is __gb_p(n)(f)(a1)…(an): f(a1, …, an) written without commas,
// for macro defaults (the engine splits a macro's parameters at commas).
func (m *meter) curry(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 || !args[0].IsInt() || args[0].AsInt() < 1 || args[0].AsInt() > 64 {
		return undef, m.fail(fmt.Errorf("%sp: malformed", guardPrefix))
	}
	n := int(args[0].AsInt())
	return jinja.NewCallable(guardPrefix+"p", func(f []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(f) != 1 || !f[0].IsCallable() {
			return undef, m.fail(fmt.Errorf("%sp: malformed", guardPrefix))
		}
		var all []jinja.Value
		kws := map[string]jinja.Value{}
		var next func(a []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error)
		next = func(a []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			all = append(all, a...)
			for k, v := range kw {
				kws[k] = v
			}
			if n--; n > 0 {
				return jinja.NewCallable(guardPrefix+"p", next), nil
			}
			return f[0].AsCallable().Fn(all, kws)
		}
		return jinja.NewCallable(guardPrefix+"p", next), nil
	}), nil
}

// rangeFn is Python's range(): at most MaxItems items.
func (m *meter) rangeFn(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if m.failed != nil {
		return undef, m.failed
	}
	var start, stop, step int64 = 0, 0, 1
	ints := make([]int64, len(args))
	for i, a := range args {
		switch {
		case a.IsInt():
			ints[i] = a.AsInt()
		case a.IsFloat() && a.AsFloat() == math.Trunc(a.AsFloat()) && math.Abs(a.AsFloat()) < 1<<62:
			ints[i] = int64(a.AsFloat()) // the engine computes 2**3 as a float; Python has an int
		default:
			return undef, fmt.Errorf("range: argument %d is %s, not an integer", i+1, describe(a))
		}
	}
	switch len(args) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return undef, fmt.Errorf("range: expected 1 to 3 arguments, got %d", len(args))
	}
	if step == 0 {
		return undef, fmt.Errorf("range: step must not be zero")
	}
	var n uint64 // computed without overflow
	switch {
	case step > 0 && stop > start:
		n = (uint64(stop-start) + uint64(step) - 1) / uint64(step)
	case step < 0 && stop < start:
		n = (uint64(start-stop) + uint64(-step) - 1) / uint64(-step)
	}
	if n > uint64(m.lim.MaxItems) {
		return undef, m.limit(0, "MaxItems", fmt.Sprintf("range(%d, %d, %d) would build a list of", start, stop, step), int64(min(n, math.MaxInt64)), m.lim.MaxItems, "items")
	}
	if err := m.items(0, "range()", int64(n)); err != nil {
		return undef, err
	}
	items := make([]jinja.Value, n)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

// describe names a value's kind for an error, without printing it.
func describe(v jinja.Value) string {
	switch {
	case v.IsString():
		if s := v.AsString(); len(s) <= 40 {
			return fmt.Sprintf("%q", s)
		}
		return "a string"
	case v.IsList():
		return "a list"
	case v.IsDict():
		return "a dict"
	case v.IsCallable():
		return "a callable"
	}
	return text(v)
}

func guardCall(m *meter, line int, args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return undef, m.fail(fmt.Errorf("line %d: malformed call", line))
	}
	if err := m.step(line, 1); err != nil {
		return undef, err
	}
	return callValue(m, line, "the called value", args[0], args[1:], kw)
}

// maxMessage bounds the message of raise_exception in an error.
const maxMessage = 1024

// callValue calls f, a macro, caller, global or method value, with what
// the meter knows of its cost: the string methods whose result can be far
// larger than their string (replace, format, split) are refused when
// called through a variable (the string is out of sight); raise_exception and joiner print their arguments; a
// caller's result is printed by the call block.
func callValue(m *meter, line int, name string, f jinja.Value, args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if !f.IsCallable() {
		return undef, notCallable(name, f)
	}
	c := f.AsCallable()
	switch c.Name {
	case "str.replace", "str.format", "str.split":
		return undef, m.fail(fmt.Errorf("line %d: %s is called through a variable; call it on its string (s.%s(…)) so its result can be bounded", line, c.Name, strings.TrimPrefix(c.Name, "str.")))
	case "raise_exception", "joiner":
		for _, a := range args {
			if err := m.measure(line, a, c.Name); err != nil {
				return undef, err
			}
		}
		if c.Name == "raise_exception" && len(args) > 0 { // its message goes into the error: keep it short
			if msg := text(args[0]); len(msg) > maxMessage {
				args = append([]jinja.Value{jinja.NewString(msg[:maxMessage] + "…")}, args[1:]...)
			}
		}
	case "dict.update", "list.insert", "list.pop":
		if err := m.step(line, 64); err != nil {
			return undef, err
		}
	}
	// A macro's or caller's body enters a frame (guardEnter); it is left
	// here whatever happens, also when a {% break %} ends the body early.
	depth, base, bufs := m.depth, m.base, len(m.bufs)
	res, err := c.Fn(args, kw)
	m.depth, m.base, m.bufs = depth, base, m.bufs[:min(bufs, len(m.bufs))]
	if err != nil {
		return res, err // the template's own error, or a loop's break: passed on as it is
	}
	switch {
	case res.IsString() && int64(len(res.AsString())) > m.lim.MaxValue:
		return undef, m.limit(line, "MaxValue", "a call returned a string of", int64(len(res.AsString())), m.lim.MaxValue, "bytes")
	case res.IsList() && int64(res.AsList().Len()) > m.lim.MaxItems:
		return undef, m.limit(line, "MaxItems", "a call returned a list of", int64(res.AsList().Len()), m.lim.MaxItems, "items")
	}
	if _, ok := kw["caller"]; ok { // a call block prints the result
		n, err := m.printed(line, res, "a call block")
		if err != nil {
			return undef, err
		}
		if err := m.build(line, "a call block", n); err != nil {
			return undef, err
		}
	}
	return res, nil
}

// guardOut is an {{ output }} at a level: of one value (an empty op), or of a
// chain a + b + … (op '+' or '~', one call for both), charged to the
// buffer at its level.
func guardOut(m *meter, line int, args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 3 || !args[0].IsInt() || !args[1].IsString() {
		return undef, m.fail(fmt.Errorf("line %d: malformed output", line))
	}
	v := args[2]
	switch op := args[1].AsString(); op {
	case "+", "~":
		c := addChain
		if op == "~" {
			c = catChain
		}
		var err error
		if v, err = c(m, line, args[2:], kw); err != nil {
			return undef, err
		}
	case "":
	default:
		return undef, m.fail(fmt.Errorf("line %d: malformed output", line))
	}
	n, err := m.printed(line, v, "an output")
	if err != nil {
		return undef, err
	}
	return v, m.write(line, int(args[0].AsInt()), n)
}

// opWatch lets a value through after measuring it: the engine is about to
// compare or print it (is-tests, dict keys).
func opWatch(m *meter, line int, x jinja.Value) (jinja.Value, error) {
	return x, m.measure(line, x, "a test")
}

// guardIter charges a loop's iterable: the engine makes a list of a
// string's characters or a dict's keys, and runs the loop's filter (with
// condItems literal items) on every item.
func guardIter(m *meter, line int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 || !args[1].IsInt() {
		return undef, m.fail(fmt.Errorf("line %d: malformed loop", line))
	}
	x, condItems := args[0], args[1].AsInt()
	var n int64
	switch {
	case x.IsString():
		n = runeCount(x.AsString())
		if err := m.items(line, "a loop over a string", n); err != nil {
			return undef, err
		}
		if err := m.build(line, "a loop over a string", 8*n); err != nil { // each character is a string
			return undef, err
		}
	case x.IsDict():
		n = int64(x.AsDict().Len())
		if err := m.items(line, "a loop over a dict", n); err != nil {
			return undef, err
		}
	case x.IsList():
		n = int64(x.AsList().Len())
	}
	if err := m.step(line, n); err != nil {
		return undef, err
	}
	return x, m.build(line, "a loop's filter", n*condItems*valueSize)
}

// guardTick charges one run of a loop body writing to the buffer at
// level: a step, and the text and literal items it writes.
func guardTick(m *meter, line int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 3 || !args[0].IsInt() || !args[1].IsInt() || !args[2].IsInt() {
		return undef, m.fail(fmt.Errorf("line %d: malformed loop body", line))
	}
	if err := m.step(line, 1); err != nil {
		return undef, err
	}
	if err := m.write(line, int(args[0].AsInt()), args[1].AsInt()); err != nil {
		return undef, err
	}
	return jinja.NewString(""), m.build(line, "a loop body", args[2].AsInt()*valueSize)
}

// guardEnter starts a macro's or caller's body: a frame one level deeper
// with a buffer of its own (callValue leaves it), the body's text and
// literal items charged.
func guardEnter(m *meter, line int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 || !args[0].IsInt() || !args[1].IsInt() {
		return undef, m.fail(fmt.Errorf("line %d: malformed macro body", line))
	}
	if m.depth++; m.depth > m.lim.MaxDepth {
		return undef, m.limit(line, "MaxDepth", "a macro call would nest", int64(m.depth), int64(m.lim.MaxDepth), "levels deep")
	}
	if err := m.step(line, 1); err != nil {
		return undef, err
	}
	m.base = len(m.bufs)
	m.bufs = append(m.bufs, 0)
	if err := m.write(line, 0, args[0].AsInt()); err != nil {
		return undef, err
	}
	return jinja.NewString(""), m.build(line, "a macro body", args[1].AsInt()*valueSize)
}

// guardOpen starts the buffer of a set or filter block.
func guardOpen(m *meter, _ int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 || !args[0].IsInt() {
		return undef, m.fail(fmt.Errorf("malformed block"))
	}
	m.open(int(args[0].AsInt()))
	return jinja.NewString(""), nil
}

// guardFilter is x | name(args): the engine's filter, after checking its cost.
func guardFilter(m *meter, line int, args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 || !args[0].IsString() {
		return undef, m.fail(fmt.Errorf("line %d: malformed filter", line))
	}
	return applyFilter(m, line, args[0].AsString(), args[1:], kw)
}

// guardFilterBlock is {% filter name %}: a built-in filter of the block's text.
func guardFilterBlock(m *meter, line int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 || !args[0].IsString() {
		return undef, m.fail(fmt.Errorf("line %d: malformed filter block", line))
	}
	return applyFilter(m, line, args[0].AsString(), args[1:], nil)
}

func applyFilter(m *meter, line int, name string, args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	f, ok := builtinFilters[name]
	if !ok {
		return undef, fmt.Errorf("unknown filter %q", name)
	}
	if err := m.step(line, 1); err != nil {
		return undef, err
	}
	charged, err := filterCost(m, line, name, args, kw)
	if err != nil {
		return undef, err
	}
	res, err := f.AsCallable().Fn(args, kw)
	if err != nil {
		return res, err
	}
	switch {
	case res.IsString():
		if n := int64(len(res.AsString())); n > m.lim.MaxValue {
			return undef, m.limit(line, "MaxValue", "| "+name+" built a string of", n, m.lim.MaxValue, "bytes")
		} else if !charged {
			return res, m.build(line, "| "+name, n)
		}
	case res.IsList():
		if n := int64(res.AsList().Len()); n > m.lim.MaxItems {
			return undef, m.limit(line, "MaxItems", "| "+name+" built a list of", n, m.lim.MaxItems, "items")
		} else if !charged {
			return res, m.build(line, "| "+name, n*valueSize)
		}
	}
	return res, nil
}

// filterCost checks and charges what a built-in filter (builtins.go of the
// engine) is about to do with args (the value first); charged reports
// whether its result is paid for already.
func filterCost(m *meter, line int, name string, args []jinja.Value, kw map[string]jinja.Value) (charged bool, err error) {
	what := "| " + name
	x := args[0]
	arg := func(i int) (jinja.Value, bool) {
		if i < len(args) {
			return args[i], true
		}
		return undef, false
	}
	strs := func() error { // the items of a list are read as numbers or strings
		if x.IsList() {
			for _, it := range x.AsList().Items {
				if err := m.scanNum(line, it); err != nil {
					return err
				}
			}
		}
		return nil
	}
	switch name {
	case "default", "d", "safe", "first", "last", "abs", "round", "int", "float":
		return false, m.scanNum(line, x)
	case "length", "count":
		if x.IsString() {
			return false, m.build(line, what, 4*int64(len(x.AsString()))) // as runes
		}
		return false, nil
	case "items", "dictsort", "map", "batch", "reverse", "sort", "max", "min", "sum", "list":
		n := int64(0)
		switch {
		case x.IsList():
			n = int64(x.AsList().Len())
		case x.IsDict():
			n = 3 * int64(x.AsDict().Len())
		case x.IsString():
			n = runeCount(x.AsString())
			if err := m.build(line, what, 4*int64(len(x.AsString()))); err != nil { // as runes
				return false, err
			}
		}
		if name == "batch" {
			n *= 2 // the items and as many lists at most
		}
		if err := m.items(line, what, n); err != nil {
			return false, err
		}
		if name == "sort" || name == "dictsort" {
			if err := m.step(line, n*int64(bitsLen(n))); err != nil {
				return false, err
			}
		}
		return true, strs()
	case "select", "reject", "selectattr", "rejectattr":
		if err := strs(); err != nil {
			return false, err
		}
		n := int64(0)
		if x.IsList() {
			n = int64(x.AsList().Len())
			if err := m.measure(line, x, what); err != nil { // tests compare every item
				return false, err
			}
		}
		first := 2
		if name == "selectattr" || name == "rejectattr" {
			first = 3
		}
		for i := first; i < len(args); i++ {
			v, err := m.printed(line, args[i], what)
			if err != nil {
				return false, err
			}
			if err := m.step(line, n*(1+v>>12)); err != nil {
				return false, err
			}
		}
		return true, m.items(line, what, n)
	case "join":
		if !x.IsList() {
			n, err := m.printed(line, x, what)
			return true, errJoin(err, m.str(line, what, n))
		}
		sep := ""
		if v, ok := arg(1); ok {
			if sep, err = m.textOf(line, v, what); err != nil {
				return false, err
			}
		}
		if v, ok := kw["d"]; ok {
			if sep, err = m.textOf(line, v, what); err != nil {
				return false, err
			}
		}
		attr := ""
		if v, ok := kw["attribute"]; ok {
			if attr, err = m.textOf(line, v, what); err != nil {
				return false, err
			}
		}
		items := x.AsList().Items
		total := int64(len(sep)) * max(int64(len(items))-1, 0)
		for _, it := range items {
			if attr != "" && it.IsDict() {
				if v, ok := it.AsDict().Get(attr); ok {
					it = v
				}
			}
			n, err := m.printed(line, it, what)
			if err != nil {
				return false, err
			}
			if total += n; total > m.lim.MaxValue {
				break
			}
		}
		return true, m.str(line, what, total)
	case "replace":
		if len(args) < 3 {
			return false, nil // the filter's own error
		}
		var s [3]string
		for i := range s {
			if s[i], err = m.textOf(line, args[i], what); err != nil {
				return false, err
			}
		}
		count := -1
		if v, ok := arg(3); ok {
			count = int(toInt(v))
		}
		if v, ok := kw["count"]; ok {
			count = int(toInt(v))
		}
		return true, m.str(line, what, replacedSize(s[0], s[1], s[2], count))
	case "indent":
		s, err := m.textOf(line, x, what)
		if err != nil {
			return false, err
		}
		width := int64(4)
		if v, ok := arg(1); ok {
			width = toInt(v)
		}
		if v, ok := kw["width"]; ok {
			width = toInt(v)
		}
		if width < 0 {
			return false, m.fail(fmt.Errorf("line %d: indent of %d", line, width))
		}
		lines := int64(strings.Count(s, "\n")) + 1
		if width > 0 && lines > (m.lim.MaxValue+1)/width+1 {
			return false, m.limit(line, "MaxValue", what+" would build a string of", lines*min(width, math.MaxInt64/lines), m.lim.MaxValue, "bytes")
		}
		return true, m.str(line, what, int64(len(s))+lines*width)
	case "escape", "e":
		s, err := m.textOf(line, x, what)
		if err != nil {
			return false, err
		}
		n := int64(len(s))
		for _, c := range []struct {
			s    string
			grow int64
		}{{"&", 4}, {"<", 3}, {">", 3}, {`"`, 5}, {"'", 4}} {
			n += c.grow * int64(strings.Count(s, c.s))
		}
		return true, m.str(line, what, n)
	case "fromjson", "from_json":
		if x.IsString() {
			return true, m.build(line, what, 64*int64(len(x.AsString())))
		}
		return true, nil
	case "unique": // keeps every item's printing (a copy, but for strings)
		if x.IsList() {
			for _, it := range x.AsList().Items {
				n, err := m.printed(line, it, what)
				if err != nil {
					return false, err
				}
				if !it.IsString() {
					if err := m.build(line, what, n); err != nil {
						return false, err
					}
				}
			}
			return true, m.items(line, what, int64(x.AsList().Len()))
		}
		return true, nil
	case "tojson": // the engine's, only in a filter block (other uses are rewritten to ours)
		n, err := m.printed(line, x, what)
		if err != nil {
			return false, err
		}
		return true, m.str(line, what, 6*n+2)
	}
	// string, trim, lower, upper, title, capitalize, wordcount, and any
	// other: they print the value (and their arguments) and make a string
	// of about its size (applyFilter checks the result), through runes.
	var n int64
	for _, a := range args {
		v, err := m.printed(line, a, what)
		if err != nil {
			return false, err
		}
		n += v
	}
	return false, m.build(line, what, 4*n)
}

func bitsLen(n int64) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

func errJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// filterNames are the engine's built-in filters (builtins.go,
// registerFilters); a bounded template calls them through the meter.
var filterNames = []string{"tojson", "from_json", "fromjson", "items", "join", "default", "d", "trim",
	"lower", "upper", "title", "capitalize", "first", "last", "length", "count", "reverse", "sort",
	"unique", "list", "int", "float", "string", "safe", "replace", "round", "abs", "map", "select",
	"reject", "selectattr", "rejectattr", "indent", "wordcount", "escape", "e", "dictsort", "max",
	"min", "sum", "batch"}

// builtinFilters are the engine's filter functions, read once from its
// global scope, where it keeps them as __filter_NAME.
var builtinFilters = func() map[string]jinja.Value {
	found := map[string]jinja.Value{}
	var src strings.Builder
	for _, n := range filterNames {
		fmt.Fprintf(&src, "{{ grab(%q, __filter_%s) }}", n, n)
	}
	grab := jinja.NewCallable("grab", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) == 2 && args[1].IsCallable() {
			found[args[0].AsString()] = args[1]
		}
		return jinja.NewString(""), nil
	})
	t, err := jinja.Compile(src.String())
	if err == nil {
		_, err = t.RenderValues(map[string]jinja.Value{"grab": grab})
	}
	if err != nil {
		panic("chat: reading the template engine's filters: " + err.Error()) // a broken invariant, not input
	}
	return found
}()
