package chat

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Templates come from model files, which anyone can write, and the engine
// (github.com/ardanlabs/jinja v1.8.0) has no limits and no hooks: `s ~ s`
// in a loop, 'x' * 10**9, a macro that calls itself or a list that holds
// itself end the process (out of memory, or a stack overflow no recover
// catches). So before compiling, bound rewrites the template into an
// equivalent one in which every operation whose cost is not fixed by the
// source goes through a function of the per-render meter (meter.go):
//
//   - every operator (+ - * / // % ** ~ < > <= >=, == != in not in unless
//     one side is a literal), subscript, slice, call, method call and
//     filter; the meter computes the size of the result before it builds
//     it, and does the operation itself or calls the engine's filter;
//   - every {{ output }} (its printed size is counted), every loop's
//     iterable (its length) and every is-test that compares values;
//   - the start of each loop iteration and of each macro and caller body
//     (steps, the text and literals the body writes, recursion depth,
//     the clock).
//
// The engine still does what is cheap: control flow, scopes, names,
// attributes, literals, tests on types. Names starting with __gb_ and
// __filter_ (the meter's functions, the engine's filter table) are
// reserved. Expression and block nesting is bounded when parsing.

// reserved reports whether a name belongs to the meter or the engine's internals.
func reserved(name string) bool {
	return strings.HasPrefix(name, guardPrefix) || strings.HasPrefix(name, "__filter_")
}

const guardPrefix = "__gb_"

// Compile-time bounds: the engine's compiler is quadratic in the number of
// tags without text between them (its whitespace pass looks back for text).
const (
	maxSource = 1 << 20
	maxTags   = 10000
)

// bound returns the metered form of a template source and the names of
// the meter functions it calls.
func bound(src string) (string, []string, error) {
	if len(src) > maxSource {
		return "", nil, fmt.Errorf("template of %d bytes, more than %d", len(src), maxSource)
	}
	segs, err := scanSegments(src)
	if err != nil {
		return "", nil, syntaxf("%v", err)
	}
	tags := 0
	for _, s := range segs {
		if s.kind != segText {
			tags++
		}
	}
	if tags > maxTags {
		return "", nil, fmt.Errorf("template of %d tags, more than %d", tags, maxTags)
	}
	p := &stmtParser{segs: segs}
	nodes, err := p.until("")
	if err != nil {
		return "", nil, err
	}
	w := &writer{}
	w.nodes(nodes)
	// A statement without a keyword ({% %}, {% 1 %}) ends the engine's
	// template there; what follows is never run, but its tags still trim
	// the text before them, so it is copied as it is.
	for _, s := range segs[p.pos:] {
		w.b.WriteString(s.src)
	}
	if w.err != nil {
		return "", nil, w.err
	}
	return w.b.String(), slices.Sorted(maps.Keys(w.used)), nil
}

// writer writes the metered template.
type writer struct {
	b   strings.Builder
	err error
	// level is the buffer outputs go to, counted from the body of the
	// macro or caller being written (0), or from the prompt (0) at the
	// top: each set or filter block around adds one.
	level   int
	blocks  int // filter blocks so far, for their variable names
	line    int
	noComma bool // writing a macro default, which the engine splits at commas
	used    map[string]bool
}

// use notes that the template calls the meter function name.
func (w *writer) use(name string) {
	if w.used == nil {
		w.used = map[string]bool{}
	}
	w.used[name] = true
	if w.noComma {
		w.used["p"] = true
	}
}

func (w *writer) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("line %d: "+format, append([]any{w.line}, args...)...)
	}
}

func (w *writer) checkName(name string) {
	if reserved(name) {
		w.fail("the name %q is reserved", name)
	}
}

// checkNames checks every identifier in text (for variables, set targets,
// caller arguments).
func (w *writer) checkNames(text string) {
	for _, t := range tokenize(text) {
		if t.kind == tokName {
			w.checkName(t.val)
		}
	}
}

func (w *writer) nodes(nodes []*node) {
	for _, n := range nodes {
		w.node(n)
	}
}

// open writes a tag's opener with its trim mark; close the closer.
func (w *writer) open(s *segment, delim string) {
	w.b.WriteString(delim)
	if s.trimLeft {
		w.b.WriteByte('-')
	}
	w.b.WriteByte(' ')
}

