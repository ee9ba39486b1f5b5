package tokenizer

// gpt2Stage implements GPT-2's expression
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// exactly as llama.cpp's unicode_regex_split_custom_gpt2 scans it,
// including its one departure from the expression: an unassigned code
// point is not in [^\s\p{L}\p{N}] and becomes a piece of its own.
func gpt2Stage(r *runes, lo, hi int, ends []int) []int {
	cl := func(i int) uint8 {
		if i < hi {
			return r.cl[i]
		}
		return 0
	}
	other := func(c uint8) bool { return isOther(c) && c != 0 }
	for p := lo; p < hi; {
		c := r.cp[p]
		if c == '\'' && p+1 < hi {
			switch r.cp[p+1] {
			case 's', 't', 'm', 'd':
				p += 2
				ends = append(ends, p)
				continue
			}
			if p+2 < hi {
				a, b := r.cp[p+1], r.cp[p+2]
				if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
					p += 3
					ends = append(ends, p)
					continue
				}
			}
		}
		f2 := r.cl[p]
		q := p
		if c == ' ' {
			f2 = cl(p + 1)
			q++
		}
		switch {
		case isL(f2):
			for q < hi && isL(r.cl[q]) {
				q++
			}
		case isN(f2):
			for q < hi && isN(r.cl[q]) {
				q++
			}
		case other(f2):
			for q < hi && other(r.cl[q]) {
				q++
			}
		default:
			q = p
			for q < hi && isS(r.cl[q]) {
				q++
			}
			switch n := q - p; {
			case n > 1 && q < hi: // \s+(?!\S)
				q--
			case n == 0: // no expression matches
				q = p + 1
			}
		}
		p = q
		ends = append(ends, p)
	}
	return ends
}

// llama3Matcher implements Llama 3's expression (and Qwen2's, which takes
// single digits):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// strict reproduces llama.cpp's custom scanner (used for Llama 3), whose
// [^\s\p{L}\p{N}] leaves out unassigned code points; Qwen2's expression
// runs through std::regex there, where they are included.
func llama3Matcher(maxDigits int, strict, marks bool) matcher {
	var letter uint8 = cLetter
	if marks { // Qwen3.5: [\p{L}\p{M}]+ and [^\s\p{L}\p{M}\p{N}]
		letter |= cMark
	}
	isL := func(c uint8) bool { return c&letter != 0 }
	isOther := func(c uint8) bool { return c&(cSpace|letter|cNumber) == 0 }
	return func(r *runes, p, hi int) (int, int) {
		cl := func(i int) uint8 {
			if i < hi {
				return r.cl[i]
			}
			return 0
		}
		other := func(c uint8) bool { return isOther(c) && (c != 0 || !strict) }
		c := r.cp[p]
		if n := contraction(r, p, hi); n > 0 {
			return n, 1
		}
		f := r.cl[p]
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if c != '\r' && c != '\n' && !isN(f) && (isL(f) || isL(cl(p+1))) {
			q := p + 1
			for q < hi && isL(r.cl[q]) {
				q++
			}
			return q - p, 1
		}
		// \p{N}{1,maxDigits}
		if isN(f) {
			q := p + 1
			for q < hi && q-p < maxDigits && isN(r.cl[q]) {
				q++
			}
			return q - p, 1
		}
		//  ?[^\s\p{L}\p{N}]+[\r\n]*
		q, take := p, false
		if strict {
			f2 := f
			if c == ' ' {
				f2, q = cl(p+1), p+1
			}
			take = isOther(f2) && f != 0
		} else {
			if c == ' ' && p+1 < hi && isOther(r.cl[p+1]) {
				q = p + 1
			}
			take = q > p || isOther(f)
		}
		if take {
			for q < hi && other(r.cl[q]) {
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
		return 1, 1 // no expression matches
	}
}

// spaceTail matches \s*[\r\n]+|\s+(?!\S)|\s+ at p (the last three
// alternatives of the Llama 3 family of expressions); 0 if r[p] is not
// whitespace.
func spaceTail(r *runes, p, hi int) int {
	q, lastRN := p, -1
	for q < hi && isS(r.cl[q]) {
		if r.cp[q] == '\r' || r.cp[q] == '\n' {
			lastRN = q + 1
		}
		q++
	}
	switch n := q - p; {
	case lastRN > 0:
		return lastRN - p
	case n > 1 && q < hi:
		return n - 1
	default:
		return n
	}
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at q; 0 if none.
func contraction(r *runes, q, hi int) int {
	if q+1 >= hi || r.cp[q] != '\'' {
		return 0
	}
	switch lowerASCII(r.cp[q+1]) {
	case 's', 't', 'm', 'd':
		return 2
	}
	if q+2 < hi {
		a, b := lowerASCII(r.cp[q+1]), lowerASCII(r.cp[q+2])
		if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
			return 3
		}
	}
	return 0
}

func lowerASCII(c rune) rune {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
