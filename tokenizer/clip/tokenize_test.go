package clip

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestErrors covers what glassbox does where stable-diffusion.cpp has no
// answer: the weights std::stof cannot read (sd.cpp ends the process),
// weights that multiply past float32, and the prompt limits.
func TestErrors(t *testing.T) {
	huge := "340000000000000000000000000000000000000" // 3.4e38, just below float32's maximum
	tests := []struct {
		name, prompt string
		is           error
		want         string
	}{
		{"no digits", "(a:.)", ErrWeight, `byte 2: bad emphasis weight: "." is not a number`},
		{"two dots", "x (a:..5)", ErrWeight, `byte 4: bad emphasis weight: "..5" is not a number`},
		{"sign only", "(a:+.)", ErrWeight, `"+." is not a number`},
		{"overflow", "(a:" + huge + "0)", ErrWeight, "outside float32's range"},
		{"below normal", "(a:0.00000000000000000000000000000000000001)", ErrWeight, "outside float32's range"},
		{"product overflows", "((a:" + huge + "):2)", ErrWeight, `the weight of "a" is +Inf`},
		{"product NaN", "(((a:" + huge + "):2):0)", ErrWeight, `the weight of "a" is NaN`},
		{"too many bytes", strings.Repeat("a", MaxPromptBytes+1), ErrTooLong, "16385 bytes, more than the 16384"},
		{"too many windows", strings.Repeat("a BREAK ", MaxChunks+1), ErrTooLong, "19275 ids make 257 windows of 77 tokens, more than the 256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Tokenize(tt.prompt)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.is) || e.Stage() != Stage {
				t.Fatalf("Tokenize = %v, want an *Error wrapping %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "encode: prompt: ") {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
	// Unread weights are no error: sd.cpp only reads a weight inside "(".
	for _, p := range []string{"a:.) b", "(a:.:)", strings.Repeat("a", MaxPromptBytes), "(a:" + huge + ")"} {
		if _, err := Tokenize(p); err != nil {
			t.Errorf("Tokenize(%.40q): %v", p, err)
		}
	}
}

// TestParseAttention pins the emphasis rules with hand-written
// expectations (the goldens check them against sd.cpp too).
func TestParseAttention(t *testing.T) {
	w11, w121, w09 := float32(1.1), float32(1.1)*float32(1.1), 1/float32(1.1)
	tests := []struct {
		prompt string
		want   []Span
	}{
		{"", []Span{{"", 1}}},
		{"()", []Span{{"", 1}}},
		{"an (important) word", []Span{{"an ", 1}, {"important", w11}, {" word", 1}}},
		{"(unbalanced", []Span{{"unbalanced", w11}}},
		{`\(literal\]`, []Span{{`(literal\]`, 1}}},
		{"(unnecessary)(parens)", []Span{{"unnecessaryparens", w11}}},
		{"((a))", []Span{{"a", w121}}},
		{"[a]", []Span{{"a", w09}}},
		{"(a:1.5)", []Span{{"a", 1.5}}},
		{"(a:1.2.3)", []Span{{"a", 1.2}}},
		{"x:1.5) y", []Span{{"x y", 1}}},
		{"a) b]", []Span{{"a) b]", 1}}},
		{"fooBREAK bar", []Span{{"foo", 1}, {"BREAK", -1}, {" bar", 1}}},
		{"BREAKfast", []Span{{"BREAKfast", 1}}},
		{"BREAK_x", []Span{{"BREAK_x", 1}}},
		{"(BREAK)", []Span{{"BREAK", -w11}}},
		{"BREAK[]BREAK", []Span{{"BREAKBREAK", -1}}},
		{`a\\(b)`, []Span{{`a\\`, 1}, {"b", w11}}},
	}
	for _, tt := range tests {
		got, err := ParseAttention(tt.prompt)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseAttention(%q) = %+v, %v; want %+v", tt.prompt, got, err, tt.want)
		}
	}
	if w09 != 0.909090877 {
		t.Errorf("1/1.1f = %.9g, want 0.909090877", w09)
	}
}

// TestWindows checks the window layout on prompts of 1 to 4 windows.
func TestWindows(t *testing.T) {
	for _, n := range []int{0, 1, 74, 75, 76, 149, 150, 151, 300, 301} {
		tok, err := Tokenize(strings.Repeat("cat ", n))
		if err != nil {
			t.Fatal(err)
		}
		chunks := max(1, (n+74)/75)
		if tok.Chunks != chunks || len(tok.IDs) != 77*chunks || len(tok.Weights) != 77*chunks {
			t.Fatalf("%d words: %d chunks, %d ids, %d weights; want %d chunks", n, tok.Chunks, len(tok.IDs), len(tok.Weights), chunks)
		}
		cats := 0
		for c := range chunks {
			w := tok.IDs[77*c : 77*(c+1)]
			in := min(75, n-75*c)
			if w[0] != BOS || w[in+1] != EOS {
				t.Errorf("%d words: window %d = %v", n, c, w)
			}
			for _, id := range w[1 : in+1] {
				if id == 2368 { // "cat</w>"
					cats++
				}
			}
			for _, id := range w[in+1:] {
				if id != EOS {
					t.Errorf("%d words: window %d pads with %d", n, c, id)
				}
			}
		}
		if cats != n {
			t.Errorf("%d words: %d cats in the windows", n, cats)
		}
	}
}

// classicBPE is BPETokenizer::bpe as written: merge every occurrence of
// the lowest-ranked adjacent pair, left to right, until none is ranked.
// It is the specification of scratch.bpe.
func classicBPE(t *tables, piece string) []int32 {
	word := make([]int32, len(piece))
	for i := 0; i < len(piece); i++ {
		word[i] = t.byteID[piece[i]]
	}
	word[len(word)-1] = t.byteEndID[piece[len(piece)-1]]
	for len(word) > 1 {
		best, bestRank := -1, uint64(1<<63)
		for i := 0; i+1 < len(word); i++ {
			if m, ok := t.merges[uint64(word[i])<<32|uint64(word[i+1])]; ok && m>>32 < bestRank {
				best, bestRank = i, m>>32
			}
		}
		if best < 0 {
			break
		}
		l, r := word[best], word[best+1]
		m := t.merges[uint64(l)<<32|uint64(r)]
		var next []int32
		for i := 0; i < len(word); {
			if i+1 < len(word) && word[i] == l && word[i+1] == r {
				next = append(next, int32(uint32(m)))
				i += 2
			} else {
				next = append(next, word[i])
				i++
			}
		}
		word = next
	}
	return word
}

// TestBPETwin runs the heap BPE against classicBPE on random pieces, with
// the real merges and with a merge list whose later merges build on
// higher-ranked ones (so a pass creates pairs that outrank it: the case
// the passes exist for).
func TestBPETwin(t *testing.T) {
	real, err := vocab()
	if err != nil {
		t.Fatal(err)
	}
	// Symbols 0..3 are the bytes a..d; merges chain so a merged symbol's
	// pairs have lower ranks than the merge that made it.
	odd := &tables{merges: map[uint64]uint64{}}
	for b := range 256 {
		odd.byteID[b], odd.byteEndID[b] = int32(b%4), int32(b%4)
	}
	rank := uint64(100)
	next := int32(4)
	for l := int32(0); l < 12; l++ {
		for r := int32(0); r < 12; r++ {
			if (l*7+r*3)%5 == 0 {
				odd.merges[uint64(l)<<32|uint64(r)] = rank<<32 | uint64(next)
				next++
				rank -= 1 + uint64(l+r)%3 // later merges outrank earlier ones
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var s scratch
	for _, tb := range []*tables{real, odd} {
		for range 20000 {
			n := 1 + rng.IntN(40)
			b := make([]byte, n)
			for i := range b {
				b[i] = "aaabbc!e"[rng.IntN(8)]
				if rng.IntN(4) == 0 {
					b[i] = byte(rng.IntN(256))
				}
			}
			got := s.bpe(tb, string(b), nil)
			if want := classicBPE(tb, string(b)); !slices.Equal(got, want) {
				t.Fatalf("bpe(%q) = %v, want %v", b, got, want)
			}
		}
	}
}

// BenchmarkTables measures building the merge tables from the embedded
// file (done once per process).
func BenchmarkTables(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildTables(mergesGz); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenize measures a typical prompt of two windows.
func BenchmarkTokenize(b *testing.B) {
	p := "a (masterpiece:1.2), best quality, " + strings.Repeat("a lovely cat on a sofa, ", 12) + "[blurry]"
	if _, err := Tokenize(p); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		Tokenize(p)
	}
}
