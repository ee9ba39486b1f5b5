package chat

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The statement tree, as the engine's parseUntil builds it.

type nodeKind int

const (
	nText nodeKind = iota
	nComment
	nOutput
	nIf
	nFor
	nSet      // inline: {% set target = value %}
	nSetBlock // {% set target %}…{% endset %}
	nMacro
	nCall
	nFilter
	nRaw
	nVerbatim // break, continue, generation markers: copied as written
)

type node struct {
	kind nodeKind
	seg  *segment // the text, tag or opening statement
	x    expr     // output expression, set value, call expression, filter expression
	body []*node
	end  *segment // the closing statement

	arms []ifArm // if

	forVars, forRest string // for: "k, v" and "recursive" if present
	iter, cond       expr   // for: iterable and filter (nil without "if")
	elseSeg          *segment
	elseBody         []*node

	target string   // set, set block
	name   string   // macro
	params []param  // macro
	callee string   // call: "(a, b)" caller arguments as written, or ""
	raw    []string // raw: the segments between raw and endraw, as written
}

type ifArm struct {
	seg  *segment
	cond expr // nil for else
	body []*node
}

type param struct {
	name string
	def  expr // nil without a default
}

type stmtParser struct {
	segs  []segment
	pos   int
	depth int
}

func (p *stmtParser) done() bool     { return p.pos >= len(p.segs) }
func (p *stmtParser) peek() *segment { return &p.segs[p.pos] }

// errSyntax marks a template the engine would refuse too; the engine's own
// message is reported instead.
var errSyntax = errors.New("syntax")

func syntaxf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errSyntax, fmt.Sprintf(format, args...))
}

// until parses nodes up to a statement whose keyword is in stop (not consumed).
func (p *stmtParser) until(stop ...string) ([]*node, error) {
	if p.depth++; p.depth > maxNesting {
		return nil, errNesting
	}
	defer func() { p.depth-- }()
	var nodes []*node
	for !p.done() {
		seg := p.peek()
		switch seg.kind {
		case segText:
			p.pos++
			nodes = append(nodes, &node{kind: nText, seg: seg})
		case segComment:
			p.pos++
			nodes = append(nodes, &node{kind: nComment, seg: seg})
		case segExpr:
			p.pos++
			x, err := parseExpr(seg.text)
			if err != nil {
				return nil, exprErr(seg, err)
			}
			nodes = append(nodes, &node{kind: nOutput, seg: seg, x: x})
		case segStmt:
			kw := stmtKeyword(seg.text)
			if slices.Contains(stop, kw) {
				return nodes, nil
			}
			n, err := p.statement(seg, kw)
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, n...)
		}
	}
	return nodes, nil
}

func exprErr(seg *segment, err error) error {
	if errors.Is(err, errNesting) {
		return fmt.Errorf("line %d: expression %w", seg.line, err)
	}
	return syntaxf("line %d: %v", seg.line, err)
}

// rest is a statement's text after its keyword.
func rest(seg *segment, kw string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(seg.text), kw))
}

func (p *stmtParser) statement(seg *segment, kw string) ([]*node, error) {
	switch kw {
	case "if":
		return one(p.ifStmt(seg))
	case "for":
		return one(p.forStmt(seg))
	case "set":
		return one(p.setStmt(seg))
	case "macro":
		return one(p.macroStmt(seg))
	case "call":
		return one(p.callStmt(seg))
	case "filter":
		p.pos++
		x, err := parseExpr(rest(seg, "filter"))
		if err != nil {
			return nil, exprErr(seg, err)
		}
		return one(p.block(&node{kind: nFilter, seg: seg, x: x}, "endfilter"))
	case "raw":
		p.pos++
		n := &node{kind: nRaw, seg: seg}
		for !p.done() {
			s := p.peek()
			p.pos++
			if s.kind == segStmt && stmtKeyword(s.text) == "endraw" {
				n.end = s
				return []*node{n}, nil
			}
			n.raw = append(n.raw, s.src)
		}
		return nil, syntaxf("unclosed raw block")
	case "break", "continue":
		p.pos++
		return []*node{{kind: nVerbatim, seg: seg}}, nil
	case "generation":
		p.pos++
		body, err := p.until("endgeneration")
		if err != nil {
			return nil, err
		}
		if p.done() || stmtKeyword(p.peek().text) != "endgeneration" {
			return nil, syntaxf("line %d: unclosed generation block", seg.line)
		}
		end := p.peek()
		p.pos++
		out := append([]*node{{kind: nVerbatim, seg: seg}}, body...)
		return append(out, &node{kind: nVerbatim, seg: end}), nil
	}
	return nil, syntaxf("line %d: unknown statement %q", seg.line, kw)
}

func one(n *node, err error) ([]*node, error) {
	if err != nil {
		return nil, err
	}
	return []*node{n}, nil
}

// block parses n's body up to its closing keyword end, which it consumes.
func (p *stmtParser) block(n *node, end string) (*node, error) {
	body, err := p.until(end)
	if err != nil {
		return nil, err
	}
	if p.done() || stmtKeyword(p.peek().text) != end {
		return nil, syntaxf("line %d: unclosed %s block", n.seg.line, stmtKeyword(n.seg.text))
	}
	n.body, n.end = body, p.peek()
	p.pos++
	return n, nil
}

