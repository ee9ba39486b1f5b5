package tokenizer

// gpt4oMatcher implements the pre-tokenizer llama.cpp runs for "gpt-4o"
// (o200k: Llama 4, Phi-4 and others) and, without contractions and with
// single digits, for "tekken" (Mistral Nemo, Pixtral). llama.cpp rewrites
// the case classes with lookaheads because std::regex lacks them:
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?
//	|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:...)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// so "upper" is a letter other than a-z and "lower" a letter other than
// A-Z: a non-ASCII letter is both, and marks (\p{M}) are neither. That is
// what llama.cpp tokenizes with, so it is what this scanner implements.
func gpt4oMatcher(contractions bool, maxDigits int) matcher {
	upper := func(r *runes, i int) bool { return isL(r.cl[i]) && !(r.cp[i] >= 'a' && r.cp[i] <= 'z') }
	lower := func(r *runes, i int) bool { return isL(r.cl[i]) && !(r.cp[i] >= 'A' && r.cp[i] <= 'Z') }
	contraction := func(r *runes, q, hi int) int {
		if !contractions {
			return 0
		}
		return contraction(r, q, hi)
	}
	// words tries both word alternatives with the letters starting at s.
	words := func(r *runes, s, hi int) int {
		u := s
		for u < hi && upper(r, u) {
			u++
		}
		// upper* lower+: the longest upper run that leaves a lower after it.
		for j := u; j >= s; j-- {
			if j < hi && lower(r, j) {
				q := j + 1
				for q < hi && lower(r, q) {
					q++
				}
				return q + contraction(r, q, hi)
			}
		}
		// upper+ lower*
		if u > s {
			q := u
			for q < hi && lower(r, q) {
				q++
			}
			return q + contraction(r, q, hi)
		}
		return -1
	}
	return func(r *runes, p, hi int) (int, int) {
		c, f := r.cp[p], r.cl[p]
		if c != '\r' && c != '\n' && !isL(f) && !isN(f) && p+1 < hi {
			if e := words(r, p+1, hi); e > 0 {
				return e - p, 1
			}
		}
		if e := words(r, p, hi); e > 0 {
			return e - p, 1
		}
		if isN(f) {
			q := p + 1
			for q < hi && q-p < maxDigits && isN(r.cl[q]) {
				q++
			}
			return q - p, 1
		}
		//  ?[^\s\p{L}\p{N}]+[\r\n/]*
		q := p
		if c == ' ' && p+1 < hi && isOther(r.cl[p+1]) {
			q = p + 1
		}
		if q > p || isOther(f) {
			for q < hi && isOther(r.cl[q]) {
				q++
			}
			for q < hi && (r.cp[q] == '\r' || r.cp[q] == '\n' || r.cp[q] == '/') {
				q++
			}
			return q - p, 1
		}
		// \s*[\r\n]+ | \s+(?!\S) | \s+
		if n := spaceTail(r, p, hi); n > 0 {
			return n, 1
		}
		return 1, 1
	}
}

var (
	ptGPT4o  = &pretokenizer{"gpt-4o", []stage{byMatches(gpt4oMatcher(true, 3))}}
	ptTekken = &pretokenizer{"tekken", []stage{byMatches(gpt4oMatcher(false, 1))}}
)
