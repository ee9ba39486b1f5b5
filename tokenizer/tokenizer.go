package tokenizer

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Encode turns text into token ids. With addSpecial, BOS and EOS are added
// as the vocabulary asks (tokenizer.ggml.add_bos_token/add_eos_token;
// SentencePiece adds BOS by default, Llama 3 vocabularies always do), and
// WordPiece frames the text with CLS and SEP.
// With parseSpecial, the text of control tokens ("<|im_start|>") becomes
// those tokens; user-defined tokens are always recognised, as in llama.cpp.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int, error) {
	if len(text) > math.MaxInt32/2 {
		return nil, &Error{Op: "encode", Err: fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLong, len(text), math.MaxInt32/2)}
	}
	frags := t.partition(text, parseSpecial, nil)
	out := make([]int, 0, len(text)/2+4)
	// WordPiece always frames with CLS ... SEP (llama.cpp ignores the
	// add_* keys there); the others follow add_bos_token/add_eos_token.
	wpm := t.kind == kindWPM
	if addSpecial && (t.addBOS || wpm) && t.bos != none {
		out = append(out, t.bos)
	}
	var err error
	switch t.kind {
	case kindSPM:
		prevSpecial := true
		var buf []byte
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, int(f.id))
				prevSpecial = true
				continue
			}
			buf = buf[:0]
			if t.addSpacePrefix && prevSpecial {
				buf = append(buf, "\u2581"...)
			}
			buf = appendEscaped(buf, text[f.start:f.end])
			if out, err = t.encodeSPM(buf, out); err != nil {
				return nil, err
			}
			prevSpecial = false
		}
	case kindBPE:
		s := t.getBPEState()
		defer t.putBPEState(s)
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, int(f.id))
				continue
			}
			out = t.encodeBPE(s, text[f.start:f.end], out)
		}
	case kindUGM:
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, int(f.id))
				continue
			}
			if out, err = t.encodeUGM(text[f.start:f.end], out); err != nil {
				return nil, err
			}
		}
	case kindWPM:
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, int(f.id))
				continue
			}
			if out, err = t.encodeWPM(text[f.start:f.end], out); err != nil {
				return nil, err
			}
		}
		if addSpecial && t.sep != none {
			out = append(out, t.sep)
		}
	}
	if addSpecial && t.addEOS && !wpm {
		out = append(out, t.eos)
	}
	return out, nil
}

// appendEscaped appends s with every space written as U+2581 ("▁"), the
// SentencePiece whitespace escape.
func appendEscaped(buf []byte, s string) []byte {
	buf = slices.Grow(buf, len(s)+2*strings.Count(s, " "))
	for {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(buf, s...)
		}
		buf = append(buf, s[:i]...)
		buf = append(buf, "\u2581"...)
		s = s[i+1:]
	}
}

// IsEOG reports whether id ends generation: EOS, EOT, EOM and the tokens
// llama.cpp recognises by text (<|im_end|>, <|eot_id|>, <|endoftext|>, ...).
func (t *Tokenizer) IsEOG(id int) bool { return id >= 0 && id < len(t.eog) && t.eog[id] }

// EOG returns every end-of-generation id, ascending.
func (t *Tokenizer) EOG() []int {
	var ids []int
	for id, e := range t.eog {
		if e {
			ids = append(ids, id)
		}
	}
	return ids
}

// BOS returns the beginning-of-sequence id, or -1 if the vocabulary has none.
func (t *Tokenizer) BOS() int { return t.bos }

// EOS returns the end-of-sequence id, or -1.
func (t *Tokenizer) EOS() int { return t.eos }

// EOT returns the end-of-turn id, or -1.
func (t *Tokenizer) EOT() int { return t.eot }

// UNK returns the unknown-token id, or -1.
func (t *Tokenizer) UNK() int { return t.unk }

// VocabSize returns the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// AddBOS reports whether Encode with addSpecial puts BOS first.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with addSpecial puts EOS last.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// Model returns tokenizer.ggml.model: "llama", "gpt2", "bert" or "t5"
// (also for a SentencePiece unigram model read by FromSentencePiece).
func (t *Tokenizer) Model() string { return t.model }

// Pre returns tokenizer.ggml.pre as written in the file ("" if absent).
func (t *Tokenizer) Pre() string { return t.pre }

// IsControl reports whether id is a control token (BOS, EOS, <|im_start|>...).
func (t *Tokenizer) IsControl(id int) bool {
	return id >= 0 && id < len(t.attrs) && t.attrs[id]&attrControl != 0
}

// FIM returns the fill-in-the-middle prefix, suffix and middle ids (-1
// where the vocabulary has none), from metadata or recognised by text.
func (t *Tokenizer) FIM() (prefix, suffix, middle int) { return t.fimPSM[0], t.fimPSM[1], t.fimPSM[2] }

// FIMContext returns the fill-in-the-middle pad, repository and file
// separator ids (-1 where the vocabulary has none): a repository-level
// prompt names the repository and each file with them.
func (t *Tokenizer) FIMContext() (pad, repo, sep int) { return t.fim[0], t.fim[1], t.fim[2] }
