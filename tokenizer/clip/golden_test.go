package clip

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// goldenCase is one line of clip-tokens.jsonl or testdata/sdcpp-tokens.jsonl:
// what stable-diffusion.cpp's tokenizer gives for a prompt.
type goldenCase struct {
	Prompt    string               `json:"prompt"`
	PromptHex string               `json:"prompt_hex"` // a prompt that is not UTF-8
	Error     string               `json:"error"`      // sd.cpp throws (std::stof)
	Attention [][2]json.RawMessage `json:"attention"`
	Encode    []int32              `json:"encode"`
	NChunks   int                  `json:"n_chunks"`
	Tokens    []int32              `json:"tokens"`
	Weights   []float32            `json:"weights"`
}

func (c *goldenCase) prompt(t *testing.T) string {
	if c.PromptHex == "" {
		return c.Prompt
	}
	b, err := hex.DecodeString(c.PromptHex)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// spans decodes the attention pairs: [text, weight], text a string or
// {"hex": ...}.
func (c *goldenCase) spans(t *testing.T) []Span {
	var out []Span
	for _, a := range c.Attention {
		var s Span
		if err := json.Unmarshal(a[0], &s.Text); err != nil {
			var h struct{ Hex string }
			if err := json.Unmarshal(a[0], &h); err != nil {
				t.Fatal(err)
			}
			b, _ := hex.DecodeString(h.Hex)
			s.Text = string(b)
		}
		if err := json.Unmarshal(a[1], &s.Weight); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func readCases(t *testing.T, path string) []goldenCase {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []goldenCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c goldenCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGolden checks every line of sd.cpp's clip-tokens.jsonl and of
// testdata/sdcpp-tokens.jsonl: the emphasis spans, the plain encoding, the
// windows' ids and weights and their count, all exactly.
func TestGolden(t *testing.T) {
	files := []string{shared.Path(t, "golden/sd15/clip-tokens.jsonl"), "testdata/sdcpp-tokens.jsonl"}
	for _, path := range files {
		cases := readCases(t, path)
		if len(cases) < 20 {
			t.Fatalf("%s: only %d cases", path, len(cases))
		}
		for i, c := range cases {
			prompt := c.prompt(t)
			name := prompt
			if len(name) > 40 {
				name = name[:40]
			}
			t.Run(name, func(t *testing.T) {
				if c.Error != "" {
					_, err := Tokenize(prompt)
					var e *Error
					if !errors.As(err, &e) || !errors.Is(err, ErrWeight) || e.Stage() != "encode" {
						t.Fatalf("line %d: Tokenize(%q) = %v, want an encode-stage ErrWeight (sd.cpp: %s)", i+1, prompt, err, c.Error)
					}
					return
				}
				spans, err := ParseAttention(prompt)
				if err != nil {
					t.Fatal(err)
				}
				if want := c.spans(t); !slices.Equal(spans, want) {
					t.Errorf("line %d: ParseAttention = %+v, want %+v", i+1, spans, want)
				}
				enc, err := Encode(prompt)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(enc, c.Encode) {
					t.Errorf("line %d: Encode = %v, want %v", i+1, enc, c.Encode)
				}
				tok, err := Tokenize(prompt)
				if err != nil {
					t.Fatal(err)
				}
				if tok.Chunks != c.NChunks || !slices.Equal(tok.IDs, c.Tokens) || !slices.Equal(tok.Weights, c.Weights) {
					t.Errorf("line %d: Tokenize = %d chunks\n%v\n%v\nwant %d\n%v\n%v", i+1, tok.Chunks, tok.IDs, tok.Weights, c.NChunks, c.Tokens, c.Weights)
				}
			})
		}
	}
}

// TestVocabFile checks the embedded merge file against its provenance
// table (vocab/README.md).
func TestVocabFile(t *testing.T) {
	readme, err := os.ReadFile("vocab/README.md")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256Hex(mergesGz)
	if !strings.Contains(string(readme), sum) || len(mergesGz) != 1356917 {
		t.Errorf("embedded merges: %d bytes, sha256 %s: not the file vocab/README.md describes", len(mergesGz), sum)
	}
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
