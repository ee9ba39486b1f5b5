package tokenizer

import (
	"slices"
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
	cp    []rune
	cl    []uint8
	clean bool // every code point is spelled as in the text (no U+FFFD was substituted)
}

func (s *runes) reset(text string) {
	s.cp, s.cl = slices.Grow(s.cp[:0], len(text)), slices.Grow(s.cl[:0], len(text))
	s.clean = true
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			s.cp = append(s.cp, rune(c))
			s.cl = append(s.cl, asciiClass[c])
			i++
			continue
		}
		r, n := decodeCpt(text[i:])
		if n == 1 || cptLen(r) != n { // invalid byte, or an overlong form
			s.clean = false
		}
		s.cp = append(s.cp, r)
		s.cl = append(s.cl, classOf(r))
		i += n
	}
}

// decodeCpt decodes one code point the way llama.cpp's
// unicode_cpt_from_utf8 does: lead and continuation bits are checked, but
// surrogates and overlong forms are accepted. An invalid byte is U+FFFD of
// length 1 (unicode_cpts_from_utf8), and so is a sequence above U+10FFFF
// (which llama.cpp cannot encode back).
func decodeCpt(b string) (rune, int) {
	c := b[0]
	cont := func(i int) bool { return i < len(b) && b[i]&0xC0 == 0x80 }
	switch {
	case c < 0x80:
		return rune(c), 1
	case c&0x40 == 0:
	case c&0x20 == 0:
		if cont(1) {
			return rune(c&0x1F)<<6 | rune(b[1]&0x3F), 2
		}
	case c&0x10 == 0:
		if cont(1) && cont(2) {
			return rune(c&0x0F)<<12 | rune(b[1]&0x3F)<<6 | rune(b[2]&0x3F), 3
		}
	case c&0x08 == 0:
		if cont(1) && cont(2) && cont(3) {
			if r := rune(c&0x07)<<18 | rune(b[1]&0x3F)<<12 | rune(b[2]&0x3F)<<6 | rune(b[3]&0x3F); r <= 0x10FFFF {
				return r, 4
			}
		}
	}
	return 0xFFFD, 1
}

// appendCpt appends the UTF-8 form of r without Go's surrogate check
// (llama.cpp's unicode_cpt_to_utf8).
func appendCpt(b []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return append(b, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
}

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

// cptLen is the length appendCpt writes for r.
func cptLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}
