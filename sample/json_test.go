package sample

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/tokenizer"
)

func TestJSONValid(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{}`, true},
		{` {"a": 1, "b": [true, false, null, -0.5e+3, 0, 12.25E-1, "x\\n\u00e9\"", {}], "c": {"d": []}}`, true},
		{`{"u": "\u00E9\ud83d\ude00"}`, true},
		{"{\n  \"a\": 1\n}", true},
		{`[]`, false},          // the top level is an object
		{`"a"`, false},         // likewise
		{`{"a" 1}`, false},     // no colon
		{`{"a": 01}`, false},   // leading zero
		{`{"a": 1.}`, false},   // no fraction digits
		{`{"a": -}`, false},    // no digits
		{`{"a": tru}`, false},  // a broken literal
		{`{"a": 1,}`, false},   // trailing comma
		{`{"a": [1,]}`, false}, // likewise
		{`{"a": "x}`, false},   // an open string
		{`{"a": "\x"}`, false}, // a bad escape
		{"{\"a\": \"\x01\"}", false},
		{`{"a": 1]`, false},
		{`{"a": 1} `, false}, // nothing after the object
		{"{\n" + strings.Repeat(" ", 21) + `}`, false},
		{"{\n" + strings.Repeat("\t", 20) + `}`, true},
		{`{  }`, false},                          // one space at a time
		{"{\n\n}", false},                        // one newline
		{"{\t}", false},                          // a newline or a space first
		{`{"a": 1`, false},                       // not closed
		{"{\"€\": \"\xe2\x82\xac\"}", true},      // UTF-8
		{"{\"a\": \"\xff\"}", false},             // not UTF-8
		{"{\"a\": \"\xc0\x80\"}", false},         // overlong
		{"{\"a\": \"\xed\xa0\x80\"}", false},     // a surrogate
		{"{\"a\": \"\xf4\x90\x80\x80\"}", false}, // past U+10FFFF
		{"{\"a\": \"\xe2\x82\"}", false},         // cut short
		{"{\"\xe2\": 1}", false},                 // likewise, in a key
	} {
		if got := JSONValid(tc.in); got != tc.want {
			t.Errorf("JSONValid(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if tc.want && !json.Valid([]byte(tc.in)) {
			t.Errorf("%q: the table says valid, encoding/json does not", tc.in)
		}
	}
}

// FuzzJSONValid: whatever the recognizer accepts, encoding/json accepts,
// and every prefix of an accepted text is accepted as a prefix.
func FuzzJSONValid(f *testing.F) {
	for _, s := range []string{`{}`, `{"a": [1, 2.5e3, "x", {"b": null}]}`, `{"a":-0}`, `{"\u0041":true}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !JSONValid(s) {
			return
		}
		if !json.Valid([]byte(s)) || !strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
			t.Fatalf("accepted %q, which is not one JSON object", s)
		}
		for i := range len(s) {
			r := newJSONSet(objectSchema)
			if !r.feed(s[:i]) || r.complete() {
				t.Fatalf("prefix %q of %q: refused or complete", s[:i], s)
			}
		}
	})
}

// TestJSONMask: over a toy vocabulary, Mask allows exactly the tokens
// that continue the object, and end-of-generation only once it is closed.
func TestJSONMask(t *testing.T) {
	vocab := []string{"", `{"`, `a`, `":`, ` 1`, `}`, `,`, `]`, `x"`, `"`, ` `}
	const eos = 0
	j := ObjectSchema().Constraint(toyVocab(vocab, eos))
	allowed := func() string { return allowedTexts(j, vocab) }
	for _, step := range []struct {
		id   int
		want string // allowed before the step
	}{
		{1, `{"| `},                    // an object, or whitespace first
		{2, `{"|a|":| 1|}|,|]|x"|"| `}, // in a key anything printable goes, '"' ends it
		{3, `{"|a|":| 1|}|,|]|x"|"| `},
		{4, `{"|":| 1|"| `}, // a value (":, a string starting with a colon)
		{5, `}|,| `},        // after a number: ',' or '}' (not ']': an object is open)
	} {
		if got := allowed(); got != step.want {
			t.Fatalf("before %q: allowed %s, want %s", vocab[step.id], got, step.want)
		}
		j.Accept(step.id)
	}
	if got := allowed(); got != "" || !j.Complete() {
		t.Fatalf("after the object: allowed %q (want only end of generation), complete %v", got, j.Complete())
	}
}

// toyVocab is a test vocabulary: token id's text is vocab[id], eos ends
// a generation.
func toyVocab(vocab []string, eos int) *Vocab {
	return NewVocab(len(vocab), func(id int) string { return vocab[id] }, func(id int) bool { return id == eos })
}

// allowedTexts runs j's mask over vocab and returns the texts it lets
// through, joined by "|" (the end-of-generation token's text is "").
func allowedTexts(j *JSON, vocab []string) string {
	l := make([]float32, len(vocab))
	j.Mask(l)
	var out []string
	for id, v := range l {
		if !math.IsInf(float64(v), -1) {
			out = append(out, vocab[id])
		}
	}
	return strings.Join(out, "|")
}

// BenchmarkJSONMask: one Mask over a 32000-token vocabulary of word-like
// pieces (every token tried from the state), inside an object's string
// value (most pieces continue it) and after a value (few do).
func BenchmarkJSONMask(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alpha = `abcdefghijklmnopqrstuvwxyz ,.:"{}[]0123456789`
	vocab := make([]string, 32000)
	for i := 1; i < len(vocab); i++ {
		p := make([]byte, 1+rng.IntN(8))
		for k := range p {
			p[k] = alpha[rng.IntN(len(alpha))]
		}
		vocab[i] = string(p)
	}
	v := toyVocab(vocab, 0)
	logits := make([]float32, len(vocab))
	for _, tc := range []struct{ name, prefix string }{{"in string", `{"a": [{"b": "x`}, {"after value", `{"a": [{"b": 12}`}} {
		b.Run(tc.name, func(b *testing.B) {
			j := ObjectSchema().Constraint(v)
			j.acceptText(tc.prefix)
			for b.Loop() {
				j.Mask(logits)
			}
		})
	}
}

// BenchmarkJSONMaskVocabs: Mask against a trial of every token's text (what
// it saves), over real vocabularies (../shared/vocab: llama's 32000 SPM
// tokens, deepseek-llm's 102400 BPE tokens), in four states of a JSON-mode
// object: inside a string value, after a value, inside a key, before a value.
func BenchmarkJSONMaskVocabs(b *testing.B) {
	for _, name := range []string{"llama-spm", "deepseek-llm"} {
		f, err := gguf.Open(shared.Path(b, "vocab/ggml-vocab-"+name+".gguf"))
		if err != nil {
			b.Fatal(err)
		}
		tok, err := tokenizer.FromGGUF(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		v := NewVocab(tok.VocabSize(), tok.TextPiece, tok.IsEOG)
		logits := make([]float32, tok.VocabSize())
		for _, state := range []struct{ name, prefix, schema string }{{"string", `{"a": [{"b": "x`, ""}, {"after", `{"a": [{"b": 12}`, ""},
			{"key", `{"a": [{"`, ""}, {"value", `{"a": `, ""},
			{"pattern", `{"a": "ab`, `{"properties": {"a": {"pattern": "x"}}}`}, {"date", `{"a": "20`, `{"properties": {"a": {"format": "date"}}}`},
			{"union", `{"pet": {"pet_type": "`, petSchema}, {"union-key", `{"pet": {"`, petSchema}, {"union-value", `{"pet": `, petSchema}} {
			sch := ObjectSchema()
			if state.schema != "" {
				var err error
				if sch, err = CompileSchema([]byte(state.schema)); err != nil {
					b.Fatal(err)
				}
			}
			j := sch.Constraint(v)
			j.acceptText(state.prefix)
			b.Run(name+"/"+state.name+"/mask", func(b *testing.B) {
				for b.Loop() {
					j.Mask(logits)
				}
			})
			b.Run(name+"/"+state.name+"/trial", func(b *testing.B) {
				for b.Loop() {
					for id := range logits {
						ok := v.eog[id] && j.rd.complete()
						if p := v.piece[id]; !v.eog[id] && p != "" {
							r := j.rd.clone()
							ok = r.feed(p)
						}
						if !ok {
							logits[id] = float32(math.Inf(-1))
						}
					}
				}
			})
		}
	}
}
