package clip

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"a lovely cat", "", "(masterpiece:1.2), best quality, [blurry]", "a ((very)) (((beautiful))) [[ugly]]",
	"a red car BREAK a blue sky", `\(literal parens\) and \[brackets\]`, "(a:.)", "(a:1.2.3)", "fooBREAK bar",
	"<|endoftext|> special <|startoftext|> tokens", "café 東京 🐱 ❤️", "((((((((((x", "x))))]]]]", "a BREAK BREAK b",
	"\xff\xfe\x00", strings.Repeat("!", 300), strings.Repeat("a BREAK ", 20),
}

// FuzzParseAttention: any text parses or fails with an encode-stage
// ErrWeight; the spans' text is no longer than the prompt, and no two
// neighbours have the same weight.
func FuzzParseAttention(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		spans, err := ParseAttention(text)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrWeight) || e.Offset < 0 || e.Offset >= len(text) {
				t.Fatalf("ParseAttention(%q): %v", text, err)
			}
			return
		}
		if len(spans) == 0 {
			t.Fatalf("ParseAttention(%q): no spans", text)
		}
		n := 0
		for i, s := range spans {
			n += len(s.Text)
			if i > 0 && spans[i-1].Weight == s.Weight {
				t.Fatalf("ParseAttention(%q): neighbours %d, %d of equal weight: %+v", text, i-1, i, spans)
			}
		}
		if n > len(text) {
			t.Fatalf("ParseAttention(%q): %d bytes of spans from %d", text, n, len(text))
		}
	})
}

// FuzzTokenize: any prompt gives well-formed windows or an encode-stage
// error, and the output is bounded by the input: at most one id per byte
// plus 74 padding ids per BREAK (5 bytes), so 16 ids per byte.
func FuzzTokenize(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, prompt string) {
		tok, err := Tokenize(prompt)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Stage() != "encode" || !errors.Is(err, ErrWeight) && !errors.Is(err, ErrTooLong) {
				t.Fatalf("Tokenize(%q): %v", prompt, err)
			}
			return
		}
		if tok.Chunks < 1 || tok.Chunks > MaxChunks || len(tok.IDs) != ChunkLen*tok.Chunks || len(tok.Weights) != len(tok.IDs) {
			t.Fatalf("Tokenize(%q): %d chunks, %d ids, %d weights", prompt, tok.Chunks, len(tok.IDs), len(tok.Weights))
		}
		if bound := 1 + (16*len(prompt)+ChunkTokens-1)/ChunkTokens; tok.Chunks > bound {
			t.Fatalf("Tokenize(%q): %d chunks from %d bytes (bound %d)", prompt, tok.Chunks, len(prompt), bound)
		}
		for c := range tok.Chunks {
			w := tok.IDs[c*ChunkLen : (c+1)*ChunkLen]
			if w[0] != BOS || tok.Weights[c*ChunkLen] != 1 {
				t.Fatalf("Tokenize(%q): window %d starts %d", prompt, c, w[0])
			}
			for _, id := range w {
				if id < 0 || id >= VocabSize {
					t.Fatalf("Tokenize(%q): id %d", prompt, id)
				}
			}
		}
		enc, err := Encode(prompt)
		if err != nil || len(enc) > len(prompt) {
			t.Fatalf("Encode(%q): %d ids from %d bytes, %v", prompt, len(enc), len(prompt), err)
		}
	})
}

// FuzzBPE runs the heap BPE against its specification, classicBPE.
func FuzzBPE(f *testing.F) {
	for _, s := range []string{"a", "hello", "!!!!!!!!", "aaaaaaaa", "東京", "\x00\xff"} {
		f.Add(s)
	}
	t0, err := vocab()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, piece string) {
		if piece == "" || len(piece) > 512 {
			return
		}
		var s scratch
		if got, want := s.bpe(t0, piece, nil), classicBPE(t0, piece); !slices.Equal(got, want) {
			t.Fatalf("bpe(%q) = %v, want %v", piece, got, want)
		}
	})
}
