package sample

import "math"

// JSON constrains a generation to one JSON object (RFC 8259), what
// Ollama's format "json" and OpenAI's response_format json_object give:
// before each pick, Mask rules out every token whose text would not
// continue a valid object, and an end-of-generation token until the
// object is closed; once it is, only an end-of-generation token may come.
// Between tokens of the JSON text, whitespace is one space, or a newline
// and at most maxJSONSpace spaces or tabs of indent, so a model cannot idle
// in it (llama.cpp's JSON grammar bounds it the same way).
//
// It reads token text through piece (the bytes a token adds to the
// output; "" for control tokens, which are never allowed) and eog. A JSON
// is used by one generation, from one goroutine.
type JSON struct {
	piece   func(id int) string
	eog     func(id int) bool
	st      jsonState
	scratch []byte // a trial's container stack
}

// maxJSONSpace is the most indent (spaces or tabs after a newline) JSON
// allows.
const maxJSONSpace = 20

// NewJSON returns a JSON constraint over a vocabulary whose token texts
// piece returns, eog telling which ids end a generation.
func NewJSON(piece func(id int) string, eog func(id int) bool) *JSON {
	return &JSON{piece: piece, eog: eog, st: jsonState{mode: jValue}}
}

// Mask sets logits[id] to −Inf for every id that may not come next, and
// reports whether any id may.
func (j *JSON) Mask(logits []float32) bool {
	inf := float32(math.Inf(-1))
	done, any := j.st.complete(), false
	for id := range logits {
		ok := false
		if j.eog(id) {
			ok = done
		} else if p := j.piece(id); p != "" && !done {
			j.scratch = append(j.scratch[:0], j.st.stack...)
			t := j.st
			t.stack = j.scratch
			ok = t.feed(p)
			j.scratch = t.stack[:0]
		}
		if ok {
			any = true
		} else {
			logits[id] = inf
		}
	}
	return any
}

// Accept advances past token id (one Mask allowed).
func (j *JSON) Accept(id int) {
	if !j.eog(id) {
		j.st.feed(j.piece(id))
	}
}

// Complete reports whether the text so far is a whole JSON object.
func (j *JSON) Complete() bool { return j.st.complete() }

// JSONValid reports whether text is one JSON object as the constraint
// accepts it: whitespace as JSON allows it, nothing after the object.
func JSONValid(text string) bool {
	s := jsonState{mode: jValue}
	return s.feed(text) && s.complete()
}

// jsonState is a byte-level recognizer of a JSON object's prefixes.
type jsonState struct {
	stack []byte // open containers, '{' or '['
	mode  uint8
	sub   uint8 // a literal's remaining bytes (index into jLiterals) or hex digits left
	lit   string
	key   bool // the string being read is an object key
	space int  // the whitespace run: 0 none, −1 one space, n > 0 a newline and n−1 indent bytes
}

// Modes: what the next byte may be.
const (
	jValue      uint8 = iota // a value (at the top: an object)
	jKeyOrEnd                // after '{': a key or '}'
	jKey                     // after ',' in an object: a key
	jColon                   // after a key
	jValueOrEnd              // after '[': a value or ']'
	jAfter                   // after a value: ',' or the container's end
	jString                  // inside a string
	jEscape                  // after '\' in a string
	jHex                     // in \uXXXX
	jLiteral                 // inside true, false or null
	jMinus                   // after '-': a digit
	jZero                    // a number's leading 0
	jInt                     // integer digits
	jDot                     // after '.': a digit
	jFrac                    // fraction digits
	jExp                     // after e/E: sign or digit
	jExpSign                 // after the exponent's sign: a digit
	jExpDigits               // exponent digits
	jDone                    // the object is closed
)

