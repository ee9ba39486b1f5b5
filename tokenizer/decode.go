package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// buildPieces computes every token's bytes as llama.cpp's token_to_piece
// does with special=true.
func (t *Tokenizer) buildPieces() {
	t.pieces = make([]string, len(t.tokens))
	for id, text := range t.tokens {
		a := t.attrs[id]
		switch {
		case a&(attrUnknown|attrControl|attrUserDefined) != 0:
			t.pieces[id] = text
		case a&attrNormal != 0:
			if t.kind == kindBPE {
				t.pieces[id] = unmapBytesLoose(text)
			} else {
				t.pieces[id] = strings.ReplaceAll(text, "\u2581", " ")
			}
		case a&attrByte != 0:
			t.pieces[id] = text
			if len(text) == 6 && strings.HasPrefix(text, "<0x") {
				if b, err := strconv.ParseUint(text[3:5], 16, 8); err == nil {
					t.pieces[id] = string([]byte{byte(b)})
				}
			}
		}
	}
}

// Piece returns the bytes token id stands for, with control and unknown
// tokens as their text ("<s>"). It returns "" for an id outside the
// vocabulary.
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// Token returns token id's text exactly as stored in the file ("▁Hello",
// "Ġworld"), or "" for an id outside the vocabulary.
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// TextPiece returns the text token id adds to a decoded continuation:
// its bytes, or "" for control and unknown tokens and ids outside the
// vocabulary (what a StreamDecoder that has seen the prompt emits for it,
// before joining split characters).
func (t *Tokenizer) TextPiece(id int) string { return t.textPiece(id, false) }

// textPiece is the piece Decode uses: control and unknown tokens are not
// text and decode to nothing (llama.cpp's detokenize with special=false).
func (t *Tokenizer) textPiece(id int, special bool) string {
	if id < 0 || id >= len(t.pieces) {
		return ""
	}
	if !special && t.attrs[id]&(attrUnknown|attrControl) != 0 {
		return ""
	}
	return t.pieces[id]
}

// Decode returns the text of ids: the pieces concatenated, control tokens
// (BOS, EOS, ...) left out, ids outside the vocabulary skipped. For
// SentencePiece vocabularies the space that Encode puts before the text is
// removed from the first piece that has text (llama.cpp strips it from the
// first token only, so a leading BOS keeps it there; skipping BOS here
// makes Decode(Encode(x, true, false)) == x). Unlike llama_detokenize,
// Decode does not "clean up tokenization spaces" (" ," -> ","): that
// rewrite is lossy, and streaming output cannot apply it either.
func (t *Tokenizer) Decode(ids []int) string { return t.decode(ids, false) }

// DecodeSpecial is Decode with control tokens written as their text.
func (t *Tokenizer) DecodeSpecial(ids []int) string { return t.decode(ids, true) }

func (t *Tokenizer) decode(ids []int, special bool) string {
	var b strings.Builder
	strip := t.addSpacePrefix
	for _, id := range ids {
		p := t.textPiece(id, special)
		if p == "" {
			continue
		}
		if strip {
			p = strings.TrimPrefix(p, " ")
			strip = false
		}
		b.WriteString(p)
	}
	return b.String()
}

// StreamDecoder turns ids into text one at a time. The concatenation of
// everything Add and Flush return equals Decode of all ids, except that it
// is always valid UTF-8: bytes of a character split across tokens are held
// back until the character is complete, and bytes that can never form a
// character come out as U+FFFD, one per byte. A StreamDecoder is not safe
// for concurrent use; make one per generation.
type StreamDecoder struct {
	t       *Tokenizer
	special bool
	started bool
	pending []byte
}

// NewStreamDecoder returns a decoder that leaves control tokens out. It
// strips the SentencePiece leading space from the first piece with text, as
// Decode does; to decode a continuation (generated tokens after a prompt),
// Add the prompt's ids first and discard what they return, so the
// continuation keeps its leading space and completes any character the
// prompt left open.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// NewStreamDecoderSpecial returns a decoder that writes control tokens as
// their text.
func (t *Tokenizer) NewStreamDecoderSpecial() *StreamDecoder {
	return &StreamDecoder{t: t, special: true}
}

// Add decodes one more id and returns the text that is now complete.
func (d *StreamDecoder) Add(id int) string {
	p := d.t.textPiece(id, d.special)
	if p == "" {
		return ""
	}
	if !d.started {
		d.started = true
		if d.t.addSpacePrefix {
			p = strings.TrimPrefix(p, " ")
		}
	}
	if len(d.pending) == 0 && utf8.ValidString(p) {
		return p // the common case: a whole piece, no copy
	}
	d.pending = append(d.pending, p...)
	return d.drain(false)
}

// Flush returns any held-back bytes (as U+FFFD: they did not complete a
// character) and resets the decoder for a new text.
func (d *StreamDecoder) Flush() string {
	s := d.drain(true)
	d.started = false
	return s
}

// drain returns the valid prefix of pending, replacing invalid bytes with
// U+FFFD; an incomplete character at the end is kept unless final.
func (d *StreamDecoder) drain(final bool) string {
	p := d.pending
	// Fast path: everything up to a possibly incomplete tail is valid.
	n := len(p)
	if !final {
		n = completePrefix(p)
	}
	if utf8.Valid(p[:n]) {
		s := string(p[:n])
		d.pending = append(d.pending[:0], p[n:]...)
		return s
	}
	var b strings.Builder
	i := 0
	for i < len(p) {
		if !final && !utf8.FullRune(p[i:]) {
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.Write(p[i : i+size])
		}
		i += size
	}
	d.pending = append(d.pending[:0], p[i:]...)
	return b.String()
}

// completePrefix returns the length of p without a trailing incomplete
// UTF-8 sequence (at most 3 bytes that a continuation could complete).
func completePrefix(p []byte) int {
	for k := 1; k <= 3 && k <= len(p); k++ {
		c := p[len(p)-k]
		if c < 0x80 {
			return len(p)
		}
		if c >= 0xC0 { // lead byte: complete only if its sequence fits
			if !utf8.FullRune(p[len(p)-k:]) {
				return len(p) - k
			}
			return len(p)
		}
	}
	return len(p)
}
