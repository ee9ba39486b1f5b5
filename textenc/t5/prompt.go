package t5

import (
	"html"
	"strings"
	"unicode"
)

// DefaultNegativePrompt is Wan 2.1's sample_neg_prompt
// (wan/configs/shared_config.py), which WanT2V.generate uses when the
// negative prompt is empty.
const DefaultNegativePrompt = "色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，低质量，JPEG压缩残留，丑陋的，残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，毁容的，形态畸形的肢体，手指融合，静止不动的画面，杂乱的背景，三条腿，背景人很多，倒着走"

// NegativePrompt returns s, or DefaultNegativePrompt when s is "".
func NegativePrompt(s string) string {
	if s == "" {
		return DefaultNegativePrompt
	}
	return s
}

// CleanPrompt is Wan's text cleaning before tokenization
// (wan/modules/tokenizers.py, clean='whitespace':
// whitespace_clean(basic_clean(text))) without its first step, ftfy's
// fix_text: HTML entities decoded twice, the ends stripped, every run of
// whitespace one space. fix_text's repairs (mojibake, curly quotes,
// terminal escapes) are not made; its width and ligature fixes and NFC are
// subsumed by the tokenizer's NFKC map.
//
// Whitespace is Python's: the runs are those of regex's \s (Unicode
// White_Space, unicode.IsSpace), the ends str.strip's, which also takes
// U+001C..U+001F.
func CleanPrompt(text string) string {
	text = strings.TrimFunc(unescape(unescape(text)), pyIsSpace)
	var b strings.Builder
	b.Grow(len(text))
	inSpace := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			if !inSpace {
				b.WriteByte(' ')
			}
			inSpace = true
			continue
		}
		inSpace = false
		b.WriteRune(r)
	}
	return strings.TrimFunc(b.String(), pyIsSpace)
}

// unescape is Python's html.unescape: Go's html.UnescapeString, except
// that "&#" or "&#x" with no digit after it stays as it is (Python's
// character-reference pattern needs a digit; Go writes U+FFFD).
func unescape(s string) string {
	var b strings.Builder
	start := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '&' || s[i+1] != '#' {
			continue
		}
		j := i + 2
		hex := j < len(s) && (s[j] == 'x' || s[j] == 'X')
		if hex {
			j++
		}
		if j < len(s) && (isDigit(s[j]) || hex && isHexLetter(s[j])) {
			continue
		}
		b.WriteString(html.UnescapeString(s[start:i]))
		b.WriteString(s[i:j])
		start, i = j, j-1
	}
	if start == 0 {
		return html.UnescapeString(s)
	}
	b.WriteString(html.UnescapeString(s[start:]))
	return b.String()
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isHexLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'f' }

// pyIsSpace is Python's str.isspace for one character.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }
