package tokenizer

import "strings"

// Byte-level BPE stores every byte as a printable code point (GPT-2's
// bytes_to_unicode, openai/gpt-2 encoder.py): the printable Latin-1 bytes
// map to themselves, the other 68 bytes to U+0100 and up, in byte order.
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = 256 + n
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// unmapBytes turns a byte-level token text back into the raw bytes it
// stands for. ok is false when a code point is outside the mapping.
func unmapBytes(s string) (raw string, ok bool) {
	identity := true
	for i := 0; i < len(s); i++ {
		if s[i] < '!' || s[i] > '~' {
			identity = false
			break
		}
	}
	if identity { // printable ASCII stands for itself
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		c, in := runeToByte[r]
		if !in {
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// unmapBytesLoose is unmapBytes that keeps unmappable code points as UTF-8
// (llama.cpp writes "[UNK_BYTE_0x..]" there instead; such tokens do not
// occur in real byte-level vocabularies).
func unmapBytesLoose(s string) string {
	var b strings.Builder
	for _, r := range s {
		if c, in := runeToByte[r]; in {
			b.WriteByte(c)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mapBytes is the inverse of unmapBytes.
func mapBytes(raw string) string {
	var b strings.Builder
	b.Grow(2 * len(raw))
	for i := 0; i < len(raw); i++ {
		b.WriteRune(byteToRune[raw[i]])
	}
	return b.String()
}
