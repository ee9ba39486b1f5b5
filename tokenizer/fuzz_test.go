package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzVocabs = []string{
	"models/stories260K.gguf", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-deepseek-llm.gguf",
	"vocab/ggml-vocab-falcon.gguf", "vocab/ggml-vocab-bert-bge.gguf", "vocab/ggml-vocab-phi-3.gguf",
}

func fuzzSeeds(f *testing.F) {
	for _, s := range roundTripTexts {
		f.Add(s, uint8(0))
	}
	f.Add("a\xffb\xe2\x82 c\xc3", uint8(3))
	f.Add("<s>x</s><|endoftext|>[CLS]", uint8(7))
	f.Add(strings.Repeat(" ", 70)+strings.Repeat("ab", 40), uint8(1))
}

// FuzzEncode: any bytes encode without panic to ids inside the vocabulary;
// lossless vocabularies give the text back.
func FuzzEncode(f *testing.F) {
	fuzzSeeds(f)
	toks := make([]*Tokenizer, len(fuzzVocabs))
	for i, rel := range fuzzVocabs {
		toks[i] = load(f, rel)
	}
	f.Fuzz(func(t *testing.T, text string, sel uint8) {
		tok := toks[int(sel)%len(toks)]
		ids, err := tok.Encode(text, sel&8 != 0, sel&16 != 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d outside vocabulary", id)
			}
		}
		if tok.kind == kindSPM && sel&16 == 0 && !strings.Contains(text, "</s>") && utf8.ValidString(text) {
			if got := tok.Decode(ids); got != text {
				t.Fatalf("SPM round trip: %q -> %q", text, got)
			}
		}
		if tok.model == "gpt2" && tok.pre == "gpt-2" && sel&16 == 0 && utf8.ValidString(text) {
			if got := tok.Decode(ids); got != text {
				t.Fatalf("BPE round trip: %q -> %q", text, got)
			}
		}
	})
}

// FuzzStreamDecoder: any id sequence decodes without panic to valid UTF-8
// that equals Decode's output whenever that is valid UTF-8.
func FuzzStreamDecoder(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0xff, 0x80}, uint8(0))
	f.Add([]byte{200, 1, 201, 2, 202, 3}, uint8(1))
	toks := []*Tokenizer{load(f, "models/stories260K.gguf"), load(f, "vocab/ggml-vocab-gpt-2.gguf")}
	f.Fuzz(func(t *testing.T, raw []byte, sel uint8) {
		tok := toks[int(sel)%len(toks)]
		var ids []int
		for i := 0; i+1 < len(raw); i += 2 {
			ids = append(ids, (int(raw[i])<<8|int(raw[i+1]))%(tok.VocabSize()+10)-5)
		}
		d := tok.NewStreamDecoder()
		var b strings.Builder
		for _, id := range ids {
			s := d.Add(id)
			if !utf8.ValidString(s) {
				t.Fatalf("Add(%d) emitted invalid UTF-8 %q", id, s)
			}
			b.WriteString(s)
		}
		s := d.Flush()
		if !utf8.ValidString(s) {
			t.Fatalf("Flush emitted invalid UTF-8 %q", s)
		}
		b.WriteString(s)
		if want := tok.Decode(ids); utf8.ValidString(want) && b.String() != want {
			t.Fatalf("stream %q != Decode %q", b.String(), want)
		}
	})
}
