package tokenizer

// DeepSeek V3/R1 ("deepseek-v3"; also hunyuan-dense, joyai-llm, hy_v4):
//
//	"\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
//	"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
var ptDeepseek3 = &pretokenizer{"deepseek-v3", []stage{
	byMatches(digitsUpTo(3)),
	byMatches(runOf(func(c rune, _ uint8) bool { return dsKana.has(c) })),
	byMatches(deepseek3Matcher),
}}

var dsKana = newRuneSet([][2]rune{{0x3040, 0x309F}, {0x30A0, 0x30FF}, {0x4E00, 0x9FA5}})

// digitsUpTo matches \p{N}{1,n}.
func digitsUpTo(n int) matcher {
	return func(r *runes, p, hi int) (int, int) {
		q := p
		for q < hi && q-p < n && isN(r.cl[q]) {
			q++
		}
		return q - p, 1
	}
}

func deepseek3Matcher(r *runes, p, hi int) (int, int) {
	c, f := r.cp[p], r.cl[p]
	asciiLetter := func(c rune) bool { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') }
	ps := func(cl uint8) bool { return cl&(cPunct|cSymbol) != 0 }
	lm := func(cl uint8) bool { return cl&(cLetter|cMark) != 0 }
	// [!-/:-@[-`{-~][A-Za-z]+
	if c < 0x80 && c > ' ' && c != 0x7F && !asciiLetter(c) && !(c >= '0' && c <= '9') && p+1 < hi && asciiLetter(r.cp[p+1]) {
		q := p + 2
		for q < hi && asciiLetter(r.cp[q]) {
			q++
		}
		return q - p, 1
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	if c != '\r' && c != '\n' && !isL(f) && !ps(f) && p+1 < hi && lm(r.cl[p+1]) {
		q := p + 2
		for q < hi && lm(r.cl[q]) {
			q++
		}
		return q - p, 1
	}
	if lm(f) {
		q := p + 1
		for q < hi && lm(r.cl[q]) {
			q++
		}
		return q - p, 1
	}
	//  ?[\p{P}\p{S}]+[\r\n]*
	q := p
	if c == ' ' && p+1 < hi && ps(r.cl[p+1]) {
		q = p + 1
	}
	if q > p || ps(f) {
		for q < hi && ps(r.cl[q]) {
			q++
		}
		for q < hi && (r.cp[q] == '\r' || r.cp[q] == '\n') {
			q++
		}
		return q - p, 1
	}
	// \s*[\r\n]+ | \s+(?!\S) | \s+
	if n := spaceTail(r, p, hi); n > 0 {
		return n, 1
	}
	return 0, 1 // unmatched: joins the text between matches
}
