package tokenizer

import "testing"

// TestByteMap: the GPT-2 byte mapping is a bijection onto printable code
// points, with its known anchors.
func TestByteMap(t *testing.T) {
	seen := map[rune]bool{}
	for b := 0; b < 256; b++ {
		r := byteToRune[b]
		if seen[r] {
			t.Fatalf("byte %#x maps to %U twice", b, r)
		}
		seen[r] = true
		raw := string([]byte{byte(b)})
		if got, ok := unmapBytes(mapBytes(raw)); !ok || got != raw {
			t.Fatalf("byte %#x: round trip gives %q %v", b, got, ok)
		}
	}
	for _, c := range []struct {
		b byte
		r rune
	}{{' ', 'Ġ'}, {'\n', 'Ċ'}, {'\t', 'ĉ'}, {'!', '!'}, {0xAD, 'Ń'}, {0xFF, 'ÿ'}, {0, 'Ā'}} {
		if byteToRune[c.b] != c.r {
			t.Errorf("byte %#x maps to %q, want %q", c.b, byteToRune[c.b], c.r)
		}
	}
	if _, ok := unmapBytes("a\u4e00"); ok {
		t.Error("unmapped a code point outside the mapping")
	}
}
