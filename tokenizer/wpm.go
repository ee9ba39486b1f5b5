package tokenizer

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// WordPiece (Schuster & Nakajima 2012; BERT, Devlin et al. 2019) as
// llama.cpp runs it (llm_tokenizer_wpm): BERT's normalizer splits the text
// into words (whitespace separates, punctuation and CJK characters stand
// alone, control characters vanish, optional lowercasing and accent
// stripping); each word, prefixed with "▁" as the GGUF converter writes
// word-initial pieces, is cut greedily into the longest tokens. A word with
// any part that no token covers becomes the unknown token.

// encodeWPM appends the tokens of one raw-text fragment.
func (t *Tokenizer) encodeWPM(text string, out []int) ([]int, error) {
	word := make([]byte, 0, 64)
	var err error
	t.wpmWords(text, func(w []byte) {
		word = append(append(word[:0], "\u2581"...), w...)
		n := len(word)
		start := len(out)
		for i := 0; i < n; {
			j := min(n, i+t.wpmMaxLen+1)
			for ; j > i; j-- {
				if id, ok := t.ids[string(word[i:j])]; ok {
					out = append(out, int(id))
					break
				}
			}
			if j == i {
				out = out[:start]
				break
			}
			i = j
		}
		if len(out) == start {
			if t.unk == none {
				if err == nil {
					err = &Error{Op: "encode", Err: fmt.Errorf("%w: no WordPiece covers %q and the vocabulary has no unknown token", ErrNoToken, w)}
				}
				return
			}
			out = append(out, t.unk)
		}
	})
	return out, err
}

// wpmWords is BERT's BasicTokenizer as llama.cpp's preprocess writes it;
// it calls emit with each word (the slice is reused).
func (t *Tokenizer) wpmWords(text string, emit func(w []byte)) {
	cur := make([]byte, 0, 64)
	flush := func() {
		if len(cur) > 0 {
			emit(cur)
			cur = cur[:0]
		}
	}
	for i := 0; i < len(text); {
		r, size := decodeCpt(text[i:])
		i += size
		if t.stripAccents {
			r = nfdFirst(r)
		}
		cl := classOf(r)
		switch {
		case isS(cl):
			flush()
			continue
		case r == 0 || r == utf8.RuneError || cl&cControl != 0:
			continue
		case t.stripAccents && cl&cMark != 0:
			continue
		}
		if t.lowercase {
			r = unicode.ToLower(r)
		}
		if cl&cPunct != 0 || (r < 0x7F && cl&cSymbol != 0) || isCJK(r) {
			flush()
			cur = appendCpt(cur, r)
			flush()
			continue
		}
		cur = appendCpt(cur, r)
	}
	flush()
}

// isCJK is BERT's _is_chinese_char (with its 0x2B920 lower bound).
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

// nfdFirst returns the first code point of r's canonical decomposition.
func nfdFirst(r rune) rune {
	lo, hi := 0, len(nfdBase)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < nfdBase[m][0]:
			hi = m
		case r > nfdBase[m][1]:
			lo = m + 1
		default:
			return nfdBase[m][2]
		}
	}
	return r
}
