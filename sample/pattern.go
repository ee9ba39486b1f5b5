package sample

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pattern is a regular expression (JSON Schema's pattern, or one of the
// formats it enforces) compiled for the value of a JSON string: a
// deterministic automaton over the value's bytes, built from the
// expression's position automaton (Glushkov 1961: a state per occurrence
// of a character class, no ε-moves) by the subset construction, so that a
// step is one table lookup.
//
// The value is generated without escapes: the classes hold only the bytes
// a JSON string takes as they are (no '"', '\\' or control character), a
// character above U+007F is its UTF-8 bytes (the string's own UTF-8 check
// keeps them valid), and positions from which no accepted value can be
// reached through such bytes are removed first, so every step that
// succeeds leaves a prefix of some accepted value (the constraint never
// reaches a dead end).
type pattern struct {
	src   string       // the source, for errors and tests
	next  [][256]int16 // next[s][c]: the state after byte c in state s; −1: c may not come
	final []bool       // final[s]: the value may end in state s
}

// pset is a set of positions of the position automaton.
type pset [maxPatternPos / 64]uint64

// errNoPlainMatch: no value a pattern matches can be written without
// escapes.
var errNoPlainMatch = errors.New("matches no string that can be written without escapes")

// maxPatternPos bounds a pattern's positions, counted after {n,m}
// repetitions are written out; maxPatternStates its automaton's states.
const (
	maxPatternPos    = 256
	maxPatternStates = 4096
)

func (s *pset) add(p int)     { s[p>>6] |= 1 << (p & 63) }
func (s pset) has(p int) bool { return s[p>>6]&(1<<(p&63)) != 0 }
func (s pset) and(t pset) (u pset) {
	u[0], u[1], u[2], u[3] = s[0]&t[0], s[1]&t[1], s[2]&t[2], s[3]&t[3]
	return
}
func (s pset) or(t pset) (u pset) {
	u[0], u[1], u[2], u[3] = s[0]|t[0], s[1]|t[1], s[2]|t[2], s[3]|t[3]
	return
}
func (s pset) empty() bool { return s[0]|s[1]|s[2]|s[3] == 0 }

// start is the state before the value's first byte.
func (p *pattern) start() int16 { return 0 }

// step returns the state after byte c (−1: c may not come).
func (p *pattern) step(s int16, c byte) int16 { return p.next[s][c] }

// walk returns the state after the bytes of text (−1: they may not come).
func (p *pattern) walk(s int16, text string) int16 {
	for i := 0; i < len(text) && s >= 0; i++ {
		s = p.next[s][text[i]]
	}
	return s
}

// done reports whether the value may end in state s.
func (p *pattern) done(s int16) bool { return p.final[s] }

// lengthAutomaton accepts the strings of plain bytes of min..max
// characters (max −1: no limit), counting a UTF-8 character at its first
// byte (the string's own check keeps the sequences whole).
func lengthAutomaton(min, max int32) *pattern {
	top := max
	if top < 0 {
		top = min // from min on, one state
	}
	p := &pattern{src: "length", next: make([][256]int16, top+1), final: make([]bool, top+1)}
	for k := int32(0); k <= top; k++ {
		p.final[k] = k >= min
		for c := range 256 {
			switch {
			case plainBytes[c>>6]&(1<<(c&63)) == 0:
				p.next[k][c] = -1
			case c >= 0x80 && c < 0xC0: // a continuation byte
				p.next[k][c] = int16(k)
			case k < top:
				p.next[k][c] = int16(k + 1)
			case max < 0:
				p.next[k][c] = int16(k)
			default:
				p.next[k][c] = -1
			}
		}
	}
	return p
}

// formats are the string formats the constraint enforces, as patterns
// (RFC 3339's full-date, full-time and date-time, with at most nine
// fraction digits; RFC 9562's UUID text; ISO 8601 durations as RFC 3339's
// appendix A writes them; dotted-quad IPv4; and subsets of RFC 1123 host
// names and RFC 5321 mailboxes). JSON Schema makes format an annotation;
// the others are left unenforced, as their spec allows.
var formats = map[string]string{
	"date":      `^` + rfc3339Date + `$`,
	"time":      `^` + rfc3339Time + `$`,
	"date-time": `^` + rfc3339Date + `T` + rfc3339Time + `$`,
	"uuid":      `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`,
	"duration":  `^P(` + isoDate + `(T` + isoTime + `)?|T` + isoTime + `|[0-9]+W)$`,
	"ipv4":      `^(` + octet + `\.){3}` + octet + `$`,
	// A subset of each (every value it allows is one the format allows):
	// labels of at most 24 characters, a dot-atom local part.
	"hostname": `^` + label + `(\.` + label + `)*$`,
	"email":    `^[A-Za-z0-9_%+-]+(\.[A-Za-z0-9_%+-]+)*@` + label + `(\.` + label + `)*\.[A-Za-z]{2,24}$`,
}

const (
	isoDate     = `([0-9]+Y([0-9]+M)?([0-9]+D)?|[0-9]+M([0-9]+D)?|[0-9]+D)`
	isoTime     = `([0-9]+H([0-9]+M)?([0-9]+S)?|[0-9]+M([0-9]+S)?|[0-9]+S)`
	octet       = `(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`
	label       = `[A-Za-z0-9]([A-Za-z0-9-]{0,22}[A-Za-z0-9])?`
	rfc3339Date = `[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])`
	rfc3339Time = `([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`
)

// The regular expression's syntax tree.
type rnode struct {
	op    uint8
	class [4]uint64 // rClass: the bytes it matches
	kids  []*rnode
}

const (
	rClass uint8 = iota // one byte of class
	rSeq                // kids one after another (none: the empty string)
	rAlt                // one of kids
	rStar               // kids[0] any number of times
)

// repeat is k min..max times (max −1: unbounded), written out: k{2,4} is
// k k (k k?)?, k{2,} is k k k*. Each occurrence of k in the tree gets
// positions of its own.
func repeat(k *rnode, min, max int) *rnode {
	seq := &rnode{op: rSeq}
	for range min {
		seq.kids = append(seq.kids, k)
	}
	switch {
	case max < 0:
		seq.kids = append(seq.kids, &rnode{op: rStar, kids: []*rnode{k}})
	case max > min:
		opt := &rnode{op: rSeq}
		for range max - min {
			opt = &rnode{op: rAlt, kids: []*rnode{{op: rSeq, kids: []*rnode{k, opt}}, {op: rSeq}}}
		}
		seq.kids = append(seq.kids, opt)
	}
	return seq
}

// plainBytes are the bytes a JSON string holds unescaped.
var plainBytes = func() (c [4]uint64) {
	for b := 0x20; b < 256; b++ {
		if b != '"' && b != '\\' {
			c[b>>6] |= 1 << (b & 63)
		}
	}
	return
}()

// compilePattern compiles an ECMA-262 regular expression as JSON Schema
// uses it (unanchored: without ^ and $ the value may hold more around a
// match). The subset: literals (any UTF-8), ., classes [...] and [^...]
// of any characters and ranges, \d \w \s and their negations, escaped
// punctuation, \t \n \r \f \v, \xHH and \uHHHH, groups (...) and
// (?:...), alternation, the quantifiers * + ? {n} {n,} {n,m} (a lazy ?
// after one changes nothing here), and lookaheads (?=...) and (?!...)
// right after a leading ^ (the automata's product, or with the
// lookahead's complement). Anything else is an error.
func compilePattern(src string) (*pattern, error) {
	ps := &patternParser{src: src}
	anchoredStart := strings.HasPrefix(src, "^")
	if anchoredStart {
		ps.i = 1
	}
	// Lookaheads at the start: (?=X) the value must begin with a match of
	// X (the whole value, with X's $), (?!X) must not.
	type look struct {
		tree     *rnode
		negative bool
	}
	var looks []look
	for anchoredStart && (strings.HasPrefix(src[ps.i:], "(?=") || strings.HasPrefix(src[ps.i:], "(?!")) {
		neg := src[ps.i+2] == '!'
		ps.i += 3
		if ps.i < len(src) && src[ps.i] == '^' {
			ps.i++ // at the start already
		}
		ps.look = true
		body, err := ps.alt()
		ps.look = false
		if err != nil {
			return nil, err
		}
		end := ps.i < len(src) && src[ps.i] == '$'
		if end {
			ps.i++
		}
		if ps.i >= len(src) || src[ps.i] != ')' {
			return nil, ps.errf("missing ) after a lookahead")
		}
		ps.i++
		if !end {
			body = &rnode{op: rSeq, kids: []*rnode{body, {op: rStar, kids: []*rnode{anyChar(true)}}}}
		}
		looks = append(looks, look{body, neg})
	}
	tree, err := ps.alt()
	if err != nil {
		return nil, err
	}
	anchoredEnd := false
	if ps.i < len(src) && src[ps.i] == '$' && ps.i == len(src)-1 {
		anchoredEnd, ps.i = true, len(src)
	}
	if ps.i < len(src) {
		return nil, ps.errf("unexpected %q", src[ps.i])
	}
	any := &rnode{op: rStar, kids: []*rnode{anyChar(true)}}
	seq := &rnode{op: rSeq}
	if !anchoredStart {
		seq.kids = append(seq.kids, any)
	}
	seq.kids = append(seq.kids, tree)
	if !anchoredEnd {
		seq.kids = append(seq.kids, any)
	}
	p, err := glushkov(src, seq)
	if err != nil {
		return nil, err
	}
	for _, l := range looks {
		lp, err := glushkov(src, l.tree)
		if err != nil && !(l.negative && errors.Is(err, errNoPlainMatch)) {
			return nil, err // (a negative one that matches nothing excludes nothing)
		}
		if p, err = p.and(lp, l.negative); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// explore builds the automaton whose states are the values reachable
// from start by step (false: the byte may not come there), final telling
// which may end a value; ok is false past maxPatternStates states.
func explore[S comparable](src string, start S, step func(S, byte) (S, bool), final func(S) bool) (p *pattern, ok bool) {
	p = &pattern{src: src}
	index := map[S]int16{}
	var states []S
	add := func(s S) int16 {
		if i, ok := index[s]; ok {
			return i
		}
		i := int16(len(states))
		index[s] = i
		states = append(states, s)
		p.next = append(p.next, [256]int16{})
		p.final = append(p.final, final(s))
		return i
	}
	add(start)
	for i := 0; i < len(states); i++ {
		for c := range 256 {
			n, ok := step(states[i], byte(c))
			if !ok || len(states) >= maxPatternStates {
				p.next[i][c] = -1
				continue
			}
			p.next[i][c] = add(n)
		}
	}
	return p, len(states) < maxPatternStates
}

// and returns the automaton of the values p accepts that q accepts too
// (negative: that q does not accept; q nil: accepts nothing), trimmed.
func (p *pattern) and(q *pattern, negative bool) (*pattern, error) {
	type pair struct{ a, b int16 } // b −1: q has rejected
	start := pair{0, 0}
	if q == nil {
		start.b = -1
	}
	out, ok := explore(p.src, start, func(s pair, c byte) (pair, bool) {
		a, b := p.next[s.a][c], int16(-1)
		if s.b >= 0 {
			b = q.next[s.b][c]
		}
		return pair{a, b}, a >= 0
	}, func(s pair) bool { return p.final[s.a] && (s.b >= 0 && q.final[s.b]) != negative })
	if !ok {
		return nil, fmt.Errorf("pattern %q is too complex: more than %d automaton states", p.src, maxPatternStates)
	}
	if !out.trim() {
		return nil, fmt.Errorf("pattern %q %w", p.src, errNoPlainMatch)
	}
	return out, nil
}

type patternParser struct {
	src  string
	i    int
	look bool // in a lookahead: a $ may end it
}

func (ps *patternParser) errf(format string, a ...any) error {
	return fmt.Errorf("pattern %q at byte %d: %s", ps.src, ps.i, fmt.Sprintf(format, a...))
}

func (ps *patternParser) alt() (*rnode, error) {
	var alts []*rnode
	for {
		s, err := ps.seq()
		if err != nil {
			return nil, err
		}
		alts = append(alts, s)
		if ps.i >= len(ps.src) || ps.src[ps.i] != '|' {
			break
		}
		ps.i++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &rnode{op: rAlt, kids: alts}, nil
}

func (ps *patternParser) seq() (*rnode, error) {
	n := &rnode{op: rSeq}
	for ps.i < len(ps.src) {
		c := ps.src[ps.i]
		if c == '|' || c == ')' || c == '$' && (ps.i == len(ps.src)-1 || ps.look && ps.src[ps.i+1] == ')') {
			break
		}
		atom, err := ps.atom()
		if err != nil {
			return nil, err
		}
		if atom, err = ps.quantified(atom); err != nil {
			return nil, err
		}
		n.kids = append(n.kids, atom)
	}
	return n, nil
}

func (ps *patternParser) quantified(atom *rnode) (*rnode, error) {
	for ps.i < len(ps.src) {
		min, max := 0, 0
		switch ps.src[ps.i] {
		case '*':
			min, max = 0, -1
		case '+':
			min, max = 1, -1
		case '?':
			min, max = 0, 1
		case '{':
			var ok bool
			if min, max, ok = ps.braces(); !ok {
				return atom, nil // a literal {, as ECMA-262's Annex B reads it
			}
			ps.i--
		default:
			return atom, nil
		}
		ps.i++
		if ps.i < len(ps.src) && ps.src[ps.i] == '?' {
			ps.i++ // lazy: the same set of values
		}
		if max >= 0 && min > max {
			return nil, ps.errf("repetition {%d,%d} has its minimum above its maximum", min, max)
		}
		if min > maxPatternPos || max > maxPatternPos {
			return nil, ps.errf("repetition of more than %d", maxPatternPos)
		}
		atom = repeat(atom, min, max)
	}
	return atom, nil
}

// braces reads {n}, {n,} or {n,m} at ps.i, leaving ps.i after the '}'.
func (ps *patternParser) braces() (min, max int, ok bool) {
	end := strings.IndexByte(ps.src[ps.i:], '}')
	if end < 0 {
		return 0, 0, false
	}
	body := ps.src[ps.i+1 : ps.i+end]
	lo, hi, comma := strings.Cut(body, ",")
	min, err := strconv.Atoi(lo)
	if err != nil || lo == "" || lo[0] == '+' || lo[0] == '-' {
		return 0, 0, false
	}
	max = min
	if comma {
		max = -1
		if hi != "" {
			if max, err = strconv.Atoi(hi); err != nil || hi[0] == '+' || hi[0] == '-' {
				return 0, 0, false
			}
		}
	}
	ps.i += end + 1
	return min, max, true
}

func (ps *patternParser) atom() (*rnode, error) {
	c := ps.src[ps.i]
	switch c {
	case '(':
		ps.i++
		if strings.HasPrefix(ps.src[ps.i:], "?:") {
			ps.i += 2
		} else if ps.i < len(ps.src) && ps.src[ps.i] == '?' {
			return nil, ps.errf("lookarounds (but at the start, after ^) and named groups are not supported")
		}
		n, err := ps.alt()
		if err != nil {
			return nil, err
		}
		if ps.i >= len(ps.src) || ps.src[ps.i] != ')' {
			return nil, ps.errf("missing )")
		}
		ps.i++
		return n, nil
	case '[':
		return ps.class()
	case '.':
		ps.i++
		return anyChar(false), nil
	case '\\':
		cs, neg, err := ps.escape(false)
		if err != nil {
			return nil, err
		}
		return classNode(cs, neg), nil
	case '^', '$':
		return nil, ps.errf("%c is supported only at the pattern's start (^) or end ($)", c)
	case '*', '+', '?':
		return nil, ps.errf("nothing to repeat")
	case ')':
		return nil, ps.errf("unmatched )")
	}
	r, size := utf8.DecodeRuneInString(ps.src[ps.i:])
	if r == utf8.RuneError && size <= 1 {
		return nil, ps.errf("not UTF-8")
	}
	lit := ps.src[ps.i : ps.i+size]
	ps.i += size
	n := &rnode{op: rSeq}
	for k := 0; k < len(lit); k++ {
		var set [4]uint64
		set[lit[k]>>6] |= 1 << (lit[k] & 63)
		n.kids = append(n.kids, &rnode{op: rClass, class: set})
	}
	if len(n.kids) == 1 {
		return n.kids[0], nil
	}
	return n, nil
}

// charset is a class's characters: the ASCII ones as bits, the others as
// rune ranges (in any order; classNode sorts them).
type charset struct {
	ascii  [2]uint64
	ranges [][2]rune
}

// add adds the characters lo..hi.
func (cs *charset) add(lo, hi rune) {
	for r := lo; r <= min(hi, 0x7F); r++ {
		cs.ascii[r>>6] |= 1 << (r & 63)
	}
	if hi >= 0x80 {
		cs.ranges = append(cs.ranges, [2]rune{max(lo, 0x80), hi})
	}
}

func (cs *charset) addAll(o charset) {
	cs.ascii[0] |= o.ascii[0]
	cs.ascii[1] |= o.ascii[1]
	cs.ranges = append(cs.ranges, o.ranges...)
}

// single is the set's one character, if it has exactly one.
func (cs charset) single() (rune, bool) {
	n := bits.OnesCount64(cs.ascii[0]) + bits.OnesCount64(cs.ascii[1])
	switch {
	case n == 1 && len(cs.ranges) == 0:
		return rune(lowestByte([4]uint64{cs.ascii[0], cs.ascii[1]})), true
	case n == 0 && len(cs.ranges) == 1 && cs.ranges[0][0] == cs.ranges[0][1]:
		return cs.ranges[0][0], true
	}
	return 0, false
}

// merged returns the non-ASCII ranges sorted and merged, without the
// surrogates (not characters).
func (cs charset) merged() [][2]rune {
	rs := slices.Clone(cs.ranges)
	slices.SortFunc(rs, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	var out [][2]rune
	for _, r := range rs {
		if n := len(out); n > 0 && r[0] <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	var cut [][2]rune
	for _, r := range out {
		if r[0] < 0xD800 {
			cut = append(cut, [2]rune{r[0], min(r[1], 0xD7FF)})
		}
		if r[1] > 0xDFFF {
			cut = append(cut, [2]rune{max(r[0], 0xE000), r[1]})
		}
	}
	return cut
}

// complement is every other character.
func (cs charset) complement() charset {
	out := charset{ascii: [2]uint64{^cs.ascii[0], ^cs.ascii[1]}}
	next := rune(0x80)
	for _, r := range cs.merged() {
		if r[0] > next {
			out.ranges = append(out.ranges, [2]rune{next, r[0] - 1})
		}
		next = r[1] + 1
	}
	if next <= utf8.MaxRune {
		out.ranges = append(out.ranges, [2]rune{next, utf8.MaxRune})
	}
	return out
}

// class reads [...] or [^...].
func (ps *patternParser) class() (*rnode, error) {
	ps.i++ // [
	neg := ps.i < len(ps.src) && ps.src[ps.i] == '^'
	if neg {
		ps.i++
	}
	var cs charset
	first := true
	for {
		if ps.i >= len(ps.src) {
			return nil, ps.errf("missing ]")
		}
		c := ps.src[ps.i]
		if c == ']' && !first {
			ps.i++
			break
		}
		first = false
		lo, many, single, err := ps.classMember()
		if err != nil {
			return nil, err
		}
		if !single { // \d, \w, \s
			cs.addAll(many)
			continue
		}
		hi := lo
		if ps.i+1 < len(ps.src) && ps.src[ps.i] == '-' && ps.src[ps.i+1] != ']' {
			ps.i++
			if hi, _, single, err = ps.classMember(); err != nil {
				return nil, err
			}
			if !single {
				return nil, ps.errf("a range must end at one character")
			}
			if hi < lo {
				return nil, ps.errf("range %q-%q is out of order", lo, hi)
			}
		}
		cs.add(lo, hi)
	}
	return classNode(cs, neg), nil
}

// classMember reads one member of a class at ps.i: one character
// (single), or an escape that stands for several (many).
func (ps *patternParser) classMember() (one rune, many charset, single bool, err error) {
	if ps.src[ps.i] == '\\' {
		cs, neg, err := ps.escape(true)
		switch {
		case err != nil:
			return 0, many, false, err
		case neg:
			return 0, many, false, ps.errf(`\D, \W and \S inside a class are not supported`)
		}
		if r, ok := cs.single(); ok {
			return r, many, true, nil
		}
		return 0, cs, false, nil
	}
	r, size := utf8.DecodeRuneInString(ps.src[ps.i:])
	if r == utf8.RuneError && size <= 1 {
		return 0, many, false, ps.errf("not UTF-8")
	}
	ps.i += size
	return r, many, true, nil
}

// escape reads a backslash escape at ps.i: the characters it matches, and
// whether it is a negated class (\D, \W, \S: every other character).
func (ps *patternParser) escape(inClass bool) (cs charset, neg bool, err error) {
	ps.i++ // backslash
	if ps.i >= len(ps.src) {
		return cs, false, ps.errf("pattern ends in a backslash")
	}
	c := ps.src[ps.i]
	ps.i++
	add := func(bs string) {
		for k := 0; k < len(bs); k++ {
			cs.add(rune(bs[k]), rune(bs[k]))
		}
	}
	switch c {
	case 'd', 'D':
		cs.add('0', '9')
		return cs, c == 'D', nil
	case 'w', 'W':
		cs.add('0', '9')
		cs.add('a', 'z')
		cs.add('A', 'Z')
		add("_")
		return cs, c == 'W', nil
	case 's', 'S':
		add(" \t\n\r\f\v")
		return cs, c == 'S', nil
	case 't':
		add("\t")
	case 'n':
		add("\n")
	case 'r':
		add("\r")
	case 'f':
		add("\f")
	case 'v':
		add("\v")
	case 'x', 'u':
		n := 2
		if c == 'u' {
			n = 4
		}
		if ps.i+n > len(ps.src) {
			return cs, false, ps.errf(`\%c needs %d hex digits`, c, n)
		}
		v, err := strconv.ParseUint(ps.src[ps.i:ps.i+n], 16, 32)
		if err != nil {
			return cs, false, ps.errf(`\%c needs %d hex digits`, c, n)
		}
		if v >= 0xD800 && v <= 0xDFFF {
			return cs, false, ps.errf(`\u%04X is a surrogate, not a character`, v)
		}
		ps.i += n
		cs.add(rune(v), rune(v))
	case 'b':
		if inClass {
			add("\b")
			break
		}
		return cs, false, ps.errf(`\b (word boundary) is not supported`)
	default:
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 {
			return cs, false, ps.errf(`escape \%c is not supported`, c)
		}
		cs.add(rune(c), rune(c)) // escaped punctuation stands for itself
	}
	return cs, false, nil
}

// classNode is one character of cs (negated: any other character): its
// ASCII bytes as one class, the others as UTF-8 byte sequences.
func classNode(cs charset, neg bool) *rnode {
	if neg {
		cs = cs.complement()
	}
	alt := &rnode{op: rAlt}
	if cs.ascii != [2]uint64{} {
		alt.kids = append(alt.kids, &rnode{op: rClass, class: [4]uint64{cs.ascii[0], cs.ascii[1]}})
	}
	for _, r := range cs.merged() {
		utf8Seqs(r[0], r[1], func(seq [][2]byte) {
			n := &rnode{op: rSeq}
			for _, b := range seq {
				k := &rnode{op: rClass}
				for x := int(b[0]); x <= int(b[1]); x++ {
					k.class[x>>6] |= 1 << (x & 63)
				}
				n.kids = append(n.kids, k)
			}
			alt.kids = append(alt.kids, n)
		})
	}
	if len(alt.kids) == 1 {
		return alt.kids[0]
	}
	return alt // (no kids: no character, a class that matches nothing)
}

// utf8Seqs calls emit with byte-range sequences whose strings are the
// UTF-8 encodings of lo..hi (no surrogates among them): the range is cut
// where the encoding's length changes, then where a lower continuation
// byte would not run through all of 80–BF, so that each piece is a
// product of byte ranges (the UTF-8 layout, RFC 3629 section 3).
func utf8Seqs(lo, hi rune, emit func([][2]byte)) {
	if lo > hi {
		return
	}
	for _, m := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= m && m < hi {
			utf8Seqs(lo, m, emit)
			utf8Seqs(m+1, hi, emit)
			return
		}
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1 // the low i continuation bytes' bits
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Seqs(lo, lo|m, emit)
				utf8Seqs((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				utf8Seqs(lo, (hi&^m)-1, emit)
				utf8Seqs(hi&^m, hi, emit)
				return
			}
		}
	}
	a, b := make([]byte, n), make([]byte, n)
	utf8.EncodeRune(a, lo)
	utf8.EncodeRune(b, hi)
	seq := make([][2]byte, n)
	for k := range seq {
		seq[k] = [2]byte{a[k], b[k]}
	}
	emit(seq)
}

// anyChar is . (any character but a line terminator) or, with newlines,
// any character at all.
func anyChar(newlines bool) *rnode {
	var set [4]uint64
	set[0], set[1] = ^uint64(0), ^uint64(0)
	if !newlines {
		set[0] &^= 1<<'\n' | 1<<'\r'
	}
	return &rnode{op: rAlt, kids: []*rnode{{op: rClass, class: set}, nonASCII()}}
}

// nonASCII is any character above U+007F, by the length of its UTF-8
// encoding (the string's UTF-8 check rules out the invalid ones).
func nonASCII() *rnode {
	cls := func(lo, hi int) *rnode {
		n := &rnode{op: rClass}
		for b := lo; b <= hi; b++ {
			n.class[b>>6] |= 1 << (b & 63)
		}
		return n
	}
	seq := func(lead *rnode, cont int) *rnode {
		n := &rnode{op: rSeq, kids: []*rnode{lead}}
		for range cont {
			n.kids = append(n.kids, cls(0x80, 0xBF))
		}
		return n
	}
	return &rnode{op: rAlt, kids: []*rnode{seq(cls(0xC2, 0xDF), 1), seq(cls(0xE0, 0xEF), 2), seq(cls(0xF0, 0xF4), 3)}}
}

// glushkov builds the position automaton of tree, trims it, and makes it
// deterministic.
func glushkov(src string, tree *rnode) (*pattern, error) {
	g := &glushkovBuilder{src: src, follow: []pset{{}}}
	nullable, first, last, err := g.visit(tree)
	if err != nil {
		return nil, err
	}
	g.follow[0] = first
	accept := last
	if nullable {
		accept.add(0)
	}
	// Keep the positions that some plain byte enters and from which an
	// accepted end can be reached, then drop the others from every step.
	var enter pset
	enter.add(0)
	for c := range g.byByte {
		enter = enter.or(g.byByte[c])
	}
	live := accept.and(enter)
	for changed := true; changed; {
		changed = false
		for q := range g.follow {
			if enter.has(q) && !live.has(q) && !g.follow[q].and(live).empty() {
				live.add(q)
				changed = true
			}
		}
	}
	if !live.has(0) {
		return nil, fmt.Errorf("pattern %q %w", src, errNoPlainMatch)
	}
	for c := range g.byByte {
		g.byByte[c] = g.byByte[c].and(live)
	}
	// The subset construction: a state is a set of positions, the start
	// {0}; a byte leads to the positions that follow one of them and
	// whose class holds it.
	var start pset
	start.add(0)
	follows := map[pset]pset{} // a state's followers, for its 256 steps
	p, ok := explore(src, start, func(s pset, c byte) (pset, bool) {
		follow, ok := follows[s]
		if !ok {
			for w, bw := range s {
				for ; bw != 0; bw &= bw - 1 {
					follow = follow.or(g.follow[w<<6|trailingZeros(bw)])
				}
			}
			follows[s] = follow
		}
		n := follow.and(g.byByte[c])
		return n, !n.empty()
	}, func(s pset) bool { return !s.and(accept).empty() })
	if !ok {
		return nil, fmt.Errorf("pattern %q is too complex: more than %d automaton states", src, maxPatternStates)
	}
	return p, nil
}

type glushkovBuilder struct {
	src    string
	follow []pset    // follow[q]: the positions that may match the byte after q's (0: the start)
	byByte [256]pset // the positions whose class holds the byte
}

// visit returns whether n matches the empty string, its first and last
// positions, and adds its follow pairs.
func (g *glushkovBuilder) visit(n *rnode) (nullable bool, first, last pset, err error) {
	switch n.op {
	case rClass:
		q := len(g.follow)
		if q >= maxPatternPos {
			return false, first, last, fmt.Errorf("pattern %q is too large: more than %d positions with its repetitions written out", g.src, maxPatternPos-1)
		}
		g.follow = append(g.follow, pset{})
		for b := range 256 {
			if n.class[b>>6]&plainBytes[b>>6]&(1<<(b&63)) != 0 {
				g.byByte[b].add(q)
			}
		}
		first.add(q)
		last.add(q)
		return false, first, last, nil
	case rSeq:
		nullable = true
		for _, k := range n.kids {
			kn, kf, kl, err := g.visit(k)
			if err != nil {
				return false, first, last, err
			}
			g.link(last, kf)
			if nullable {
				first = first.or(kf)
			}
			if kn {
				last = last.or(kl)
			} else {
				last = kl
			}
			nullable = nullable && kn
		}
		return nullable, first, last, nil
	case rAlt:
		for _, k := range n.kids {
			kn, kf, kl, err := g.visit(k)
			if err != nil {
				return false, first, last, err
			}
			nullable, first, last = nullable || kn, first.or(kf), last.or(kl)
		}
		return nullable, first, last, nil
	}
	// rStar: its loop.
	kn, kf, kl, err := g.visit(n.kids[0])
	if err != nil {
		return false, first, last, err
	}
	_ = kn
	g.link(kl, kf)
	return true, kf, kl, nil
}

// link adds every position of to to the follow set of every position of
// from.
func (g *glushkovBuilder) link(from, to pset) {
	if to.empty() {
		return
	}
	for w, bw := range from {
		for ; bw != 0; bw &= bw - 1 {
			q := w<<6 | trailingZeros(bw)
			g.follow[q] = g.follow[q].or(to)
		}
	}
}

func trailingZeros(w uint64) int { return bits.TrailingZeros64(w) }

// lowestByte is the smallest byte in s (not empty).
func lowestByte(s [4]uint64) byte {
	for w, bw := range s {
		if bw != 0 {
			return byte(w<<6 | bits.TrailingZeros64(bw))
		}
	}
	return 0
}