func (w *writer) close(s *segment, delim string) {
	w.b.WriteByte(' ')
	if s.trimRight {
		w.b.WriteByte('-')
	}
	w.b.WriteString(delim)
}

// stmt writes a statement tag with the given content.
func (w *writer) stmt(s *segment, content string) {
	w.open(s, "{%")
	w.b.WriteString(content)
	w.close(s, "%}")
}

// call writes a tag {{ __gb_NAME(line, args) }} that outputs nothing.
func (w *writer) meterTag(name string, args ...string) {
	w.use(name)
	w.b.WriteString("{{ " + guardPrefix + name + "(" + strconv.Itoa(w.line))
	for _, a := range args {
		w.b.WriteString(", " + a)
	}
	w.b.WriteString(") }}")
}

// loopBody writes a loop body behind a tag that charges, each time the
// body runs, what it builds without calling the meter: its text and the
// items of its list and dict literals (weigh).
func (w *writer) loopBody(nodes []*node) {
	text, items := weigh(nodes)
	w.meterTag("tick", strconv.Itoa(w.level), strconv.FormatInt(text, 10), strconv.FormatInt(items, 10))
	w.nodes(nodes)
}

// frameBody writes a macro or caller body: it runs in a frame of its own
// (one level deeper), writing to a buffer of its own; extra counts the
// literal items of a macro's defaults.
func (w *writer) frameBody(nodes []*node, extra int64) {
	level := w.level
	w.level = 0
	text, items := weigh(nodes)
	w.meterTag("enter", strconv.FormatInt(text, 10), strconv.FormatInt(items+extra, 10))
	w.nodes(nodes)
	w.level = level
}

// weigh sums the text and literal items of nodes that run once each time
// their body does: it goes into conditionals and blocks but not into loop,
// macro and caller bodies, which charge their own.
func weigh(nodes []*node) (text, items int64) {
	add := func(t, i int64) { text, items = text+t, items+i }
	for _, n := range nodes {
		switch n.kind {
		case nText:
			add(int64(len(n.seg.src)), 0)
		case nRaw:
			for _, r := range n.raw {
				add(int64(len(r)), 0)
			}
		case nOutput:
			if l, ok := n.x.(litExpr); ok {
				add(int64(len(l.str)+len(l.raw)), 0) // at most what it prints
			} else {
				add(0, literalItems(n.x))
			}
		case nIf:
			for _, a := range n.arms {
				if a.cond != nil {
					add(0, literalItems(a.cond))
				}
				add(weigh(a.body))
			}
		case nFor:
			add(0, literalItems(n.iter))
			add(weigh(n.elseBody))
		case nSet, nCall:
			add(0, literalItems(n.x))
		case nSetBlock, nFilter:
			add(weigh(n.body))
		}
	}
	return text, items
}

// literalItems counts the items of the list and dict literals in x.
func literalItems(x expr) int64 {
	var n int64
	walkExpr(x, func(x expr) {
		switch x := x.(type) {
		case *listExpr:
			n += int64(len(x.items))
		case *dictExpr:
			n += int64(len(x.keys))
		}
	})
	return n
}

// walkExpr calls f on x and every expression under it.
func walkExpr(x expr, f func(expr)) {
	if x == nil {
		return
	}
	f(x)
	each := func(xs ...expr) {
		for _, x := range xs {
			walkExpr(x, f)
		}
	}
	kws := func(ks []kwarg) {
		for _, k := range ks {
			walkExpr(k.val, f)
		}
	}
	switch x := x.(type) {
	case *attrExpr:
		each(x.obj)
	case *itemExpr:
		each(x.obj, x.key)
	case *sliceExpr:
		each(x.obj, x.start, x.stop, x.step)
	case *unaryExpr:
		each(x.x)
	case *binExpr:
		each(x.l, x.r)
	case *condExpr:
		each(x.t, x.c, x.f)
	case *listExpr:
		each(x.items...)
	case *dictExpr:
		each(x.keys...)
		each(x.vals...)
	case *testExpr:
		each(x.x)
		each(x.args...)
	case *callExpr:
		each(x.fn)
		each(x.args...)
		kws(x.kws)
	case *filterExpr:
		each(x.x)
		each(x.args...)
		kws(x.kws)
	}
}

