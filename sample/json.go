package sample

import (
	"math"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// JSON constrains a generation to one JSON value: any object (Ollama's
// format "json", OpenAI's response_format json_object) or what a Schema
// allows (format as a schema, json_schema). Before each pick, Mask rules
// out every token whose text would not continue a valid value, and an
// end-of-generation token until the value is whole; once it is closed,
// only an end-of-generation token may come.
// Between tokens of the JSON text, whitespace is one space, or a newline
// and at most maxJSONSpace spaces or tabs of indent, so a model cannot idle
// in it (llama.cpp's JSON grammar bounds it the same way).
//
// A JSON is used by one generation, from one goroutine.
type JSON struct {
	v        *Vocab
	rd       jsonSet
	scratch  []frame   // a trial's opened containers
	scratch2 []frame   // a second-byte trial's
	one      []float32 // Mask's buffer for one reading of several
}

// Vocab is what the JSON constraint reads of a vocabulary, built once per
// tokenizer and shared by its generations: each token's text (the bytes it
// adds to the output; "" for control tokens, which are never allowed),
// whether it ends a generation, its first byte, and — for a "plain" token,
// whose text is whole UTF-8 characters with no quote, backslash or control
// character — its characters, so that inside a string its fate is a matter
// of length alone.
type Vocab struct {
	piece  []string
	eog    []bool
	first  []byte
	second []int16 // the second byte; −1 for a one-byte token
	runes  []int32 // a plain token's characters; −1 for the others
}

// NewVocab reads a vocabulary of n tokens through piece and eog.
func NewVocab(n int, piece func(id int) string, eog func(id int) bool) *Vocab {
	v := &Vocab{piece: make([]string, n), eog: make([]bool, n), first: make([]byte, n), second: make([]int16, n), runes: make([]int32, n)}
	for id := range n {
		p := piece(id)
		v.piece[id], v.eog[id], v.runes[id], v.second[id] = p, eog(id), -1, -1
		if p == "" {
			continue
		}
		v.first[id] = p[0]
		if len(p) > 1 {
			v.second[id] = int16(p[1])
		}
		if plainString(p) {
			v.runes[id] = int32(utf8.RuneCountInString(p))
		}
	}
	return v
}

// plainString reports whether p goes into a JSON string as it is: valid
// UTF-8 (RFC 3629, as the recognizer checks it), no '"', '\\' or control
// character.
func plainString(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.ValidString(p)
}

// maxJSONSpace is the most indent (spaces or tabs after a newline) JSON
// allows.
const maxJSONSpace = 20

// ObjectSchema returns JSON mode's schema: any one object.
func ObjectSchema() *Schema { return objectSchema }

// Constraint returns a constraint to the values s allows over vocabulary v.
func (s *Schema) Constraint(v *Vocab) *JSON {
	return &JSON{v: v, rd: newJSONSet(s)}
}

// Mask sets logits[id] to −Inf for every id that may not come next, and
// reports whether any id may. Most tokens are settled without feeding
// their text to a copy of the state:
//   - each byte is tried once, so a token whose first byte may not come is
//     ruled out; when only a few bytes may come (after a value: a comma,
//     a bracket, whitespace), each byte after each of them is tried too,
//     and a token is ruled out by its first two bytes;
//   - inside a string, a plain token (whole characters, no quote,
//     backslash or control character) is settled by its length (a value
//     string's maxLength), or, in a key, by the keys it may still start.
//
// The others are fed to a copy of the state (TestMaskMatchesTrials).
//
// With several readings of the text (a fork union's value, jsonSet), a
// token may come if it may come after one of them.
func (j *JSON) Mask(logits []float32) bool {
	inf := float32(math.Inf(-1))
	switch len(j.rd.sts) {
	case 0:
		for id := range logits {
			logits[id] = inf
		}
		return false
	case 1:
		return j.mask(&j.rd.sts[0], logits)
	}
	if cap(j.one) < len(logits) {
		j.one = make([]float32, len(logits))
	}
	j.one = j.one[:len(logits)]
	any := false
	allowed := make([]bool, len(logits))
	for i := range j.rd.sts {
		clear(j.one)
		if !j.mask(&j.rd.sts[i], j.one) {
			continue
		}
		any = true
		for id, x := range j.one {
			allowed[id] = allowed[id] || !math.IsInf(float64(x), -1)
		}
	}
	for id, ok := range allowed {
		if !ok {
			logits[id] = inf
		}
	}
	return any
}

// mask is Mask for one reading.
func (j *JSON) mask(st *jsonState, logits []float32) bool {
	inf := float32(math.Inf(-1))
	v := j.v
	done, any := st.mode == jDone, false
	whole := st.complete()
	var next [256]bool
	var after [][256]bool // after[k]: the bytes that may follow the k-th allowed first byte
	var afterOf [256]int8 // index into after, −1: not computed
	if !done {
		var firsts []byte
		var forks []byte // first bytes that begin a fork union's value
		for c := range next {
			t := *st
			t.pushed = j.scratch[:0]
			next[c] = t.step(byte(c))
			j.scratch = t.pushed[:0]
			if t.forks > 0 {
				next[c] = readsAs(st, string([]byte{byte(c)}))
				forks = append(forks, byte(c))
			} else if next[c] {
				firsts = append(firsts, byte(c))
			}
		}
		for c := range afterOf {
			afterOf[c] = -1
		}
		if len(firsts)+len(forks) <= maxSecondBytes {
			after = make([][256]bool, len(firsts))
			for k, c := range firsts {
				t := *st
				t.pushed = j.scratch[:0]
				t.step(c)
				for d := range after[k] {
					u := t
					u.pushed = append(j.scratch2[:0], t.pushed...)
					after[k][d] = u.step(byte(d))
					j.scratch2 = u.pushed[:0]
				}
				j.scratch = t.pushed[:0]
				afterOf[c] = int8(k)
			}
		}
	}
	inString := st.mode == jString && st.cont == 0
	room := int32(-1) // characters a value string may still take; −1: any
	var keys []string // a key's candidates: what each may still add
	anyKey := false
	var pat *pattern // a patterned string's: it settles a plain token
	if inString && !st.key {
		if max := st.s.nodes[st.node].maxLen; max >= 0 {
			room = max - st.n
		}
		pat = st.s.nodes[st.node].pat
	} else if inString {
		anyKey = st.extraKeyAllowed()
		props := st.s.nodes[st.top.node].props
		for a := st.alive; a != 0; a &= a - 1 {
			if k := props[bits.TrailingZeros64(a)].key; int(st.n) <= len(k) {
				keys = append(keys, k[st.n:])
			}
		}
	}
	for id := range logits {
		ok := false
		if id < len(v.eog) && v.eog[id] {
			ok = whole
		} else if id < len(v.piece) && v.piece[id] != "" && next[v.first[id]] {
			k, second := afterOf[v.first[id]], v.second[id]
			switch r := v.runes[id]; {
			case k >= 0 && second >= 0 && !after[k][second]:
			case inString && r >= 0 && !st.key && pat != nil:
				ok = pat.walk(st.re, v.piece[id]) >= 0
			case inString && r >= 0 && !st.key:
				ok = room < 0 || r <= room
			case inString && r >= 0 && st.key:
				ok = anyKey
				for _, rest := range keys {
					ok = ok || strings.HasPrefix(rest, v.piece[id])
				}
			default:
				t := *st
				t.pushed = j.scratch[:0]
				ok = t.feed(v.piece[id])
				j.scratch = t.pushed[:0]
				if t.forks > 0 {
					ok = readsAs(st, v.piece[id])
				}
			}
		}
		if ok {
			any = true
		} else {
			logits[id] = inf
		}
	}
	return any
}

// maxSecondBytes is the most allowed first bytes for which Mask tries
// every second byte (256 trials each).
const maxSecondBytes = 8

// Accept advances past token id (one Mask allowed).
func (j *JSON) Accept(id int) {
	if id >= 0 && id < len(j.v.piece) && !j.v.eog[id] {
		j.acceptText(j.v.piece[id])
	}
}

// acceptText advances past text (which Mask allowed).
func (j *JSON) acceptText(text string) {
	if len(j.rd.sts) == 1 {
		st := &j.rd.sts[0]
		t := *st
		t.pushed = j.scratch[:0]
		t.feed(text)
		if t.forks == 0 {
			// The frames the token opened join the stack (t.stack is a
			// prefix of st.stack, which st owns: a trial only slices it).
			t.stack = append(st.stack[:len(t.stack)], t.pushed...)
			t.pushed = nil
			j.scratch = j.scratch[:0]
			*st = t
			return
		}
		j.scratch = j.scratch[:0]
	}
	j.rd.feed(text)
	if len(j.rd.sts) == 1 {
		own(&j.rd.sts[0]) // its stack may share a dropped reading's array
	}
}

// Complete reports whether the text so far is a whole value.
func (j *JSON) Complete() bool { return j.rd.complete() }

// JSONValid reports whether text is one JSON object as the constraint
// accepts it: whitespace as JSON allows it, nothing after the object.
func JSONValid(text string) bool { return objectSchema.Valid(text) }

// Valid reports whether text is one value s allows, as the constraint
// accepts it.
func (s *Schema) Valid(text string) bool {
	r := newJSONSet(s)
	return r.feed(text) && r.complete()
}

// jsonState is a byte-level recognizer of the prefixes of one JSON value
// that a Schema allows.
type jsonState struct {
	jcore
	// The containers under top, outermost first: stack, then pushed.
	// A trial (Mask) shares stack with the real state and only slices
	// it; frames it opens go to pushed, its own scratch.
	stack  []frame
	pushed []frame
}

// jcore is a jsonState but for its stack: two readings of the same text
// are the same when their cores and stacks are equal (jsonSet.add).
type jcore struct {
	s    *Schema
	mode uint8
	sub  uint8 // hex digits left in \uXXXX
	cont uint8 // UTF-8 continuation bytes left; the next is in lo…hi
	lo   uint8
	hi   uint8
	high bool // the last character was a \u escape of a high surrogate
	// lowOnly: a string at its maxLength after a high surrogate; the
	// escape being read may only be the pair's low half.
	lowOnly bool
	re      int16  // a string with a pattern, a bounded number: the automaton's state
	hex     uint16 // the \uXXXX value so far
	key     bool   // the string being read is an object key
	space   int8   // the whitespace run: 0 none, −1 one space, n > 0 a newline and n−1 indent bytes
	node    int32  // the schema of the value being read or about to start
	n       int32  // string: characters so far; literal and key: bytes matched
	alive   uint64 // literal: alternatives still matching; key: declared properties still matching
	dup     uint64 // key: every declared property whose key matches so far (an additional key may not repeat one)
	khash   uint64 // key: FNV-1a of its bytes so far (an additional key may not repeat another, frame.seen)
	kesc    bool   // key: it has an escape, so it can only be a declared one
	depth   int32  // containers open; top is the innermost when > 0
	top     frame
	// A union whose alternatives one byte does not tell apart (a fork
	// union, snode.fork): begin takes alternative force−1 when force > 0;
	// otherwise it takes the first that may start with the byte and, if
	// another may too, sets forks to the union's number of alternatives
	// (the byte must then be read once per alternative: jsonSet.step).
	force int32
	forks int32
}

// frame is an open container.
type frame struct {
	node  int32
	array bool
	count int32  // array: items so far; object: the first declared property that may still come
	prop  int32  // object: the property whose value is being read (−1: an additional one)
	used  uint64 // an array of unique items: the item literals written so far
	keys  int32  // object: keys so far
	// seen: object, the additional keys written so far as a Bloom filter
	// (two bits of 512 per key, from the key's FNV-1a hash): a key whose
	// bits are both set is refused as a repeat. It never lets a repeat
	// through; it may refuse a new key that collides (the model then
	// writes another), about 1 % of keys after ten, 6 % after thirty.
	seen [8]uint64
}

// Modes: what the next byte may be.
const (
	jValue      uint8 = iota // a value of schema node
	jKeyOrEnd                // after '{': a key or '}'
	jKey                     // after ',' in an object: a key
	jColon                   // after a key
	jValueOrEnd              // after '[': a value or ']'
	jAfter                   // after a value: ',' or the container's end
	jString                  // inside a string
	jEscape                  // after '\' in a string
	jHex                     // in \uXXXX
	jLiteral                 // inside one of a literal set's texts
	jMinus                   // after '-': a digit
	jZero                    // a number's leading 0
	jInt                     // integer digits
	jDot                     // after '.': a digit
	jFrac                    // fraction digits
	jExp                     // after e/E: sign or digit
	jExpSign                 // after the exponent's sign: a digit
	jExpDigits               // exponent digits
	jDone                    // the value is complete; nothing may follow
)

func newJSONState(s *Schema) jsonState {
	return jsonState{jcore: jcore{s: s, mode: jValue, node: s.root}}
}

// complete reports whether the text so far is a whole value: closed, or
// a top-level number or literal that may end here.
func (s *jsonState) complete() bool {
	switch s.mode {
	case jDone:
		return true
	case jZero, jInt, jFrac, jExpDigits:
		return s.depth == 0 && s.numDone()
	case jLiteral:
		return s.depth == 0 && s.litDone()
	}
	return false
}

// feed advances over p; false if p does not continue a valid prefix (s
// is then undefined).
func (s *jsonState) feed(p string) bool {
	for i := 0; i < len(p); i++ {
		if !s.step(p[i]) {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// step advances over one byte.
func (s *jsonState) step(c byte) bool {
	switch s.mode {
	case jString:
		if s.cont > 0 { // inside a UTF-8 sequence
			if c < s.lo || c > s.hi {
				return false
			}
			s.cont, s.lo, s.hi = s.cont-1, 0x80, 0xBF
			if s.key {
				return s.keyByte(c)
			}
			return s.patByte(c)
		}
		s.high = s.high && c == '\\'
		switch {
		case c == '"':
			if s.key {
				return s.endKey()
			}
			if nd := &s.s.nodes[s.node]; s.n < nd.minLen || nd.pat != nil && !nd.pat.done(s.re) {
				return false
			}
			return s.endValue()
		case c < 0x20:
			return false
		case c == '\\':
			s.mode = jEscape
			s.kesc = s.kesc || s.key
			if !s.key && s.s.nodes[s.node].pat != nil {
				return false // a patterned value is written without escapes
			}
			if !s.key {
				// An escape is counted once whole: at maxLength, it may
				// only finish a surrogate pair (a \u of a low surrogate
				// after a high one), or it would end in a dead end.
				if max := s.s.nodes[s.node].maxLen; max >= 0 && s.n >= max {
					if !s.high {
						return false
					}
					s.lowOnly = true
				}
			}
			return !s.key || s.keyByte(c)
		case c >= 0x80:
			if !s.utf8Lead(c) {
				return false
			}
		}
		if s.key {
			return s.keyByte(c)
		}
		return s.patByte(c) && s.char()
	case jEscape:
		if s.lowOnly && c != 'u' {
			return false
		}
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.mode, s.high = jString, false
			if !s.key && !s.char() {
				return false
			}
		case 'u':
			s.mode, s.sub, s.hex = jHex, 4, 0
		default:
			return false
		}
		return !s.key || s.keyByte(c)
	case jHex:
		var d byte
		switch {
		case isDigit(c):
			d = c - '0'
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			d = c | 0x20 - 'a' + 10
		default:
			return false
		}
		if s.lowOnly && (s.sub == 4 && d != 0xD || s.sub == 3 && d < 0xC) {
			return false // not a low surrogate: DC00–DFFF
		}
		s.hex = s.hex<<4 | uint16(d)
		if s.sub--; s.sub == 0 {
			s.mode = jString
			// A low surrogate right after a high one is the same
			// character (RFC 8259 section 7).
			pair := s.high && s.hex >= 0xDC00 && s.hex <= 0xDFFF
			s.high = !pair && s.hex >= 0xD800 && s.hex <= 0xDBFF
			s.lowOnly = false
			if !s.key && !pair && !s.char() {
				return false
			}
		}
		return !s.key || s.keyByte(c)
	case jLiteral:
		lits := s.s.nodes[s.node].lits
		var next uint64
		for a := s.alive; a != 0; a &= a - 1 {
			i := bits.TrailingZeros64(a)
			if l := lits[i]; int(s.n) < len(l) && l[s.n] == c {
				next |= 1 << i
			}
		}
		if next != 0 {
			s.alive = next
			s.n++
			return true
		}
		// Nothing continues: the value ends here if a text is whole (a
		// number literal is not self-delimiting), and c follows it.
		if !s.litDone() {
			return false
		}
		if s.uniqueItem() {
			s.top.used |= s.alive & s.whole()
		}
		if !s.endValue() {
			return false
		}
		return s.step(c)
	case jMinus:
		return s.numByte(c) && s.intStart(c)
	case jZero, jInt:
		integer := s.s.nodes[s.node].kind == sInteger
		switch {
		case isDigit(c) && s.mode == jInt:
		case c == '.' && !integer:
			s.mode = jDot
		case (c == 'e' || c == 'E') && !integer:
			s.mode = jExp
		default:
			return s.endNumber(c)
		}
		return s.numByte(c)
	case jDot, jExpSign:
		if !isDigit(c) {
			return false
		}
		s.mode++ // jFrac, jExpDigits
		return s.numByte(c)
	case jFrac:
		switch {
		case isDigit(c):
		case c == 'e' || c == 'E':
			s.mode = jExp
		default:
			return s.endNumber(c)
		}
		return s.numByte(c)
	case jExp:
		switch {
		case c == '+' || c == '-':
			s.mode = jExpSign
		case isDigit(c):
			s.mode = jExpDigits
		default:
			return false
		}
		return s.numByte(c)
	case jExpDigits:
		if isDigit(c) {
			return s.numByte(c)
		}
		return s.endNumber(c)
	case jDone:
		return false
	}
	// The structural modes: whitespace first.
	if isSpace(c) {
		switch {
		case s.space == 0 && c == ' ':
			s.space = -1
		case s.space == 0 && c == '\n':
			s.space = 1
		case s.space > 0 && s.space <= maxJSONSpace && (c == ' ' || c == '\t'):
			s.space++
		default:
			return false
		}
		return true
	}
	s.space = 0
	switch s.mode {
	case jValue:
		return s.begin(c)
	case jValueOrEnd:
		if c == ']' {
			return s.close()
		}
		if s.s.nodes[s.top.node].maxItems == 0 {
			return false
		}
		s.node = s.s.nodes[s.top.node].item(0)
		return s.begin(c)
	case jKeyOrEnd, jKey:
		if c == '}' && s.mode == jKeyOrEnd {
			return s.close()
		}
		if c != '"' {
			return false
		}
		s.alive = s.keyCandidates()
		if s.alive == 0 && !s.extraAllowed() {
			return false
		}
		s.dup = 1<<len(s.s.nodes[s.top.node].props) - 1 // with 64, the shift gives 0 and this all ones
		s.mode, s.key, s.n, s.high = jString, true, 0, false
		s.khash, s.kesc = fnvOffset, false
		return true
	case jColon:
		if c != ':' {
			return false
		}
		s.mode = jValue
		return true
	case jAfter:
		nd := &s.s.nodes[s.top.node]
		switch {
		case c == ',' && s.top.array:
			if nd.maxItems >= 0 && s.top.count >= nd.maxItems {
				return false
			}
			if nd.unique && bits.OnesCount64(s.top.used) == len(s.s.nodes[nd.items].lits) {
				return false // every distinct item is written
			}
			s.mode, s.node = jValue, nd.item(s.top.count)
		case c == ',':
			if s.keyCandidates() == 0 && !s.extraAllowed() {
				return false
			}
			s.mode = jKey
		case c == '}' && !s.top.array, c == ']' && s.top.array:
			return s.close()
		default:
			return false
		}
		return true
	}
	return false
}

// patByte steps a string value's pattern, if it has one, over byte c.
func (s *jsonState) patByte(c byte) bool {
	p := s.s.nodes[s.node].pat
	if p == nil {
		return true
	}
	s.re = p.step(s.re, c)
	return s.re >= 0
}

// char counts one more character of a string value, failing past its
// maxLength.
func (s *jsonState) char() bool {
	s.n++
	max := s.s.nodes[s.node].maxLen
	return max < 0 || s.n <= max
}

// utf8Lead starts a UTF-8 sequence at lead byte c, setting the bytes that
// must follow (RFC 3629 section 4: no overlong forms, no surrogates,
// nothing past U+10FFFF); false if c cannot lead one.
func (s *jsonState) utf8Lead(c byte) bool {
	s.lo, s.hi = 0x80, 0xBF
	switch {
	case c >= 0xC2 && c <= 0xDF:
		s.cont = 1
	case c == 0xE0:
		s.cont, s.lo = 2, 0xA0
	case c == 0xED:
		s.cont, s.hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		s.cont = 2
	case c == 0xF0:
		s.cont, s.lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		s.cont = 3
	case c == 0xF4:
		s.cont, s.hi = 3, 0x8F
	default:
		return false
	}
	return true
}

// intStart reads a number's first digit.
func (s *jsonState) intStart(c byte) bool {
	switch {
	case c == '0':
		s.mode = jZero
	case isDigit(c):
		s.mode = jInt
	default:
		return false
	}
	return true
}

// begin starts a value of schema s.node at c.
func (s *jsonState) begin(c byte) bool {
	nd := &s.s.nodes[s.node]
	switch nd.kind {
	case sUnion:
		if s.force > 0 {
			a := nd.alts[s.force-1]
			s.force = 0
			if !s.s.first(a, c) {
				return false
			}
			s.node = a
			return s.begin(c)
		}
		for i, a := range nd.alts {
			if !s.s.first(a, c) {
				continue
			}
			if nd.fork && slices.ContainsFunc(nd.alts[i+1:], func(b int32) bool { return s.s.first(b, c) }) {
				s.forks = int32(len(nd.alts))
			}
			s.node = a
			return s.begin(c)
		}
		return false
	case sAny:
		switch {
		case c == '{':
			s.node = nodeAnyObject
		case c == '[':
			s.node = nodeAnyArray
		case c == '"':
			s.node = nodeAnyString
		case c == '-' || isDigit(c):
			s.node = nodeAnyNumber
		case c == 't' || c == 'f':
			s.node = nodeBool
		case c == 'n':
			s.node = nodeNull
		default:
			return false
		}
		return s.begin(c)
	case sObject, sArray:
		if c != "[{"[b2i(nd.kind == sObject)] {
			return false
		}
		if s.depth > 0 {
			s.pushed = append(s.pushed, s.top)
		}
		s.depth++
		s.top = frame{node: s.node, array: nd.kind == sArray, prop: -1}
		s.mode = jValueOrEnd
		if nd.kind == sObject {
			s.mode = jKeyOrEnd
		}
		return true
	case sString:
		if c != '"' {
			return false
		}
		s.mode, s.key, s.n, s.high = jString, false, 0, false
		if nd.pat != nil {
			s.re = nd.pat.start()
		}
		return true
	case sNumber, sInteger:
		s.re = 0
		if !s.numByte(c) {
			return false
		}
		if c == '-' {
			s.mode = jMinus
			return true
		}
		return s.intStart(c)
	case sLiteral:
		var alive uint64
		for i, l := range nd.lits {
			if l[0] == c {
				alive |= 1 << i
			}
		}
		if s.uniqueItem() {
			alive &^= s.top.used // an item of a unique array: not one written already
		}
		if alive == 0 {
			return false
		}
		s.mode, s.alive, s.n = jLiteral, alive, 1
		return true
	}
	return false
}

// uniqueItem reports whether the value being read is an item of an array
// of unique items (its items are a literal set: CompileSchema).
func (s *jsonState) uniqueItem() bool {
	return s.depth > 0 && s.top.array && s.s.nodes[s.top.node].unique
}

// whole returns the literals of the set being read that are whole.
func (s *jsonState) whole() uint64 {
	var m uint64
	for i, l := range s.s.nodes[s.node].lits {
		if len(l) == int(s.n) {
			m |= 1 << i
		}
	}
	return m
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// first reports whether a value of node n may start with c.
func (sc *Schema) first(n int32, c byte) bool {
	nd := &sc.nodes[n]
	switch nd.kind {
	case sAny:
		return c == '{' || c == '[' || c == '"' || c == '-' || isDigit(c) || c == 't' || c == 'f' || c == 'n'
	case sObject:
		return c == '{'
	case sArray:
		return c == '['
	case sString:
		return c == '"'
	case sNumber, sInteger:
		return c == '-' || isDigit(c)
	case sLiteral:
		for _, l := range nd.lits {
			if l[0] == c {
				return true
			}
		}
		return false
	case sUnion:
		return nd.first[c>>6]&(1<<(c&63)) != 0
	}
	return false
}

// litDone reports whether one of the alive literal texts is whole.
func (s *jsonState) litDone() bool {
	lits := s.s.nodes[s.node].lits
	for a := s.alive; a != 0; a &= a - 1 {
		if len(lits[bits.TrailingZeros64(a)]) == int(s.n) {
			return true
		}
	}
	return false
}

// keyCandidates returns the declared properties that may come next in the
// open object: from the first that may still come up to the first
// required one (properties come in the schema's order; a required one
// cannot be skipped).
func (s *jsonState) keyCandidates() uint64 {
	nd := &s.s.nodes[s.top.node]
	var m uint64
	for i := int(s.top.count); i < len(nd.props); i++ {
		if s.keyFits(nd, i) {
			m |= 1 << i
		}
		if nd.required&(1<<i) != 0 {
			break
		}
	}
	return m
}

// extraAllowed reports whether an additional property may come next: the
// object takes them, no required property is still to come, and it is
// below maxProperties.
func (s *jsonState) extraAllowed() bool {
	nd := &s.s.nodes[s.top.node]
	return nd.extra >= 0 && nd.required>>uint(s.top.count) == 0 && s.keyFits(nd, -1)
}

// extraKeyAllowed is extraAllowed for the key being read: an additional
// key is written without escapes.
func (s *jsonState) extraKeyAllowed() bool { return !s.kesc && s.extraAllowed() }

// FNV-1a (64-bit) over an additional key's bytes.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// keyFits reports whether declared property i (−1: an additional one)
// may be the open object's next key and leave it able to end within
// minProperties and maxProperties: the required properties after i must
// still fit under the maximum and, without additional properties, enough
// must remain after i for the minimum. An object the schema compiler let
// through starts able to end so; each key this allows keeps it so.
func (s *jsonState) keyFits(nd *snode, i int) bool {
	n := s.top.keys + 1
	if i < 0 {
		return nd.maxProps < 0 || n <= nd.maxProps
	}
	if nd.maxProps >= 0 && n+int32(bits.OnesCount64(nd.required>>uint(i+1))) > nd.maxProps {
		return false
	}
	return nd.extra >= 0 || n+int32(len(nd.props)-i-1) >= nd.minProps
}

// keyByte matches byte c of a key against the candidate properties (and
// every declared one, for endKey).
func (s *jsonState) keyByte(c byte) bool {
	props := s.s.nodes[s.top.node].props
	match := func(m uint64) (next uint64) {
		for ; m != 0; m &= m - 1 {
			i := bits.TrailingZeros64(m)
			if k := props[i].key; int(s.n) < len(k) && k[s.n] == c {
				next |= 1 << i
			}
		}
		return next
	}
	s.alive, s.dup = match(s.alive), match(s.dup)
	s.n++
	s.khash = (s.khash ^ uint64(c)) * fnvPrime
	return s.alive != 0 || s.extraKeyAllowed()
}

// endKey ends a key: a declared property (the next value's schema is its)
// or, if none matches whole, an additional one.
func (s *jsonState) endKey() bool {
	nd := &s.s.nodes[s.top.node]
	s.key, s.mode = false, jColon
	for a := s.alive; a != 0; a &= a - 1 {
		i := bits.TrailingZeros64(a)
		if len(nd.props[i].key) == int(s.n) {
			s.top.prop, s.top.count, s.node = int32(i), int32(i+1), nd.props[i].node
			s.top.keys++
			return true
		}
	}
	if !s.extraAllowed() {
		return false
	}
	// An additional key may not repeat a declared one (a duplicate key, or
	// one out of the schema's order, would be read by the wrong schema).
	for a := s.dup; a != 0; a &= a - 1 {
		if len(nd.props[bits.TrailingZeros64(a)].key) == int(s.n) {
			return false
		}
	}
	// Nor repeat an additional one (written without escapes, its bytes are
	// its text: the hash of a repeat is the same).
	if s.kesc {
		return false
	}
	b1, b2 := s.khash&511, s.khash>>9&511
	if s.top.seen[b1>>6]&(1<<(b1&63)) != 0 && s.top.seen[b2>>6]&(1<<(b2&63)) != 0 {
		return false
	}
	s.top.seen[b1>>6] |= 1 << (b1 & 63)
	s.top.seen[b2>>6] |= 1 << (b2 & 63)
	s.top.prop, s.top.count, s.node = -1, int32(len(nd.props)), nd.extra
	s.top.keys++
	return true
}

// endValue ends the value being read: the top-level one is then
// complete; in an array it is one more item.
func (s *jsonState) endValue() bool {
	if s.depth == 0 {
		s.mode = jDone
		return true
	}
	s.mode = jAfter
	if s.top.array {
		s.top.count++
	}
	return true
}

// item is the schema of an array's item i (its prefixItems, then items).
func (nd *snode) item(i int32) int32 {
	if int(i) < len(nd.prefix) {
		return nd.prefix[i]
	}
	return nd.items
}

// endNumber ends a number at c, which then follows it.
func (s *jsonState) endNumber(c byte) bool {
	return s.numDone() && s.endValue() && s.step(c)
}

// numDone reports whether the number read so far may end here: always,
// but for a bounded one outside its bounds.
func (s *jsonState) numDone() bool {
	nd := &s.s.nodes[s.node]
	return nd.num == nil || nd.num.done(s.re)
}

// numByte steps a bounded number's automaton over byte c, one that
// continues the number.
func (s *jsonState) numByte(c byte) bool {
	nd := &s.s.nodes[s.node]
	if nd.num == nil || !(isDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
		return true
	}
	s.re = nd.num.step(s.re, c)
	return s.re >= 0
}

// close ends the innermost container if it may end: an object with no
// required property still to come and enough keys, an array with enough
// items.
func (s *jsonState) close() bool {
	nd := &s.s.nodes[s.top.node]
	if s.top.array && s.top.count < nd.minItems || !s.top.array && (nd.required>>uint(s.top.count) != 0 || s.top.keys < nd.minProps) {
		return false
	}
	s.depth--
	switch {
	case s.depth == 0:
	case len(s.pushed) > 0:
		s.top = s.pushed[len(s.pushed)-1]
		s.pushed = s.pushed[:len(s.pushed)-1]
	default:
		s.top = s.stack[len(s.stack)-1]
		s.stack = s.stack[:len(s.stack)-1]
	}
	return s.endValue()
}
