package tokenizer

import "fmt"

// A pre-tokenizer cuts text into words before BPE runs. llama.cpp describes
// each one as a list of regular expressions applied in turn (llm_tokenizer_bpe
// in llama-vocab.cpp, unicode_regex_split in unicode.cpp): every expression
// splits each current piece into its matches and the unmatched text between
// them, which stays as pieces of its own. Go's regexp has no lookahead, so
// each expression here is a hand-written scanner; the comment above each
// one is the expression it implements.

// stage splits r[lo:hi] and appends the end offset of every piece.
type stage func(r *runes, lo, hi int, ends []int) []int

type pretokenizer struct {
	name   string
	stages []stage
}

// split returns the end offsets of the words of r; tmp is scratch.
func (p *pretokenizer) split(r *runes, ends, tmp []int) ([]int, []int) {
	ends = append(ends[:0], len(r.cp))
	for _, st := range p.stages {
		tmp = tmp[:0]
		lo := 0
		for _, hi := range ends {
			if hi > lo {
				tmp = st(r, lo, hi, tmp)
			}
			lo = hi
		}
		ends, tmp = tmp, ends
	}
	return ends, tmp
}

// matcher reports the length of the match starting at p (anchored), or 0
// and how far the search may skip ahead (at least 1).
type matcher func(r *runes, p, hi int) (n, skip int)

// byMatches turns a matcher into a stage with regex-iterator semantics:
// leftmost matches, unmatched runs kept as pieces.
func byMatches(m matcher) stage {
	return func(r *runes, lo, hi int, ends []int) []int {
		gap := lo
		for p := lo; p < hi; {
			n, skip := m(r, p, hi)
			if n == 0 {
				p += max(skip, 1)
				continue
			}
			if gap < p {
				ends = append(ends, p)
			}
			p += n
			ends = append(ends, p)
			gap = p
		}
		if gap < hi {
			ends = append(ends, hi)
		}
		return ends
	}
}

// Pre-tokenizer names (tokenizer.ggml.pre) and llama.cpp's settings for
// them. An absent key means "default".
type preConfig struct {
	pt           *pretokenizer
	ignoreMerges bool
	addBOS       bool
}

func lookupPre(name string) (preConfig, error) {
	switch name {
	case "", "default":
		return preConfig{pt: ptDefault}, nil
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2":
		return preConfig{pt: ptLlama3, ignoreMerges: true, addBOS: true}, nil
	case "dbrx", "smaug-bpe":
		return preConfig{pt: ptLlama3}, nil
	case "deepseek-llm":
		return preConfig{pt: ptDeepseekLLM}, nil
	case "deepseek-coder":
		return preConfig{pt: ptDeepseekCoder}, nil
	case "falcon":
		return preConfig{pt: ptFalcon}, nil
	case "gpt-2", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de",
		"gigachat", "a.x-4.0", "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe",
		"exaone4", "trillion", "granite-docling":
		return preConfig{pt: ptGPT2}, nil
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2":
		return preConfig{pt: ptStarcoder}, nil
	case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "megrez", "hunyuan", "solar-open", "grok-2":
		return preConfig{pt: ptQwen2}, nil
	case "qwen35":
		return preConfig{pt: ptQwen35}, nil
	case "chatglm-bpe", "glm4":
		return preConfig{pt: ptLlama3}, nil
	case "bloom", "poro-chat", "gpt3-finnish":
		return preConfig{pt: ptBloom}, nil
	case "viking":
		return preConfig{pt: ptViking}, nil
	case "gpt-4o", "llama4", "kanana2":
		return preConfig{pt: ptGPT4o}, nil
	case "deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4":
		return preConfig{pt: ptDeepseek3}, nil
	case "tekken":
		return preConfig{pt: ptTekken, ignoreMerges: true, addBOS: true}, nil
	}
	return preConfig{}, fmt.Errorf("%w: pre-tokenizer %q", ErrUnsupported, name)
}

var (
	ptGPT2   = &pretokenizer{"gpt-2", []stage{gpt2Stage}}
	ptLlama3 = &pretokenizer{"llama3", []stage{byMatches(llama3Matcher(3, true, false))}}
	ptQwen2  = &pretokenizer{"qwen2", []stage{byMatches(llama3Matcher(1, false, false))}}
	ptQwen35 = &pretokenizer{"qwen35", []stage{byMatches(llama3Matcher(1, false, true))}}
	// "[\p{P}\$\+<=>\^~\|`]+", gpt-2, "[0-9][0-9][0-9]"
	ptFalcon = &pretokenizer{"falcon", []stage{
		byMatches(runOf(func(c rune, cl uint8) bool { return cl&cPunct != 0 || isFalconSym(c) })),
		gpt2Stage,
		byMatches(threeDigits),
	}}
	// "\p{N}", gpt-2
	ptStarcoder = &pretokenizer{"starcoder", []stage{byMatches(oneOf(func(c rune, cl uint8) bool { return isN(cl) })), gpt2Stage}}
	// "[\p{P}\$\+<=>\^~\|]+", gpt-2, "\p{N}+", "[0-9][0-9][0-9]"
	ptDefault = &pretokenizer{"default", []stage{
		byMatches(runOf(func(c rune, cl uint8) bool { return cl&cPunct != 0 || (c != '`' && isFalconSym(c)) })),
		gpt2Stage,
		byMatches(runOf(func(c rune, cl uint8) bool { return isN(cl) })),
		byMatches(threeDigits),
	}}
	// "[\r\n]", "\s?[<cased letters>]+", "\s?[!-/:-~！-／：-～‘-‟　-。]+", "\s+$",
	// "[一-龥ࠀ-一가-퟿]+", "\p{N}+"
	ptDeepseekLLM = &pretokenizer{"deepseek-llm", []stage{
		byMatches(oneOf(func(c rune, _ uint8) bool { return c == '\r' || c == '\n' })),
		byMatches(spaceThenRun(func(c rune, _ uint8) bool { return dsCased.has(c) })),
		byMatches(spaceThenRun(func(c rune, _ uint8) bool { return dsPunct.has(c) })),
		byMatches(trailingSpace),
		byMatches(runOf(func(c rune, _ uint8) bool { return dsCJK.has(c) })),
		byMatches(runOf(func(c rune, cl uint8) bool { return isN(cl) })),
	}}
	// "[\r\n]", "\s?\p{L}+", "\s?\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\p{N}"
	ptDeepseekCoder = &pretokenizer{"deepseek-coder", []stage{
		byMatches(oneOf(func(c rune, _ uint8) bool { return c == '\r' || c == '\n' })),
		byMatches(spaceThenRun(func(c rune, cl uint8) bool { return isL(cl) })),
		byMatches(spaceThenRun(func(c rune, cl uint8) bool { return cl&cPunct != 0 })),
		byMatches(runOf(func(c rune, _ uint8) bool { return dsCJK.has(c) })),
		byMatches(oneOf(func(c rune, cl uint8) bool { return isN(cl) })),
	}}
)

