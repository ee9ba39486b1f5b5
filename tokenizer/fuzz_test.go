package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/glassbox-ai/glassbox/gguf"
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

// FuzzFromMeta builds tokenizers from arbitrary metadata: loading either
// fails with an error or gives a tokenizer whose Encode, Decode and
// StreamDecoder neither panic nor return ids outside the vocabulary.
func FuzzFromMeta(f *testing.F) {
	f.Add([]byte("a b ab <s> </s> \xe2\x96\x81a"), []byte{1, 1, 1, 3, 3, 1}, uint8(0), "ab a b")
	f.Add([]byte("a b ab [UNK] [CLS] [SEP]"), []byte{1, 1, 1, 2, 3, 3}, uint8(2), "a ab")
	f.Add([]byte("! \" a b ab"), []byte{1, 1, 1, 1, 1}, uint8(1), "a b ab")
	f.Fuzz(func(t *testing.T, vocab, types []byte, sel uint8, text string) {
		toks := strings.Fields(string(vocab))
		if len(toks) == 0 || len(toks) > 64 {
			return
		}
		m := &gguf.Metadata{}
		m.Set("tokenizer.ggml.model", []string{"llama", "gpt2", "bert", "t5"}[int(sel)%4])
		m.Set("tokenizer.ggml.pre", []string{"gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "falcon", "default"}[int(sel/3)%6])
		m.Set("tokenizer.ggml.tokens", toks)
		tt := make([]int32, len(toks))
		scores := make([]float32, len(toks))
		for i := range tt {
			if i < len(types) {
				tt[i] = int32(types[i] % 8)
				scores[i] = float32(int8(types[i]))
			}
		}
		m.Set("tokenizer.ggml.token_type", tt)
		m.Set("tokenizer.ggml.scores", scores)
		var merges []string
		for i := 0; i+1 < len(toks); i += 2 {
			merges = append(merges, toks[i]+" "+toks[i+1])
		}
		m.Set("tokenizer.ggml.merges", merges)
		m.Set("tokenizer.ggml.bos_token_id", uint32(sel)%uint32(len(toks)+2))
		m.Set("tokenizer.ggml.unknown_token_id", uint32(sel/7)%uint32(len(toks)+2))
		tok, err := fromMeta(m, nil)
		if err != nil {
			return
		}
		for _, ps := range []bool{false, true} {
			ids, err := tok.Encode(text, true, ps)
			if err != nil {
				continue
			}
			for _, id := range ids {
				if id < 0 || id >= tok.VocabSize() {
					t.Fatalf("id %d outside vocabulary of %d", id, tok.VocabSize())
				}
			}
			tok.Decode(ids)
			d := tok.NewStreamDecoder()
			for _, id := range ids {
				if !utf8.ValidString(d.Add(id)) {
					t.Fatal("invalid UTF-8 from stream decoder")
				}
			}
		}
	})
}