func (w *writer) node(n *node) {
	w.line = n.seg.line
	switch n.kind {
	case nText, nComment, nVerbatim:
		w.b.WriteString(n.seg.src)
	case nOutput:
		if _, ok := n.x.(litExpr); ok {
			w.b.WriteString(n.seg.src) // a literal: its size is in the source
			return
		}
		w.open(n.seg, "{{")
		// {{ a + b + c }} is one call: the concatenation and its output.
		args := []string{strconv.Itoa(w.level), "''"}
		if b, ok := n.x.(*binExpr); ok && (b.op == "+" || b.op == "~") {
			args = append([]string{args[0], quote(b.op)}, w.chainOperands(b)...)
		} else {
			args = append(args, w.expr(n.x))
		}
		w.b.WriteString(w.callStr("out", args...))
		w.close(n.seg, "}}")
	case nIf:
		for _, a := range n.arms {
			w.line = a.seg.line
			if a.cond == nil {
				w.b.WriteString(a.seg.src)
			} else {
				w.stmt(a.seg, stmtKeyword(a.seg.text)+" "+w.sub(a.cond))
			}
			w.nodes(a.body)
		}
		w.b.WriteString(n.end.src)
	case nFor:
		w.checkNames(n.forVars)
		// The filter runs once per item, before the body's tick: the
		// iterable's meter charges its literals for every item.
		var condItems int64
		if n.cond != nil {
			condItems = literalItems(n.cond)
		}
		head := "for " + n.forVars + " in " + w.callStr("iter", w.expr(n.iter), strconv.FormatInt(condItems, 10))
		if n.cond != nil {
			head += " if (" + w.expr(n.cond) + ")"
		}
		if n.forRest != "" {
			head += " " + n.forRest
		}
		w.stmt(n.seg, head)
		w.loopBody(n.body)
		if n.elseSeg != nil {
			w.b.WriteString(n.elseSeg.src)
			w.nodes(n.elseBody)
		}
		w.b.WriteString(n.end.src)
	case nSet:
		w.checkNames(n.target)
		w.stmt(n.seg, "set "+n.target+" = "+w.expr(n.x))
	case nSetBlock:
		w.checkNames(n.target)
		w.b.WriteString(n.seg.src)
		w.inBuffer(n.body)
		w.b.WriteString(n.end.src)
	case nMacro:
		w.checkName(n.name)
		var ps []string
		var defItems int64
		for _, p := range n.params {
			w.checkName(p.name)
			if !isName(p.name) {
				w.fail("macro parameter %q is not a name", p.name)
			}
			if p.def == nil {
				ps = append(ps, p.name)
				continue
			}
			w.noComma = true
			ps = append(ps, p.name+"="+w.expr(p.def))
			w.noComma = false
			defItems += literalItems(p.def)
		}
		w.stmt(n.seg, "macro "+n.name+"("+strings.Join(ps, ", ")+")")
		w.frameBody(n.body, defItems)
		w.b.WriteString(n.end.src)
	case nCall:
		w.checkNames(n.callee)
		x := w.expr(n.x)
		if _, ok := n.x.(*callExpr); !ok {
			x = w.callStr("call", x) // the engine calls a non-call expression with caller=; so does the meter
		}
		w.stmt(n.seg, "call"+n.callee+" "+x)
		w.frameBody(n.body, 0)
		w.b.WriteString(n.end.src)
	case nFilter:
		name, ok := n.x.(nameExpr)
		if !ok { // the engine writes the body unfiltered
			w.b.WriteString(n.seg.src)
			w.inBuffer(n.body)
			w.b.WriteString(n.end.src)
			return
		}
		// {% filter f %}body{% endfilter %} becomes
		// {% set v %}body{% endset %}{{ f(v), metered }}.
		w.blocks++
		v := guardPrefix + "block" + strconv.Itoa(w.blocks)
		w.stmt(n.seg, "set "+v)
		w.inBuffer(n.body)
		w.line = n.end.line
		w.stmt(n.end, "endset")
		w.b.WriteString("{{ " + w.callStr("out", strconv.Itoa(w.level), "''", w.callStr("fblock", quote(name.name), v)) + " }}")
	case nRaw:
		w.b.WriteString(n.seg.src)
		for _, r := range n.raw {
			w.b.WriteString(r)
		}
		w.b.WriteString(n.end.src)
	}
}

