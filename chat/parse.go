package chat

import (
	"fmt"
	"slices"
	"strings"
)

// The expression and statement grammar of github.com/ardanlabs/jinja
// v1.8.0 (parse.go), mirrored production for production so that the tree
// built here is the one the engine builds from the same text; bound.go
// then writes the tree back out with every costly operation replaced by a
// metered call. Precedence, loosest first: x if c else y; or; and; not;
// comparisons, in, not in and is-tests (chained left to right); ~; + -;
// * / % //; ** (not chained); unary - +; postfix .attr [key] [a:b:c]
// (args) |filter(args).

// expr is a node of an expression tree.
type expr interface{ depth() int }

type (
	litExpr struct {
		raw  string // the token as written (names, numbers), or
		str  string // a string literal's value
		kind tokKind
	}
	nameExpr struct{ name string }
	attrExpr struct {
		base
		obj  expr
		attr string
	}
	itemExpr struct {
		base
		obj, key expr
	}
	sliceExpr struct {
		base
		obj, start, stop, step expr
	} // nil parts are absent
	unaryExpr struct {
		base
		op string
		x  expr
	}
	binExpr struct {
		base
		op   string
		l, r expr
	}
	condExpr struct {
		base
		t, c, f expr
	} // f nil without else
	listExpr struct {
		base
		items []expr
	}
	dictExpr struct {
		base
		keys, vals []expr
	}
	testExpr struct {
		base
		x       expr
		name    tok // any token: its val names the test
		negated bool
		args    []expr
	}
	callExpr struct {
		base
		fn   expr
		args []expr
		kws  []kwarg
	}
	filterExpr struct {
		base
		x    expr
		name string
		args []expr
		kws  []kwarg
	}
)

type kwarg struct {
	name string
	val  expr
}

// base records a node's depth (the longest path to a leaf), which the
// engine's evaluator recurses: it is bounded at parse time.
type base struct{ d int }

func (b base) depth() int   { return b.d }
func (litExpr) depth() int  { return 1 }
func (nameExpr) depth() int { return 1 }
func mk(children ...expr) base {
	d := 0
	for _, c := range children {
		if c != nil {
			d = max(d, c.depth())
		}
	}
	return base{d + 1}
}
func mkList(b base, xs []expr) base {
	for _, x := range xs {
		b.d = max(b.d, x.depth()+1)
	}
	return b
}
func mkKw(b base, kws []kwarg) base {
	for _, k := range kws {
		b.d = max(b.d, k.val.depth()+1)
	}
	return b
}

// maxNesting bounds how deeply expressions and blocks may nest: the
// engine parses and evaluates both recursively, and a template of a
// million "(" or "1+1+…" would exhaust the goroutine stack, which no
// recover catches. Real templates nest fewer than 20 levels.
const maxNesting = 200

var errNesting = fmt.Errorf("nested more than %d levels deep", maxNesting)

type exprParser struct {
	toks []tok
	pos  int
	rec  int // recursion depth of the parser itself
}

func (p *exprParser) peek() tok {
	if p.pos >= len(p.toks) {
		return tok{kind: tokEOF}
	}
	return p.toks[p.pos]
}

func (p *exprParser) next() tok {
	t := p.peek()
	p.pos++
	return t
}

func (p *exprParser) isName(s string) bool { t := p.peek(); return t.kind == tokName && t.val == s }

func (p *exprParser) expect(k tokKind, what string) error {
	if t := p.next(); t.kind != k {
		return fmt.Errorf("expected %q but got %q", what, t.val)
	}
	return nil
}

// enter counts a recursion of the parser; every production that can
// recurse without consuming a bracket calls it.
func (p *exprParser) enter() error {
	if p.rec++; p.rec > 4*maxNesting {
		return errNesting
	}
	return nil
}

func (p *exprParser) leave() { p.rec-- }

// parseExpr parses a whole expression; an empty one is None, as in the engine.
func parseExpr(s string) (expr, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return litExpr{raw: "none", kind: tokName}, nil
	}
	p := &exprParser{toks: tokenize(s)}
	e, err := p.expression()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, fmt.Errorf("unexpected token %q after expression", t.val)
	}
	if e.depth() > maxNesting {
		return nil, errNesting
	}
	return e, nil
}

func (p *exprParser) expression() (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	e, err := p.binary(levelOr)
	if err != nil || !p.isName("if") {
		return e, err
	}
	p.next()
	c, err := p.binary(levelOr)
	if err != nil {
		return nil, err
	}
	var f expr
	if p.isName("else") {
		p.next()
		if f, err = p.expression(); err != nil {
			return nil, err
		}
	}
	return &condExpr{mk(e, c, f), e, c, f}, nil
}

// Binary levels, loosest first, each parsed as operand (op operand)*
// left-associatively by binary (comparisons, in their own loop, sit
// between not and ~).
const (
	levelOr = iota
	levelAnd
	levelConcat
	levelAddSub
	levelMulDiv
)

