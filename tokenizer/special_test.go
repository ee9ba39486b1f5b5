package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
)

func TestSpecialTokens(t *testing.T) {
	tests := []struct {
		rel          string
		text         string
		add, special bool
		want         []int
	}{
		{"vocab/ggml-vocab-gpt-2.gguf", "a<|endoftext|>b", false, true, []int{64, 50256, 65}},
		{"vocab/ggml-vocab-gpt-2.gguf", "<|endoftext|>", false, false, []int{27, 91, 437, 1659, 5239, 91, 29}},
		// Phi-3's control tokens swallow the whitespace after them
		// (llama.cpp sets RSTRIP by model name); a space prefix follows.
		{"vocab/ggml-vocab-phi-3.gguf", "<|user|>\nHello<|end|>\n<|assistant|>", true, true, []int{1, 32010, 15043, 32007, 32001}},
		// User-defined tokens are cut out even without parse_special.
		{"vocab/ggml-vocab-deepseek-coder.gguf", "õ", false, false, []int{32000}},
		{"vocab/ggml-vocab-gpt-neox.gguf", strings.Repeat(" ", 24) + "x", false, false, []int{50254, 89}},
		// BOS/EOS/SEP per model.
		{"vocab/ggml-vocab-deepseek-llm.gguf", "Hi", true, false, []int{100000, 11007}},
		{"vocab/ggml-vocab-gpt-2.gguf", "Hi", true, false, []int{17250}},
		{"vocab/ggml-vocab-bert-bge.gguf", "Hi", true, false, []int{101, 7632, 102}},
		{"models/stories260K.gguf", "", true, false, []int{1}},
		{"models/stories260K.gguf", "<s>", true, true, []int{1, 1}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%q", tt.rel, tt.text), func(t *testing.T) {
			tok := load(t, tt.rel)
			got, err := tok.Encode(tt.text, tt.add, tt.special)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEOG(t *testing.T) {
	for _, c := range []struct {
		rel      string
		bos, eos int
		eog      []int
	}{
		{"models/stories260K.gguf", 1, 2, []int{2}},
		{"vocab/ggml-vocab-llama-spm.gguf", 1, 2, []int{2}},
		{"vocab/ggml-vocab-gpt-2.gguf", 50256, 50256, []int{50256}},
		{"vocab/ggml-vocab-phi-3.gguf", 1, 32000, []int{2, 32000, 32007}}, // </s>, <|endoftext|>, <|end|>
		{"vocab/ggml-vocab-deepseek-llm.gguf", 100000, 100001, []int{100001}},
		{"vocab/ggml-vocab-falcon.gguf", 11, 11, []int{11}},
		{"vocab/ggml-vocab-starcoder.gguf", 0, 0, []int{0, 4}}, // <|endoftext|>, <fim_pad> found by name
		{"vocab/ggml-vocab-bert-bge.gguf", 101, -1, []int{0}},  // [PAD] is taken for the FIM pad token, as in llama.cpp
	} {
		tok := load(t, c.rel)
		if tok.BOS() != c.bos || tok.EOS() != c.eos || !slices.Equal(tok.EOG(), c.eog) {
			t.Errorf("%s: BOS %d EOS %d EOG %v, want %d %d %v", c.rel, tok.BOS(), tok.EOS(), tok.EOG(), c.bos, c.eos, c.eog)
		}
		for _, id := range c.eog {
			if !tok.IsEOG(id) {
				t.Errorf("%s: IsEOG(%d) false", c.rel, id)
			}
		}
		if tok.IsEOG(-1) || tok.IsEOG(tok.VocabSize()) {
			t.Errorf("%s: IsEOG true outside the vocabulary", c.rel)
		}
	}
}

func TestStreamHoldsPartialCharacters(t *testing.T) {
	tok := load(t, "vocab/ggml-vocab-llama-spm.gguf")
	ids, err := tok.Encode("🦙!", false, false)
	if err != nil {
		t.Fatal(err)
	}
	// ▁, then the four byte tokens of 🦙, then !
	d := tok.NewStreamDecoder()
	var outs []string
	for _, id := range ids {
		outs = append(outs, d.Add(id))
	}
	outs = append(outs, d.Flush())
	if got := strings.Join(outs, "|"); got != "||||🦙|!|" {
		t.Fatalf("ids %v: stream pieces %q", ids, got)
	}
	// A character that never completes comes out as U+FFFD on Flush.
	d = tok.NewStreamDecoder()
	first := tok.spmByte[0xF0]
	if s := d.Add(int(first)); s != "" {
		t.Fatalf("lead byte emitted %q", s)
	}
	if s := d.Flush(); s != "\uFFFD" {
		t.Fatalf("Flush = %q", s)
	}
	// Control tokens are silent; the special decoder writes them.
	if s := tok.NewStreamDecoder().Add(tok.BOS()); s != "" {
		t.Fatalf("BOS emitted %q", s)
	}
	if s := tok.NewStreamDecoderSpecial().Add(tok.BOS()); s != "<s>" {
		t.Fatalf("special BOS = %q", s)
	}
}

// TestConcurrentEncode shares one tokenizer between goroutines (run with
// -race to check).
func TestConcurrentEncode(t *testing.T) {
	tok := load(t, "vocab/ggml-vocab-gpt-2.gguf")
	want, _ := tok.Encode(strings.Join(roundTripTexts, " "), true, false)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				got, err := tok.Encode(strings.Join(roundTripTexts, " "), true, false)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("concurrent encode differs")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestLoadErrors(t *testing.T) {
	base := func() *gguf.Metadata {
		m := &gguf.Metadata{}
		m.Set("tokenizer.ggml.model", "gpt2")
		m.Set("tokenizer.ggml.tokens", []string{"a", "b", "ab"})
		m.Set("tokenizer.ggml.merges", []string{"a b"})
		return m
	}
	tests := []struct {
		name   string
		edit   func(m *gguf.Metadata)
		is     error
		substr string
	}{
		{"ok", func(m *gguf.Metadata) {}, nil, ""},
		{"no model", func(m *gguf.Metadata) { *m = gguf.Metadata{} }, ErrMissing, "tokenizer.ggml.model"},
		{"unknown model", func(m *gguf.Metadata) { m.Set("tokenizer.ggml.model", "rwkv") }, ErrUnsupported, `model "rwkv"`},
		{"unknown pre", func(m *gguf.Metadata) { m.Set("tokenizer.ggml.pre", "nope") }, ErrUnsupported, `pre-tokenizer "nope"`},
		{"no merges", func(m *gguf.Metadata) {
			*m = gguf.Metadata{}
			m.Set("tokenizer.ggml.model", "gpt2")
			m.Set("tokenizer.ggml.tokens", []string{"a"})
		}, ErrMissing, "tokenizer.ggml.merges"},
		{"duplicate", func(m *gguf.Metadata) { m.Set("tokenizer.ggml.tokens", []string{"a", "a"}) }, ErrInvalid, `duplicate token "a" has ids 0 and 1`},
		{"short scores", func(m *gguf.Metadata) { m.Set("tokenizer.ggml.scores", []float32{0}) }, ErrInvalid, "1 scores for 3 tokens"},
		{"short types", func(m *gguf.Metadata) { m.Set("tokenizer.ggml.token_type", []int32{1}) }, ErrInvalid, "1 token types for 3 tokens"},
		{"tokens not strings", func(m *gguf.Metadata) { m.Set("tokenizer.ggml.tokens", []float32{1}) }, ErrMissing, "tokenizer.ggml.tokens"},
		{"add_bos without bos", func(m *gguf.Metadata) { m.Set("tokenizer.ggml.add_bos_token", true) }, ErrInvalid, "add_bos_token: invalid tokenizer metadata: true but tokenizer.ggml.bos_token_id is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base()
			tt.edit(m)
			tok, err := fromMeta(m, nil)
			if tt.is == nil {
				if err != nil {
					t.Fatal(err)
				}
				if ids, _ := tok.Encode("ab", false, false); !slices.Equal(ids, []int{2}) {
					t.Fatalf("Encode(ab) = %v", ids)
				}
				return
			}
			var te *Error
			if !errors.Is(err, tt.is) || !errors.As(err, &te) || te.Stage() != "encode" || !strings.Contains(err.Error(), tt.substr) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.is, tt.substr)
			}
		})
	}
}

// TestLlama3IgnoreMerges builds a tiny byte-level vocabulary: with the
// llama3 pre-tokenizer a word that is itself a token is taken whole
// (ignore_merges), with gpt-2 the merges decide; llama3 also forces BOS.
func TestLlama3IgnoreMerges(t *testing.T) {
	build := func(pre string) *Tokenizer {
		m := &gguf.Metadata{}
		m.Set("tokenizer.ggml.model", "gpt2")
		m.Set("tokenizer.ggml.pre", pre)
		m.Set("tokenizer.ggml.tokens", []string{"a", "b", "c", "bc", "abc", "<|begin_of_text|>"})
		m.Set("tokenizer.ggml.token_type", []int32{1, 1, 1, 1, 1, 3})
		m.Set("tokenizer.ggml.merges", []string{"b c"})
		m.Set("tokenizer.ggml.bos_token_id", uint32(5))
		tok, err := fromMeta(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, c := range []struct {
		pre  string
		want []int
	}{{"llama-bpe", []int{5, 4}}, {"gpt-2", []int{0, 3}}} {
		got, err := build(c.pre).Encode("abc", true, false)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v %v, want %v", c.pre, got, err, c.want)
		}
	}
}

func TestFIM(t *testing.T) {
	tok := load(t, "vocab/ggml-vocab-starcoder.gguf")
	if p, s, m := tok.FIM(); p != 1 || s != 3 || m != 2 {
		t.Fatalf("FIM = %d %d %d, want 1 3 2", p, s, m)
	}
	if p, s, m := load(t, "models/stories260K.gguf").FIM(); p != -1 || s != -1 || m != -1 {
		t.Fatalf("stories FIM = %d %d %d", p, s, m)
	}
}

// TestBPEMissingMergeResult: when a merge makes a symbol that is not a
// token, llama.cpp keeps only the printable ASCII bytes of it.
func TestBPEMissingMergeResult(t *testing.T) {
	m := &gguf.Metadata{}
	m.Set("tokenizer.ggml.model", "gpt2")
	m.Set("tokenizer.ggml.pre", "gpt-2")
	m.Set("tokenizer.ggml.tokens", []string{"a", "b", "Ġ"})
	m.Set("tokenizer.ggml.merges", []string{"Ġ a", "Ġa b"})
	tok, err := fromMeta(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tok.Encode(" ab", false, false); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("got %v, want [0 1]", got)
	}
}

// TestHarmonyTokens: in a vocabulary of OpenAI's harmony format (gpt-oss,
// its tags stored as control tokens), <|return|> and <|call|> end
// generation and <|end|> does not; the stream decoder releases the tags
// that structure a reply (<|start|>, <|channel|>, <|message|>,
// <|constrain|>, <|end|>) as text, for the reply's parser, as llama.cpp
// renders them, and leaves the ends of generation out.
func TestHarmonyTokens(t *testing.T) {
	tags := []string{"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|return|>", "<|call|>"}
	m := &gguf.Metadata{}
	m.Set("tokenizer.ggml.model", "gpt2")
	m.Set("tokenizer.ggml.pre", "gpt-2")
	m.Set("tokenizer.ggml.tokens", append([]string{"a", "b", "Ġ"}, tags...))
	m.Set("tokenizer.ggml.token_type", []int32{1, 1, 1, 3, 3, 3, 3, 3, 3, 3})
	m.Set("tokenizer.ggml.merges", []string{})
	tok, err := fromMeta(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int { return 3 + slices.Index(tags, s) }
	for _, tag := range tags {
		want := tag == "<|return|>" || tag == "<|call|>"
		if tok.IsEOG(id(tag)) != want {
			t.Errorf("IsEOG(%s) = %v, want %v", tag, !want, want)
		}
	}
	reply := "<|channel|>a<|message|>b<|end|><|start|>a<|channel|>b <|constrain|>a<|message|>b"
	ids, err := tok.Encode(reply+"<|call|>", false, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 15 || ids[0] != id("<|channel|>") || ids[14] != id("<|call|>") {
		t.Fatalf("encoded %v: want the tags as their tokens", ids)
	}
	d := tok.NewStreamDecoder()
	var got strings.Builder
	for _, id := range ids {
		got.WriteString(d.Add(id))
	}
	got.WriteString(d.Flush())
	if got.String() != reply {
		t.Errorf("released %q, want %q", got.String(), reply)
	}
}