// inBuffer writes the body of a set or filter block, rendered into a
// buffer one level up, which the body opens first.
func (w *writer) inBuffer(nodes []*node) {
	w.level++
	w.meterTag("open", strconv.Itoa(w.level))
	w.nodes(nodes)
	w.level--
}

// callStr is the text of a call of the meter function name with the line
// and args; in a macro default, whose text the engine splits at commas,
// the call is curried through __gb_p: __gb_p(n)(__gb_name)(line)(a)….
func (w *writer) callStr(name string, args ...string) string {
	w.use(name)
	fn := guardPrefix + name
	line := strconv.Itoa(w.line)
	if !w.noComma {
		return fn + "(" + line + ", " + strings.Join(args, ", ") + ")"
	}
	var b strings.Builder
	b.WriteString(guardPrefix + "p(" + strconv.Itoa(1+len(args)) + ")(" + fn + ")(" + line + ")")
	for _, a := range args {
		b.WriteString("(" + a + ")")
	}
	return b.String()
}

// sub is expr(x) in parentheses unless it is an atom.
func (w *writer) sub(x expr) string {
	s := w.expr(x)
	switch x := x.(type) {
	case litExpr:
		if x.kind == tokString || x.kind == tokName {
			return s
		}
	case nameExpr, *listExpr, *dictExpr:
		return s
	}
	return "(" + s + ")"
}

// expr writes an expression in metered form.
func (w *writer) expr(x expr) string {
	switch x := x.(type) {
	case litExpr:
		if x.kind == tokString {
			return quote(x.str)
		}
		return x.raw
	case nameExpr:
		w.checkName(x.name)
		return x.name
	case *attrExpr:
		return w.sub(x.obj) + "." + x.attr
	case *itemExpr:
		// a[k1][k2]… is one call.
		keys := []string{w.expr(x.key)}
		obj := x.obj
		for {
			inner, ok := obj.(*itemExpr)
			if !ok {
				break
			}
			keys, obj = append([]string{w.expr(inner.key)}, keys...), inner.obj
		}
		return w.callStr("item", append([]string{w.expr(obj)}, keys...)...)
	case *sliceExpr:
		mask, args := 0, []string{w.expr(x.obj)}
		for i, part := range []expr{x.start, x.stop, x.step} {
			if part != nil {
				mask |= 1 << i
				args = append(args, w.expr(part))
			}
		}
		return w.callStr("slice", append([]string{strconv.Itoa(mask)}, args...)...)
	case *unaryExpr:
		if x.op == "not" {
			return "not " + w.sub(x.x)
		}
		if l, ok := x.x.(litExpr); ok && (l.kind == tokInt || l.kind == tokFloat) {
			return x.op + l.raw
		}
		return w.callStr(unaryGuards[x.op], w.expr(x.x))
	case *binExpr:
		return w.binary(x)
	case *condExpr:
		s := w.sub(x.t) + " if " + w.sub(x.c)
		if x.f != nil {
			s += " else " + w.sub(x.f)
		}
		return s
	case *listExpr:
		return "[" + w.list(x.items) + "]"
	case *dictExpr:
		var parts []string
		for i, k := range x.keys {
			ks := w.expr(k)
			if _, lit := k.(litExpr); !lit {
				ks = w.callStr("w", ks) // the engine prints the key
			}
			parts = append(parts, ks+": "+w.expr(x.vals[i]))
		}
		return "{ " + strings.Join(parts, ", ") + " }" // never "}}", which would end the tag
	case *testExpr:
		return w.test(x)
	case *callExpr:
		args := w.args(x.args, x.kws)
		if a, ok := x.fn.(*attrExpr); ok {
			return w.callStr("m", append([]string{w.expr(a.obj), quote(a.attr)}, args...)...)
		}
		return w.callStr("call", append([]string{w.expr(x.fn)}, args...)...)
	case *filterExpr:
		w.checkName(x.name)
		args := append([]string{w.expr(x.x)}, w.args(x.args, x.kws)...)
		switch {
		case x.name == "tojson":
			return w.callStr("tojson", args...)
		case slices.Contains(filterNames, x.name):
			return w.callStr("f", append([]string{quote(x.name)}, args...)...)
		}
		return w.callStr("call", append([]string{x.name}, args...)...) // a filter from the template's scope
	}
	w.fail("cannot write %T", x)
	return ""
}

var unaryGuards = map[string]string{"-": "neg", "+": "pos"}

