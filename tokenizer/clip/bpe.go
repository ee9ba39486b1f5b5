package clip

import "strings"

// Encode returns the BPE ids of text as stable-diffusion.cpp's
// CLIPTokenizer::encode does: no emphasis parsing, no BOS/EOS, no padding.
// The text is normalized (whitespace collapsed, trimmed, ASCII letters
// lowercased), "<|startoftext|>" and "<|endoftext|>" become their ids,
// the rest is split into words, numbers and other runs and each piece is
// merged by BPE.
func Encode(text string) ([]int32, error) {
	t, err := vocab()
	if err != nil {
		return nil, err
	}
	var s scratch
	return s.encode(t, text, nil), nil
}

// scratch is the per-call working memory of the BPE merges.
type scratch struct {
	syms []symbol
	heap []candidate
	done []int32 // symbols merged in the current pass
}

// encode appends the ids of text to out.
func (s *scratch) encode(t *tables, text string, out []int32) []int32 {
	text = normalize(text)
	for text != "" {
		i, special := nextSpecial(text)
		for _, piece := range splitPieces(text[:i]) {
			out = s.bpe(t, piece, out)
		}
		if special == "" {
			break
		}
		out = append(out, specialID(special))
		text = text[i+len(special):]
	}
	return out
}

// isSpace is the C locale's isspace (std::regex's \s and strip's set).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// normalize is CLIPTokenizer::normalize: every run of ASCII whitespace
// becomes one space (std::regex_replace(\s+, " ")), the ends are trimmed
// and A–Z lowercased (std::tolower in the C locale). Nothing else changes:
// no Unicode case folding, no HTML unescaping, no ftfy.
func normalize(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	space := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if isSpace(c) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

const (
	startText = "<|startoftext|>"
	endText   = "<|endoftext|>"
)

// nextSpecial returns the position of the first special token in text and
// the token, or len(text) and "" (split_with_special_tokens).
func nextSpecial(text string) (int, string) {
	i, j := strings.Index(text, startText), strings.Index(text, endText)
	switch {
	case i < 0 && j < 0:
		return len(text), ""
	case j < 0 || i >= 0 && i < j:
		return i, startText
	}
	return j, endText
}

func specialID(s string) int32 {
	if s == startText {
		return BOS
	}
	return EOS
}

// splitPieces is CLIPTokenizer::token_split, the regex
//
//	's|'t|'re|'ve|'m|'ll|'d|[[:alpha:]]+|[[:digit:]]|[^[:space:][:alpha:][:digit:]]+
//
// over bytes in the C locale, as a scanner: the first alternative that
// matches at the leftmost position wins; spaces separate pieces and are
// dropped. [[:alpha:]] is ASCII letters only, so a non-ASCII byte belongs
// to the "other" class and joins the punctuation and emoji next to it
// ("café" → "caf", "é").
func splitPieces(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		c := text[i]
		j := i + 1
		switch {
		case isSpace(c):
			i++
			continue
		case c == '\'' && contraction(text[i+1:]) > 0:
			j = i + 1 + contraction(text[i+1:])
		case isAlpha(c):
			for j < len(text) && isAlpha(text[j]) {
				j++
			}
		case isDigit(c):
		default:
			for j < len(text) && !isSpace(text[j]) && !isAlpha(text[j]) && !isDigit(text[j]) {
				j++
			}
		}
		out = append(out, text[i:j])
		i = j
	}
	return out
}

// contraction returns the length of the contraction suffix ('s 't 're 've
// 'm 'll 'd, case-insensitive) that rest (the text after an apostrophe)
// starts with, or 0.
func contraction(rest string) int {
	for _, c := range [...]string{"s", "t", "re", "ve", "m", "ll", "d"} {
		if len(rest) >= len(c) && strings.EqualFold(rest[:len(c)], c) {
			return len(c)
		}
	}
	return 0
}

// symbol is one symbol of a word being merged: its id and its neighbours
// (indices into the word; -1 and len mark the ends). A merged-away symbol
// has id -1.
type symbol struct {
	id         int32
	prev, next int32
}

// candidate is an adjacent pair that a merge applies to: the left
// symbol's index, the ids the pair had when it was found, and the merge.
type candidate struct {
	rank        int32
	pos         int32
	left, right int32
	merged      int32
}

func (a candidate) less(b candidate) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// bpe appends the ids of one piece (BPETokenizer::bpe). The reference
// merges, in passes, every occurrence of the adjacent pair with the lowest
// rank from left to right until no pair has a rank. Here the candidates
// sit in a heap ordered by (rank, position): one pass pops all candidates
// of the lowest rank in position order, skipping those a merge has
// overtaken, and the pairs the pass created enter the heap after it, so
// the result is the reference's for any merge list, in O(n log n) rather
// than O(n²) for a long run of symbols.
func (s *scratch) bpe(t *tables, piece string, out []int32) []int32 {
	n := len(piece)
	if n == 1 {
		return append(out, t.byteEndID[piece[0]])
	}
	s.syms = s.syms[:0]
	for i := range n {
		id := t.byteID[piece[i]]
		if i == n-1 {
			id = t.byteEndID[piece[i]]
		}
		s.syms = append(s.syms, symbol{id: id, prev: int32(i - 1), next: int32(i + 1)})
	}
	s.heap = s.heap[:0]
	for i := range n - 1 {
		s.push(t, int32(i))
	}
	for len(s.heap) > 0 {
		rank := s.heap[0].rank
		s.done = s.done[:0]
		for len(s.heap) > 0 && s.heap[0].rank == rank {
			c := s.pop()
			l := &s.syms[c.pos]
			if l.id != c.left || l.next >= int32(n) || s.syms[l.next].id != c.right {
				continue // overtaken by an earlier merge of this pass
			}
			r := &s.syms[l.next]
			l.id, r.id = c.merged, -1
			l.next = r.next
			if r.next < int32(n) {
				s.syms[r.next].prev = c.pos
			}
			s.done = append(s.done, c.pos)
		}
		for _, p := range s.done {
			if s.syms[p].id < 0 {
				continue
			}
			if q := s.syms[p].prev; q >= 0 {
				s.push(t, q)
			}
			s.push(t, p)
		}
	}
	for i := int32(0); i < int32(n); i = s.syms[i].next {
		out = append(out, s.syms[i].id)
	}
	return out
}

// push adds the pair starting at symbol i if a merge applies to it.
func (s *scratch) push(t *tables, i int32) {
	l := s.syms[i]
	if l.next >= int32(len(s.syms)) {
		return
	}
	r := s.syms[l.next].id
	m, ok := t.merges[uint64(l.id)<<32|uint64(r)]
	if !ok {
		return
	}
	s.heap = append(s.heap, candidate{rank: int32(m >> 32), pos: i, left: l.id, right: r, merged: int32(uint32(m))})
	for j := len(s.heap) - 1; j > 0; {
		p := (j - 1) / 2
		if !s.heap[j].less(s.heap[p]) {
			break
		}
		s.heap[j], s.heap[p] = s.heap[p], s.heap[j]
		j = p
	}
}

func (s *scratch) pop() candidate {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for j := 0; ; {
		c := 2*j + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1].less(h[c]) {
			c++
		}
		if !h[c].less(h[j]) {
			break
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
	s.heap = h
	return top
}