// complete reports whether the top-level object is closed.
func (s *jsonState) complete() bool { return s.mode == jDone }

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
		switch {
		case c == '"':
			if s.key {
				s.key, s.mode = false, jColon
			} else {
				s.mode = jAfter
			}
		case c == '\\':
			s.mode = jEscape
		case c < 0x20:
			return false
		}
		return true
	case jEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.mode = jString
		case 'u':
			s.mode, s.sub = jHex, 4
		default:
			return false
		}
		return true
	case jHex:
		if !isDigit(c) && (c|0x20 < 'a' || c|0x20 > 'f') {
			return false
		}
		if s.sub--; s.sub == 0 {
			s.mode = jString
		}
		return true
	case jLiteral:
		if c != s.lit[s.sub] {
			return false
		}
		if s.sub++; int(s.sub) == len(s.lit) {
			s.mode = jAfter
		}
		return true
	case jMinus:
		switch {
		case c == '0':
			s.mode = jZero
		case isDigit(c):
			s.mode = jInt
		default:
			return false
		}
		return true
	case jZero, jInt:
		switch {
		case isDigit(c) && s.mode == jInt:
		case c == '.':
			s.mode = jDot
		case c == 'e' || c == 'E':
			s.mode = jExp
		default:
			return s.endNumber(c)
		}
		return true
	case jDot, jExpSign:
		if !isDigit(c) {
			return false
		}
		s.mode++ // jFrac, jExpDigits
		return true
	case jFrac:
		switch {
		case isDigit(c):
		case c == 'e' || c == 'E':
			s.mode = jExp
		default:
			return s.endNumber(c)
		}
		return true
	case jExp:
		switch {
		case c == '+' || c == '-':
			s.mode = jExpSign
		case isDigit(c):
			s.mode = jExpDigits
		default:
			return false
		}
		return true
	case jExpDigits:
		if isDigit(c) {
			return true
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
	case jValue, jValueOrEnd:
		if s.mode == jValueOrEnd && c == ']' {
			return s.close('[')
		}
		if len(s.stack) == 0 && c != '{' {
			return false // the top level is an object
		}
		return s.value(c)
	case jKeyOrEnd, jKey:
		if c == '}' && s.mode == jKeyOrEnd {
			return s.close('{')
		}
		if c != '"' {
			return false
		}
		s.mode, s.key = jString, true
		return true
	case jColon:
		if c != ':' {
			return false
		}
		s.mode = jValue
		return true
	case jAfter:
		top := s.stack[len(s.stack)-1]
		switch {
		case c == ',' && top == '{':
			s.mode = jKey
		case c == ',':
			s.mode = jValue
		case c == '}' || c == ']':
			return s.close(c - 2) // '}'-2 = '{', ']'-2 = '['
		default:
			return false
		}
		return true
	}
	return false
}

// value starts a value at c.
func (s *jsonState) value(c byte) bool {
	switch {
	case c == '{':
		s.stack = append(s.stack, '{')
		s.mode = jKeyOrEnd
	case c == '[':
		s.stack = append(s.stack, '[')
		s.mode = jValueOrEnd
	case c == '"':
		s.mode, s.key = jString, false
	case c == '-':
		s.mode = jMinus
	case c == '0':
		s.mode = jZero
	case isDigit(c):
		s.mode = jInt
	case c == 't':
		s.mode, s.lit, s.sub = jLiteral, "true", 1
	case c == 'f':
		s.mode, s.lit, s.sub = jLiteral, "false", 1
	case c == 'n':
		s.mode, s.lit, s.sub = jLiteral, "null", 1
	default:
		return false
	}
	return true
}

// endNumber ends a number at c, which then follows it as after a value
// (numbers are never at the top, so a container is open).
func (s *jsonState) endNumber(c byte) bool {
	s.mode = jAfter
	return s.step(c)
}

// close ends the innermost container, which must be open (a '{' or '[').
func (s *jsonState) close(open byte) bool {
	n := len(s.stack)
	if n == 0 || s.stack[n-1] != open {
		return false
	}
	s.stack = s.stack[:n-1]
	if len(s.stack) == 0 {
		s.mode = jDone
	} else {
		s.mode = jAfter
	}
	return true
}