// " ?[^(\s|.,!?…。，、।۔،)]+" (BLOOM; Viking adds "\p{N}")
var (
	ptBloom  = &pretokenizer{"bloom", []stage{byMatches(bloomWord)}}
	ptViking = &pretokenizer{"viking", []stage{byMatches(bloomWord), byMatches(oneOf(func(c rune, cl uint8) bool { return isN(cl) }))}}
)

// bloomWord matches " ?[^(\s|.,!?…。，、।۔،)]+": inside the brackets the
// parentheses and the bar are literal characters.
func bloomWord(r *runes, p, hi int) (int, int) {
	word := func(i int) bool {
		if isS(r.cl[i]) {
			return false
		}
		switch r.cp[i] {
		case '(', '|', ')', '.', ',', '!', '?', '…', '。', '，', '、', '।', '۔', '،':
			return false
		}
		return true
	}
	q := p
	if r.cp[p] == ' ' && p+1 < hi && word(p+1) {
		q++
	}
	s := q
	for q < hi && word(q) {
		q++
	}
	if q == s {
		return 0, 1
	}
	return q - p, 1
}

// isFalconSym: the ASCII symbols the falcon/default punctuation class adds
// to \p{P}: $ + < = > ^ ~ | `.
func isFalconSym(c rune) bool {
	switch c {
	case '$', '+', '<', '=', '>', '^', '~', '|', '`':
		return true
	}
	return false
}

type pred func(c rune, cl uint8) bool

// runOf matches X+.
func runOf(x pred) matcher {
	return func(r *runes, p, hi int) (int, int) {
		q := p
		for q < hi && x(r.cp[q], r.cl[q]) {
			q++
		}
		return q - p, 1
	}
}

// oneOf matches X (one code point).
func oneOf(x pred) matcher {
	return func(r *runes, p, hi int) (int, int) {
		if x(r.cp[p], r.cl[p]) {
			return 1, 1
		}
		return 0, 1
	}
}

// spaceThenRun matches \s?X+.
func spaceThenRun(x pred) matcher {
	return func(r *runes, p, hi int) (int, int) {
		q := p
		if isS(r.cl[p]) && p+1 < hi && x(r.cp[p+1], r.cl[p+1]) {
			q++
		}
		s := q
		for q < hi && x(r.cp[q], r.cl[q]) {
			q++
		}
		if q == s {
			return 0, 1
		}
		return q - p, 1
	}
}

// threeDigits matches [0-9][0-9][0-9].
func threeDigits(r *runes, p, hi int) (int, int) {
	if p+3 <= hi && isDigit(r.cp[p]) && isDigit(r.cp[p+1]) && isDigit(r.cp[p+2]) {
		return 3, 1
	}
	return 0, 1
}

func isDigit(c rune) bool { return c >= '0' && c <= '9' }

// trailingSpace matches \s+$ ($: end of the piece).
func trailingSpace(r *runes, p, hi int) (int, int) {
	q := p
	for q < hi && isS(r.cl[q]) {
		q++
	}
	if q > p && q == hi {
		return q - p, 1
	}
	return 0, q - p + 1
}

// runeSet is a range table with a direct ASCII lookup.
type runeSet struct {
	ascii  [128]bool
	ranges [][2]rune
}

func newRuneSet(ranges [][2]rune) *runeSet {
	s := &runeSet{ranges: ranges}
	for c := range s.ascii {
		s.ascii[c] = inRanges(rune(c), ranges)
	}
	return s
}

func (s *runeSet) has(c rune) bool {
	if c >= 0 && c < 128 {
		return s.ascii[c]
	}
	return inRanges(c, s.ranges)
}

var (
	dsCased = newRuneSet(deepseekCased)
	dsPunct = newRuneSet(deepseekPunct)
	dsCJK   = newRuneSet(deepseekCJK)
)

func inRanges(c rune, t [][2]rune) bool {
	lo, hi := 0, len(t)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case c < t[m][0]:
			hi = m
		case c > t[m][1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}