// binaryOp is the operator of t at level, if it is one.
func binaryOp(level int, t tok) (string, bool) {
	switch level {
	case levelOr:
		return "or", t.kind == tokName && t.val == "or"
	case levelAnd:
		return "and", t.kind == tokName && t.val == "and"
	case levelConcat:
		return "~", t.kind == tokTilde
	case levelAddSub:
		return t.val, t.kind == tokOp && (t.val == "+" || t.val == "-")
	}
	switch {
	case t.kind == tokOp && (t.val == "*" || t.val == "/" || t.val == "%"):
		return t.val, true
	case t.kind == tokFloorDiv:
		return "//", true
	}
	return "", false
}

// operand parses an operand of the operators at level.
func (p *exprParser) operand(level int) (expr, error) {
	switch level {
	case levelOr:
		return p.binary(levelAnd)
	case levelAnd:
		return p.not()
	case levelConcat:
		return p.binary(levelAddSub)
	case levelAddSub:
		return p.binary(levelMulDiv)
	}
	return p.power()
}

func (p *exprParser) binary(level int) (expr, error) {
	l, err := p.operand(level)
	if err != nil {
		return nil, err
	}
	for {
		op, ok := binaryOp(level, p.peek())
		if !ok {
			return l, nil
		}
		p.next()
		r, err := p.operand(level)
		if err != nil {
			return nil, err
		}
		l = &binExpr{mk(l, r), op, l, r}
		if l.depth() > maxNesting {
			return nil, errNesting
		}
	}
}

func (p *exprParser) not() (expr, error) {
	if !p.isName("not") {
		return p.comparison()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.next()
	x, err := p.not()
	if err != nil {
		return nil, err
	}
	return &unaryExpr{mk(x), "not", x}, nil
}

var comparisons = map[string]bool{"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true}

func (p *exprParser) comparison() (expr, error) {
	l, err := p.binary(levelConcat)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		op := ""
		switch {
		case t.kind == tokOp && comparisons[t.val]:
			op = t.val
			p.next()
		case t.kind == tokName && t.val == "in":
			op = "in"
			p.next()
		case t.kind == tokName && t.val == "not" && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == tokName && p.toks[p.pos+1].val == "in":
			op = "not in"
			p.next()
			p.next()
		case t.kind == tokName && t.val == "is":
			p.next()
			negated := false
			if p.isName("not") {
				p.next()
				negated = true
			}
			name := p.next()
			var args []expr
			if p.peek().kind == tokLParen {
				p.next()
				for p.peek().kind != tokRParen && p.peek().kind != tokEOF {
					a, err := p.expression()
					if err != nil {
						return nil, err
					}
					args = append(args, a)
					if p.peek().kind == tokComma {
						p.next()
					}
				}
				if err := p.expect(tokRParen, ")"); err != nil {
					return nil, err
				}
			}
			l = &testExpr{mkList(mk(l), args), l, name, negated, args}
			if l.depth() > maxNesting {
				return nil, errNesting
			}
			continue
		default:
			return l, nil
		}
		r, err := p.binary(levelConcat)
		if err != nil {
			return nil, err
		}
		l = &binExpr{mk(l, r), op, l, r}
		if l.depth() > maxNesting {
			return nil, errNesting
		}
	}
}

func (p *exprParser) power() (expr, error) {
	b, err := p.unary()
	if err != nil || p.peek().kind != tokPower {
		return b, err
	}
	p.next()
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	return &binExpr{mk(b, x), "**", b, x}, nil
}

func (p *exprParser) unary() (expr, error) {
	if t := p.peek(); t.kind == tokOp && (t.val == "-" || t.val == "+") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{mk(x), t.val, x}, nil
	}
	return p.postfix()
}

func (p *exprParser) postfix() (expr, error) {
	e, err := p.atom()
	if err != nil {
		return nil, err
	}
	for {
		if e.depth() > maxNesting {
			return nil, errNesting
		}
		switch p.peek().kind {
		case tokDot:
			p.next()
			at := p.next()
			if at.kind != tokName && at.kind != tokInt {
				return nil, fmt.Errorf("expected attribute name after '.', got %q", at.val)
			}
			e = &attrExpr{mk(e), e, at.val}
			if p.peek().kind == tokLParen { // a method call
				p.next()
				args, kws, err := p.callArgs()
				if err != nil {
					return nil, err
				}
				e = &callExpr{mkKw(mkList(mk(e), args), kws), e, args, kws}
			}
		case tokLBracket:
			p.next()
			if e, err = p.subscript(e); err != nil {
				return nil, err
			}
		case tokLParen:
			p.next()
			args, kws, err := p.callArgs()
			if err != nil {
				return nil, err
			}
			e = &callExpr{mkKw(mkList(mk(e), args), kws), e, args, kws}
		case tokPipe:
			p.next()
			ft := p.next()
			if ft.kind != tokName {
				return nil, fmt.Errorf("expected filter name after '|', got %q", ft.val)
			}
			var args []expr
			var kws []kwarg
			if p.peek().kind == tokLParen {
				p.next()
				if args, kws, err = p.callArgs(); err != nil {
					return nil, err
				}
			}
			e = &filterExpr{mkKw(mkList(mk(e), args), kws), e, ft.val, args, kws}
		default:
			return e, nil
		}
	}
}