var binaryGuards = map[string]string{
	"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "fdiv", "%": "mod", "**": "pow", "~": "cat",
	"==": "eq", "!=": "ne", "<": "lt", ">": "gt", "<=": "le", ">=": "ge", "in": "in", "not in": "notin",
}

func (w *writer) binary(x *binExpr) string {
	switch x.op {
	case "and", "or":
		return w.sub(x.l) + " " + x.op + " " + w.sub(x.r)
	case "in", "not in":
		// Membership in a literal list of scalars or a literal string
		// costs the literal's size times the item's.
		if l, ok := x.r.(*listExpr); ok && all(l.items, scalarLit) || strLit(x.r) {
			return w.sub(x.l) + " " + x.op + " " + w.sub(x.r)
		}
	}
	if x.op == "+" || x.op == "~" { // a + b + c… is one call (left to right, as the engine)
		return w.callStr(binaryGuards[x.op], w.chainOperands(x)...)
	}
	if (x.op == "==" || x.op == "!=") && (scalar(x.l) || scalar(x.r)) ||
		slices.Contains([]string{"<", ">", "<=", ">="}, x.op) && scalar(x.l) && scalar(x.r) {
		return w.sub(x.l) + " " + x.op + " " + w.sub(x.r)
	}
	return w.callStr(binaryGuards[x.op], w.expr(x.l), w.expr(x.r))
}

// chainOperands are the operands of a + b + c… (or a ~ b ~ c…), in order.
func (w *writer) chainOperands(x *binExpr) []string {
	operands := []string{w.expr(x.r)}
	l := x.l
	for {
		inner, ok := l.(*binExpr)
		if !ok || inner.op != x.op {
			break
		}
		operands, l = append([]string{w.expr(inner.r)}, operands...), inner.l
	}
	return append([]string{w.expr(l)}, operands...)
}

// scalar reports whether x's value is always a number, a boolean, None,
// Undefined or a literal string, so that comparing it costs a fixed time:
// literals, comparisons, tests, not, and the operators that make numbers.
func scalar(x expr) bool {
	switch x := x.(type) {
	case litExpr:
		return true
	case *testExpr:
		return true
	case *unaryExpr:
		return x.op == "not" || x.op == "-"
	case *binExpr:
		return slices.Contains([]string{"==", "!=", "<", ">", "<=", ">=", "in", "not in", "-", "/", "//", "%", "**"}, x.op)
	}
	return false
}

func isName(s string) bool {
	t := tokenize(s)
	return len(t) == 2 && t[0].kind == tokName && t[0].val == s
}

func scalarLit(x expr) bool { _, ok := x.(litExpr); return ok }

func strLit(x expr) bool { l, ok := x.(litExpr); return ok && l.kind == tokString }

func all(xs []expr, f func(expr) bool) bool {
	for _, x := range xs {
		if !f(x) {
			return false
		}
	}
	return true
}

// cheapTests look only at a value's kind, or at an integer.
var cheapTests = []string{"defined", "undefined", "none", "boolean", "integer", "float", "number",
	"string", "mapping", "iterable", "sequence", "callable", "true", "false", "odd", "even"}

func (w *writer) test(x *testExpr) string {
	name := x.name.val
	if x.name.kind != tokName {
		name = quote(name) // the engine takes any token's text as the name
	}
	s := ""
	metered := !slices.Contains(cheapTests, x.name.val)
	if metered {
		s = w.callStr("w", w.expr(x.x)) // the test compares or scans the value
	} else {
		s = w.sub(x.x)
	}
	s += " is "
	if x.negated {
		s += "not "
	}
	s += name
	if len(x.args) > 0 {
		var as []string
		for _, a := range x.args {
			if metered {
				as = append(as, w.callStr("w", w.expr(a)))
			} else {
				as = append(as, w.expr(a))
			}
		}
		s += "(" + strings.Join(as, ", ") + ")"
	}
	return s
}

func (w *writer) list(xs []expr) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, w.expr(x))
	}
	return strings.Join(parts, ", ")
}

func (w *writer) args(args []expr, kws []kwarg) []string {
	var out []string
	for _, a := range args {
		out = append(out, w.expr(a))
	}
	for _, k := range kws {
		out = append(out, k.name+"="+w.expr(k.val))
	}
	return out
}

// quote writes s as a string literal the engine reads back as s.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