func (p *stmtParser) ifStmt(seg *segment) (*node, error) {
	n := &node{kind: nIf, seg: seg}
	p.pos++
	cond, err := parseExpr(strings.TrimPrefix(strings.TrimSpace(seg.text), "if"))
	if err != nil {
		return nil, exprErr(seg, err)
	}
	arm := ifArm{seg: seg, cond: cond}
	for {
		if arm.body, err = p.until("elif", "else", "endif"); err != nil {
			return nil, err
		}
		n.arms = append(n.arms, arm)
		if p.done() {
			return nil, syntaxf("unclosed if block")
		}
		s := p.peek()
		switch stmtKeyword(s.text) {
		case "elif":
			p.pos++
			c, err := parseExpr(strings.TrimPrefix(strings.TrimSpace(s.text), "elif"))
			if err != nil {
				return nil, exprErr(s, err)
			}
			arm = ifArm{seg: s, cond: c}
		case "else":
			p.pos++
			if arm.body, err = p.until("endif"); err != nil {
				return nil, err
			}
			n.arms = append(n.arms, ifArm{seg: s, body: arm.body})
			if p.done() {
				return nil, syntaxf("unclosed if block")
			}
			n.end = p.peek()
			p.pos++
			return n, nil
		default: // endif
			n.end = s
			p.pos++
			return n, nil
		}
	}
}

func (p *stmtParser) forStmt(seg *segment) (*node, error) {
	p.pos++
	text := rest(seg, "for")
	in := findKeyword(text, "in")
	if in < 0 {
		return nil, syntaxf("line %d: for loop missing 'in'", seg.line)
	}
	n := &node{kind: nFor, seg: seg, forVars: strings.TrimSpace(text[:in])}
	if v := splitVars(n.forVars); len(v) < 1 || len(v) > 2 {
		return nil, syntaxf("line %d: invalid for loop variables: %q", seg.line, n.forVars)
	}
	iter := strings.TrimSpace(text[in+2:])
	if r := findKeyword(iter, "recursive"); r >= 0 {
		n.forRest = "recursive"
		iter = strings.TrimSpace(iter[:r])
	}
	if i := findKeyword(iter, "if"); i >= 0 {
		c, err := parseExpr(iter[i+2:])
		if err != nil {
			return nil, exprErr(seg, err)
		}
		n.cond = c
		iter = strings.TrimSpace(iter[:i])
	}
	x, err := parseExpr(iter)
	if err != nil {
		return nil, exprErr(seg, err)
	}
	n.iter = x
	if n.body, err = p.until("else", "endfor"); err != nil {
		return nil, err
	}
	if !p.done() && stmtKeyword(p.peek().text) == "else" {
		n.elseSeg = p.peek()
		p.pos++
		if n.elseBody, err = p.until("endfor"); err != nil {
			return nil, err
		}
	}
	if p.done() || stmtKeyword(p.peek().text) != "endfor" {
		return nil, syntaxf("unclosed for block")
	}
	n.end = p.peek()
	p.pos++
	return n, nil
}

func splitVars(s string) []string {
	var vars []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			vars = append(vars, v)
		}
	}
	return vars
}

func (p *stmtParser) setStmt(seg *segment) (*node, error) {
	p.pos++
	text := rest(seg, "set")
	target, value, ok := strings.Cut(text, "=")
	if !ok {
		return p.block(&node{kind: nSetBlock, seg: seg, target: strings.TrimSpace(text)}, "endset")
	}
	x, err := parseExpr(value)
	if err != nil {
		return nil, exprErr(seg, err)
	}
	return &node{kind: nSet, seg: seg, target: strings.TrimSpace(target), x: x}, nil
}

func (p *stmtParser) macroStmt(seg *segment) (*node, error) {
	p.pos++
	name, params, ok := strings.Cut(rest(seg, "macro"), "(")
	if !ok {
		return nil, syntaxf("line %d: macro missing parameter list", seg.line)
	}
	n := &node{kind: nMacro, seg: seg, name: strings.TrimSpace(name)}
	params = strings.TrimSuffix(params, ")")
	if strings.TrimSpace(params) != "" {
		for part := range strings.SplitSeq(params, ",") {
			part = strings.TrimSpace(part)
			pname, def, ok := strings.Cut(part, "=")
			if !ok {
				n.params = append(n.params, param{name: part})
				continue
			}
			x, err := parseExpr(def)
			if err != nil {
				return nil, exprErr(seg, err)
			}
			n.params = append(n.params, param{strings.TrimSpace(pname), x})
		}
	}
	return p.block(n, "endmacro")
}

func (p *stmtParser) callStmt(seg *segment) (*node, error) {
	p.pos++
	text := rest(seg, "call")
	n := &node{kind: nCall, seg: seg}
	if strings.HasPrefix(text, "(") {
		closeIdx := strings.Index(text, ")")
		if closeIdx < 0 {
			return nil, syntaxf("line %d: unclosed call args", seg.line)
		}
		n.callee, text = text[:closeIdx+1], strings.TrimSpace(text[closeIdx+1:])
	}
	x, err := parseExpr(text)
	if err != nil {
		return nil, exprErr(seg, err)
	}
	n.x = x
	return p.block(n, "endcall")
}