// subscript parses what follows "[": a key or a slice.
func (p *exprParser) subscript(obj expr) (expr, error) {
	var start, stop, step expr
	var err error
	isSlice := p.peek().kind == tokColon
	if !isSlice {
		if start, err = p.expression(); err != nil {
			return nil, err
		}
		isSlice = p.peek().kind == tokColon
	}
	if !isSlice {
		if err := p.expect(tokRBracket, "]"); err != nil {
			return nil, err
		}
		return &itemExpr{mk(obj, start), obj, start}, nil
	}
	p.next() // the first ':'
	if k := p.peek().kind; k != tokRBracket && k != tokColon {
		if stop, err = p.expression(); err != nil {
			return nil, err
		}
	}
	if p.peek().kind == tokColon {
		p.next()
		if p.peek().kind != tokRBracket {
			if step, err = p.expression(); err != nil {
				return nil, err
			}
		}
	}
	if err := p.expect(tokRBracket, "]"); err != nil {
		return nil, err
	}
	return &sliceExpr{mk(obj, start, stop, step), obj, start, stop, step}, nil
}

func (p *exprParser) atom() (expr, error) {
	t := p.peek()
	switch {
	case t.kind == tokName && slices.Contains([]string{"None", "none", "null", "True", "true", "False", "false"}, t.val),
		t.kind == tokInt, t.kind == tokFloat:
		p.next()
		return litExpr{raw: t.val, kind: t.kind}, nil
	case t.kind == tokString:
		p.next()
		return litExpr{str: t.val, kind: tokString}, nil
	case t.kind == tokName:
		p.next()
		return nameExpr{t.val}, nil
	case t.kind == tokLParen:
		p.next()
		if p.peek().kind == tokRParen {
			p.next()
			return &listExpr{base{1}, nil}, nil
		}
		e, err := p.expression()
		if err != nil {
			return nil, err
		}
		if p.peek().kind == tokComma { // a tuple, which the engine makes a list
			items := []expr{e}
			for p.peek().kind == tokComma {
				p.next()
				if p.peek().kind == tokRParen {
					break
				}
				it, err := p.expression()
				if err != nil {
					return nil, err
				}
				items = append(items, it)
			}
			if err := p.expect(tokRParen, ")"); err != nil {
				return nil, err
			}
			return &listExpr{mkList(base{1}, items), items}, nil
		}
		return e, p.expect(tokRParen, ")")
	case t.kind == tokLBracket:
		p.next()
		var items []expr
		for p.peek().kind != tokRBracket && p.peek().kind != tokEOF {
			it, err := p.expression()
			if err != nil {
				return nil, err
			}
			items = append(items, it)
			if p.peek().kind == tokComma {
				p.next()
			}
		}
		if err := p.expect(tokRBracket, "]"); err != nil {
			return nil, err
		}
		return &listExpr{mkList(base{1}, items), items}, nil
	case t.kind == tokLBrace:
		p.next()
		var keys, vals []expr
		for p.peek().kind != tokRBrace && p.peek().kind != tokEOF {
			k, err := p.expression()
			if err != nil {
				return nil, err
			}
			if err := p.expect(tokColon, ":"); err != nil {
				return nil, err
			}
			v, err := p.expression()
			if err != nil {
				return nil, err
			}
			keys, vals = append(keys, k), append(vals, v)
			if p.peek().kind == tokComma {
				p.next()
			}
		}
		if err := p.expect(tokRBrace, "}"); err != nil {
			return nil, err
		}
		return &dictExpr{mkList(mkList(base{1}, keys), vals), keys, vals}, nil
	case t.kind == tokOp && t.val == "-":
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		p.next()
		x, err := p.atom()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{mk(x), "-", x}, nil
	}
	return nil, fmt.Errorf("unexpected token %q", t.val)
}

func (p *exprParser) callArgs() ([]expr, []kwarg, error) {
	var args []expr
	var kws []kwarg
	for p.peek().kind != tokRParen && p.peek().kind != tokEOF {
		if t := p.peek(); t.kind == tokName && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == tokOp && p.toks[p.pos+1].val == "=" {
			p.next()
			p.next()
			v, err := p.expression()
			if err != nil {
				return nil, nil, err
			}
			kws = append(kws, kwarg{t.val, v})
		} else {
			a, err := p.expression()
			if err != nil {
				return nil, nil, err
			}
			args = append(args, a)
		}
		if p.peek().kind == tokComma {
			p.next()
		}
	}
	return args, kws, p.expect(tokRParen, ")")
}
