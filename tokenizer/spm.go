package tokenizer

import "fmt"

// SentencePiece-style BPE as llama.cpp runs it (llm_tokenizer_spm, after
// llama.cpp commit 074bea2): the text is split into UTF-8 characters; the
// adjacent pair whose concatenation is the token with the highest score is
// merged (ties: leftmost), until no pair is a token. A final symbol that is
// not a token is written as byte tokens (<0xNN>).

type spmSym struct {
	start, n   int32 // byte range in the escaped text
	prev, next int32 // neighbours in the chain, -1 at the ends
}

type spmPair struct {
	left, right int32
	score       float32
	size        int32
}

// spmHeap is a max-heap on score, leftmost first on ties.
type spmHeap []spmPair

func (h spmHeap) less(i, j int) bool {
	return h[i].score > h[j].score || (h[i].score == h[j].score && h[i].left < h[j].left)
}

func (h *spmHeap) push(p spmPair) {
	*h = append(*h, p)
	a := *h
	for i := len(a) - 1; i > 0; {
		up := (i - 1) / 2
		if !a.less(i, up) {
			break
		}
		a[i], a[up] = a[up], a[i]
		i = up
	}
}

func (h *spmHeap) pop() spmPair {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(a) && a.less(l, m) {
			m = l
		}
		if r < len(a) && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// utf8Len is the sequence length announced by a UTF-8 lead byte, as
// llama.cpp's unicode_len_utf8 computes it (continuation bytes count as 1).
func utf8Len(c byte) int32 {
	return [16]int32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[c>>4]
}

// encodeSPM appends the tokens of one escaped fragment. Merges never
// cross a "▁" whose preceding character no token joins to "▁" (t.spmGlue):
// no symbol can span such a boundary, so the text is cut there and each
// piece merged alone. That gives the reference's result (see
// TestSPMChunking) with small queues instead of one queue for the text.
func (t *Tokenizer) encodeSPM(text []byte, out []int) ([]int, error) {
	st, ok := t.scratch.Get().(*spmState)
	if !ok {
		st = &spmState{cache: map[string][]int32{}}
	}
	defer t.scratch.Put(st)
	if st.owner != t {
		clear(st.cache)
		st.owner = t
	}
	start, prev := 0, 0
	var err error
	for off := 0; off < len(text); {
		n := int(min(utf8Len(text[off]), int32(len(text)-off)))
		if off > start && n == 3 && text[off] == 0xE2 && text[off+1] == 0x96 && text[off+2] == 0x81 &&
			!t.spmGlue[string(text[prev:off])] {
			if out, err = t.encodeSPMCached(st, text[start:off], out); err != nil {
				return nil, err
			}
			start = off
		}
		prev = off
		off += n
	}
	return t.encodeSPMCached(st, text[start:], out)
}

// spmState is per-call scratch, pooled; cache maps a piece to its ids and
// is valid for owner only.
type spmState struct {
	owner *Tokenizer
	cache map[string][]int32
	syms  []spmSym
	heap  spmHeap
	ids   []int
}

func (t *Tokenizer) encodeSPMCached(st *spmState, piece []byte, out []int) ([]int, error) {
	if ids, ok := st.cache[string(piece)]; ok {
		for _, id := range ids {
			out = append(out, int(id))
		}
		return out, nil
	}
	n := len(out)
	out, err := t.encodeSPMWhole(st, piece, out)
	if err != nil || len(piece) > 64 {
		return out, err
	}
	if len(st.cache) >= cacheLimit {
		clear(st.cache)
	}
	ids := make([]int32, len(out)-n)
	for i, id := range out[n:] {
		ids[i] = int32(id)
	}
	st.cache[string(piece)] = ids
	return out, nil
}

// encodeSPMWhole merges text as one piece, exactly as the reference does.
func (t *Tokenizer) encodeSPMWhole(st *spmState, text []byte, out []int) ([]int, error) {
	if len(text) == 0 {
		return out, nil
	}
	syms := st.syms[:0]
	defer func() { st.syms = syms[:0] }()
	for off := int32(0); off < int32(len(text)); {
		n := min(utf8Len(text[off]), int32(len(text))-off)
		i := int32(len(syms))
		syms = append(syms, spmSym{start: off, n: n, prev: i - 1, next: i + 1})
		off += n
	}
	syms[len(syms)-1].next = -1
	h := st.heap[:0]
	defer func() { st.heap = h[:0] }()
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		s := text[syms[l].start : syms[l].start+syms[l].n+syms[r].n]
		if id, ok := t.ids[string(s)]; ok {
			h.push(spmPair{left: l, right: r, score: t.scores[id], size: int32(len(s))})
		}
	}
	for i := int32(1); i < int32(len(syms)); i++ {
		try(i-1, i)
	}
	for len(h) > 0 {
		p := h.pop()
		l, r := &syms[p.left], &syms[p.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != p.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = p.left
		}
		try(l.prev, p.left)
		try(p.left, l.next)
	}
	for i := int32(0); i != -1; i = syms[i].next {
		s := text[syms[i].start : syms[i].start+syms[i].n]
		if id, ok := t.ids[string(s)]; ok {
			out = append(out, int(id))
			continue
		}
		for _, b := range s {
			id := t.spmByte[b]
			if id < 0 {
				if t.unk == none {
					return nil, &Error{Op: "encode", Err: fmt.Errorf("%w: byte 0x%02X has no <0x%02X> token and the vocabulary has no unknown token", ErrNoToken, b, b)}
				}
				id = int32(t.unk)
			}
			out = append(out, int(id))
		}
	}
	return out, nil
}
