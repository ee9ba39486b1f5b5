package tokenizer

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// SentencePiece's normalizer (normalizer.cc): a precompiled character map
// and the whitespace rules of the model's NormalizerSpec.
//
// The map (NormalizerSpec.precompiled_charsmap) is
//
//	<uint32 LE trie size N><N bytes: a Darts-clone double array><replacement strings>
//
// The double array maps a byte string to an offset into the replacement
// strings, each NUL-terminated. At each position the longest key that is
// a prefix of the remaining input is replaced; where none is, one UTF-8
// character is copied (an invalid byte becomes U+FFFD).
//
// A Darts-clone unit is a uint32 (darts.h, DoubleArrayUnit): bit 8
// has_leaf, bits 0–7 with bit 31 the label, bits 10–31 the offset, shifted
// left by 8 when bit 9 is set; a leaf unit holds its value in bits 0–30.

// doubleArray is a Darts-clone double array.
type doubleArray []uint32

func daHasLeaf(u uint32) bool  { return u>>8&1 == 1 }
func daValue(u uint32) uint32  { return u & (1<<31 - 1) }
func daLabel(u uint32) uint32  { return u & (1<<31 | 0xFF) }
func daOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }

// maxCharsmapKey bounds a charsmap match: a malformed array can cycle and
// accept any run of a byte, which would make normalization quadratic. The
// keys of real maps are a few characters.
const maxCharsmapKey = 256

// longestPrefix returns the value and length of the longest key that is a
// prefix of key (Darts' commonPrefixSearch, keeping the longest), or
// length 0. Indices outside the array end the search.
func (da doubleArray) longestPrefix(key string) (value uint32, length int) {
	if len(da) == 0 {
		return 0, 0
	}
	pos := daOffset(da[0])
	for i := 0; i < len(key) && i < maxCharsmapKey; i++ {
		pos ^= uint32(key[i])
		if uint64(pos) >= uint64(len(da)) {
			return value, length
		}
		u := da[pos]
		if daLabel(u) != uint32(key[i]) {
			return value, length
		}
		pos ^= daOffset(u)
		if daHasLeaf(u) {
			if uint64(pos) >= uint64(len(da)) {
				return value, length
			}
			value, length = daValue(da[pos]), i+1
		}
	}
	return value, length
}

// normalizer applies a NormalizerSpec.
type normalizer struct {
	trie        doubleArray
	repl        string // NUL-terminated replacement strings
	user        *pieceTrie
	dummyPrefix bool
	removeSpace bool
	escape      bool
	suffix      bool // TrainerSpec.treat_whitespace_as_suffix
}

// newCharsmap splits a precompiled charsmap (DecodePrecompiledCharsMap).
func newCharsmap(blob []byte) (doubleArray, string, error) {
	if len(blob) == 0 {
		return nil, "", nil
	}
	if len(blob) <= 4 {
		return nil, "", fmt.Errorf("precompiled charsmap of %d bytes (needs a 4-byte size and a trie)", len(blob))
	}
	n := binary.LittleEndian.Uint32(blob)
	if uint64(n) >= uint64(len(blob)) {
		return nil, "", fmt.Errorf("precompiled charsmap: trie of %d bytes in a blob of %d", n, len(blob))
	}
	tb := blob[4 : 4+n]
	da := make(doubleArray, len(tb)/4)
	for i := range da {
		da[i] = binary.LittleEndian.Uint32(tb[4*i:])
	}
	return da, string(blob[4+n:]), nil
}

// maxExpansion bounds the normalized text: a charsmap may map one byte to a
// long string; NFKC's largest expansion is 18 characters.
const maxExpansion = 64

const spaceSymbol = "\u2581"

// prefix returns the normalized form of the start of s and the bytes it
// consumes (NormalizePrefix): a user-defined piece verbatim, else the
// charsmap's longest rule, else one character.
func (n *normalizer) prefix(s string) (string, int, error) {
	if n.user != nil {
		if l := n.user.longestPrefix(s); l > 0 {
			return s[:l], l, nil
		}
	}
	if v, l := n.trie.longestPrefix(s); l > 0 {
		if uint64(v) >= uint64(len(n.repl)) {
			return "", 0, fmt.Errorf("precompiled charsmap: replacement at %d outside %d bytes", v, len(n.repl))
		}
		r := n.repl[v:]
		if e := strings.IndexByte(r, 0); e >= 0 {
			r = r[:e]
		}
		return r, l, nil
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 {
		return "\uFFFD", 1, nil
	}
	return s[:size], size, nil
}

// normalize returns s as the model sees it (Normalizer::Normalize): leading,
// trailing and repeated spaces removed (removeSpace), spaces written as
// "▁" (escape) and one "▁" in front (dummyPrefix). Text that is empty or
// all whitespace normalizes to "".
func (n *normalizer) normalize(s string) (string, error) {
	limit := maxExpansion*len(s) + 1024
	if n.removeSpace {
		for s != "" {
			p, l, err := n.prefix(s)
			if err != nil {
				return "", err
			}
			if p != " " {
				break
			}
			s = s[l:]
		}
	}
	if s == "" {
		return "", nil
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2 + 3)
	ws := " "
	if n.escape {
		ws = spaceSymbol
	}
	if !n.suffix && n.dummyPrefix {
		b.WriteString(ws)
	}
	prevSpace := n.removeSpace
	for s != "" {
		p, l, err := n.prefix(s)
		if err != nil {
			return "", err
		}
		for prevSpace && strings.HasPrefix(p, " ") {
			p = p[1:]
		}
		if p != "" {
			if b.Len()+3*len(p) > limit {
				return "", fmt.Errorf("%w: normalized text passes %d bytes (%d× the input)", ErrTooLong, limit, maxExpansion)
			}
			prevSpace = strings.HasSuffix(p, " ")
			for n.escape {
				i := strings.IndexByte(p, ' ')
				if i < 0 {
					break
				}
				b.WriteString(p[:i])
				b.WriteString(spaceSymbol)
				p = p[i+1:]
			}
			b.WriteString(p)
		}
		s = s[l:]
		if !n.removeSpace {
			prevSpace = false
		}
	}
	out := b.String()
	if n.removeSpace {
		for strings.HasSuffix(out, ws) {
			out = out[:len(out)-len(ws)]
		}
	}
	if n.suffix && n.dummyPrefix {
		out += ws
	}
	return out, nil
}
