package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Character classes of one code point, as bits. They follow the Unicode
// general categories the reference regexes name: \p{L}, \p{N}, \p{P},
// \p{S}, \p{M}, the White_Space property (\s) and "assigned at all".
const (
	cLetter  uint8 = 1 << iota // \p{L}
	cNumber                    // \p{N}
	cPunct                     // \p{P}
	cSymbol                    // \p{S}
	cMark                      // \p{M}
	cSpace                     // \s (Unicode White_Space)
	cControl                   // \p{C} except unassigned
	cDefined                   // any assigned code point
)

var (
	bmpOnce  sync.Once
	bmpClass []uint8 // class of every code point below 0x10000
)

// classOf returns the class bits of r.
func classOf(r rune) uint8 {
	if r < 0x10000 && r >= 0 {
		bmpOnce.Do(buildBMP)
		return bmpClass[r]
	}
	return computeClass(r)
}

func buildBMP() {
	t := make([]uint8, 0x10000)
	for r := range t {
		t[r] = computeClass(rune(r))
	}
	bmpClass = t
}

func computeClass(r rune) uint8 {
	var c uint8
	switch {
	case unicode.IsLetter(r):
		c = cLetter
	case unicode.IsNumber(r):
		c = cNumber
	case unicode.IsPunct(r):
		c = cPunct
	case unicode.IsSymbol(r):
		c = cSymbol
	case unicode.IsMark(r):
		c = cMark
	case unicode.Is(unicode.C, r):
		c = cControl
	case unicode.Is(unicode.Z, r):
		// separators: all of them are White_Space below
	default:
		return 0 // unassigned (Cn)
	}
	if unicode.IsSpace(r) {
		c |= cSpace
	}
	return c | cDefined
}

// runes is a text as code points with their classes. Invalid UTF-8 bytes
// become U+FFFD, one per byte, like llama.cpp's unicode_cpts_from_utf8.
type runes struct {
	cp []rune
	cl []uint8
}

func (s *runes) reset(text string) {
	s.cp, s.cl = s.cp[:0], s.cl[:0]
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			s.cp = append(s.cp, rune(c))
			s.cl = append(s.cl, asciiClass[c])
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && n == 1 {
			r = 0xFFFD
		}
		if !strictUTF8(text[i:i+n], r) {
			r, n = 0xFFFD, 1
		}
		s.cp = append(s.cp, r)
		s.cl = append(s.cl, classOf(r))
		i += n
	}
}

// strictUTF8 is true for sequences llama.cpp's decoder also accepts. Go's
// decoder is stricter (it rejects surrogates and overlong forms), which
// only matters for input that is invalid anyway.
func strictUTF8(b string, r rune) bool { return r != utf8.RuneError || b == "\uFFFD" }

var asciiClass = func() (t [128]uint8) {
	for r := range t {
		t[r] = computeClass(rune(r))
	}
	return t
}()

// Convenience tests on class bits.
func isL(c uint8) bool     { return c&cLetter != 0 }
func isN(c uint8) bool     { return c&cNumber != 0 }
func isS(c uint8) bool     { return c&cSpace != 0 }
func isOther(c uint8) bool { return c&(cSpace|cLetter|cNumber) == 0 } // [^\s\p{L}\p{N}]
