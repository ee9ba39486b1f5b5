package tokenizer

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

var ugmModels = []string{"ugm-t5like.model", "ugm-bytefb.model"}

// loadSP builds the tokenizer of a SentencePiece model in the shared
// vocab/ugm folder, once per test binary.
func loadSP(t testing.TB, name string) *Tokenizer {
	t.Helper()
	loadMu.Lock()
	defer loadMu.Unlock()
	if tok, ok := loaded["ugm/"+name]; ok {
		return tok
	}
	tok, err := FromSentencePiece(readSP(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	loaded["ugm/"+name] = tok
	return tok
}

func readSP(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "vocab/ugm/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkIDs(t *testing.T, tok *Tokenizer, texts []string, want [][]int) {
	t.Helper()
	fails := 0
	for i, text := range texts {
		got, err := tok.Encode(text, false, false)
		if err != nil {
			t.Errorf("text %d %q: %v", i, text, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want[i]) {
			if fails++; fails <= 10 {
				t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want[i])
			}
		}
	}
	if fails > 0 {
		t.Errorf("%d of %d texts differ", fails, len(texts))
	}
}

// TestUGMVectors: every text of the sentencepiece-made vectors encodes to
// exactly sentencepiece's ids.
func TestUGMVectors(t *testing.T) {
	dir := filepath.Dir(shared.Path(t, "vocab/ugm/README.md"))
	for _, name := range ugmModels {
		t.Run(name, func(t *testing.T) {
			inp := filepath.Join(dir, name+".inp")
			texts, want := readVectors(t, inp, strings.TrimSuffix(inp, ".inp")+".out")
			checkIDs(t, loadSP(t, name), texts, want)
		})
	}
}

// TestUGMRandom: random byte strings (invalid UTF-8, compatibility
// characters, whitespace runs) give sentencepiece's ids (testdata/README.md).
func TestUGMRandom(t *testing.T) {
	b, err := os.ReadFile("testdata/ugm-random.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		TextHex string `json:"text_hex"`
		T5like  []int  `json:"t5like"`
		Bytefb  []int  `json:"bytefb"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(cases))
	want := map[string][][]int{}
	for i, c := range cases {
		raw, err := hex.DecodeString(c.TextHex)
		if err != nil {
			t.Fatal(err)
		}
		texts[i] = string(raw)
		want[ugmModels[0]] = append(want[ugmModels[0]], c.T5like)
		want[ugmModels[1]] = append(want[ugmModels[1]], c.Bytefb)
	}
	for _, name := range ugmModels {
		t.Run(name, func(t *testing.T) { checkIDs(t, loadSP(t, name), texts, want[name]) })
	}
}

// TestUGMSpecial: EOS appended with addSpecial, control text kept as text
// unless parsed, Decode giving the normalized text back.
func TestUGMSpecial(t *testing.T) {
	tok := loadSP(t, "ugm-t5like.model")
	if tok.Model() != "t5" || tok.EOS() != 1 || tok.BOS() != -1 || tok.UNK() != 2 || tok.AddBOS() || !tok.AddEOS() {
		t.Fatalf("model %q eos %d bos %d unk %d addBOS %v addEOS %v", tok.Model(), tok.EOS(), tok.BOS(), tok.UNK(), tok.AddBOS(), tok.AddEOS())
	}
	plain, err := tok.Encode("Hello world", false, false)
	if err != nil {
		t.Fatal(err)
	}
	withEOS, err := tok.Encode("Hello world", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(withEOS) != fmt.Sprint(append(plain, 1)) {
		t.Fatalf("addSpecial: %v, want %v + 1", withEOS, plain)
	}
	if got := tok.Decode(withEOS); got != "Hello world" {
		t.Fatalf("Decode = %q", got)
	}
	asText, _ := tok.Encode("a</s>", false, false)
	parsed, _ := tok.Encode("a</s>", false, true)
	if len(asText) < 2 || asText[len(asText)-1] == 1 {
		t.Fatalf("</s> as text gave %v", asText)
	}
	if parsed[len(parsed)-1] != 1 {
		t.Fatalf("</s> parsed gave %v", parsed)
	}
	for _, s := range []string{"", " ", "  \t\n "} {
		if ids, err := tok.Encode(s, true, false); err != nil || fmt.Sprint(ids) != "[1]" {
			t.Errorf("Encode(%q) = %v, %v; want [1]", s, ids, err)
		}
	}
}

// TestUGMUnknownRuns: without byte fallback a run of unknown characters is
// one <unk>; with it, every byte is its own piece.
func TestUGMUnknownRuns(t *testing.T) {
	t5 := loadSP(t, "ugm-t5like.model")
	ids, _ := t5.Encode("☃☃☃", false, false)
	if n := strings.Count(fmt.Sprint(ids), " 2") + strings.Count(fmt.Sprint(ids), "[2"); n != 1 {
		t.Errorf("t5like: %v, want one <unk>", ids)
	}
	fb := loadSP(t, "ugm-bytefb.model")
	ids, _ = fb.Encode("☃☃☃", false, false)
	var b []byte
	for _, id := range ids {
		b = append(b, fb.Piece(id)...)
	}
	if !strings.HasSuffix(string(b), "☃☃☃") || len(ids) < 9 {
		t.Errorf("bytefb: %v (%q), want 9 byte pieces", ids, b)
	}
}

// spBuilder writes ModelProto messages for tests.
type spBuilder []byte

func (b spBuilder) varint(v uint64) spBuilder {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
func (b spBuilder) key(field, wire int) spBuilder { return b.varint(uint64(field)<<3 | uint64(wire)) }
func (b spBuilder) bytes(field int, p []byte) spBuilder {
	return append(b.key(field, wireBytes).varint(uint64(len(p))), p...)
}
func (b spBuilder) int(field int, v int64) spBuilder {
	return b.key(field, wireVarint).varint(uint64(v))
}
func (b spBuilder) float(field int, f float32) spBuilder {
	u := math.Float32bits(f)
	return append(b.key(field, wireFixed32), byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
}

func spPieceMsg(text string, score float32, typ int) []byte {
	return spBuilder(nil).bytes(1, []byte(text)).float(2, score).int(3, int64(typ))
}

// tinySP is a unigram model without a charsmap: <unk>, <s>, </s>, then
// pieces.
func tinySP(extra ...[]byte) spBuilder {
	var b spBuilder
	b = b.bytes(1, spPieceMsg("<unk>", 0, 2)).bytes(1, spPieceMsg("<s>", 0, 3)).bytes(1, spPieceMsg("</s>", 0, 3))
	for _, p := range [][]byte{
		spPieceMsg("\u2581", -1, 1), spPieceMsg("a", -2, 1), spPieceMsg("b", -2, 1), spPieceMsg("\u2581a", -1.5, 1),
		spPieceMsg("ab", 0, 4), spPieceMsg("bb", -0.1, 5),
	} {
		b = b.bytes(1, p)
	}
	for _, e := range extra {
		b = append(b, e...)
	}
	return b
}

// TestUGMUserDefined: a user-defined piece always wins, unused pieces are
// never chosen, and the Viterbi path is the best one.
func TestUGMUserDefined(t *testing.T) {
	tok, err := FromSentencePiece(tinySP())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want string
	}{
		{"a", "[6]"},                 // ▁a (-1.5) beats ▁ + a (-3)
		{"ab", "[3 7]"},              // ▁ ab: the user-defined piece beats ▁a b
		{"bab", "[3 5 7]"},           // ▁ b ab
		{"bb", "[3 5 5]"},            // bb is unused
		{"a  b", "[6 3 5]"},          // spaces collapsed
		{"c", "[3 0]"},               // unknown character
		{"ccc", "[3 0]"},             // one <unk> for the run
		{"  a ", "[6]"},              // leading and trailing space dropped
		{"\xff", "[3 0]"},            // U+FFFD is unknown too
		{"a\u2581", "[6]"},           // a trailing ▁ in the text goes as a space does
		{"\u2581\u2581a", "[3 3 6]"}, // ▁ in the text is not collapsed
	} {
		ids, err := tok.Encode(c.text, false, false)
		if err != nil || fmt.Sprint(ids) != c.want {
			t.Errorf("Encode(%q) = %v, %v; want %s", c.text, ids, err, c.want)
		}
	}
}

// TestSPModelErrors: every malformed model is an error naming the cause.
func TestSPModelErrors(t *testing.T) {
	good := tinySP()
	trainer := func(fields spBuilder) spBuilder { return spBuilder(nil).bytes(2, fields) }
	norm := func(fields spBuilder) spBuilder { return spBuilder(nil).bytes(3, fields) }
	tests := []struct {
		name   string
		data   []byte
		is     error
		substr string
	}{
		{"empty", nil, ErrInvalid, "no pieces"},
		{"truncated", good[:len(good)-3], errProto, "bytes but"},
		{"long varint", []byte{0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, errProto, "overflows 64 bits"},
		{"field 0", []byte{0x00, 0x01}, errProto, "field number 0"},
		{"group", []byte{0x0b}, errProto, "wire type 3"},
		{"wrong wire", spBuilder(nil).bytes(1, spBuilder(nil).int(2, 5)), errProto, "field 2 has wire type 0, want 5"},
		{"piece type", spBuilder(nil).bytes(1, spPieceMsg("x", 0, 9)), errProto, "piece 0 has type 9"},
		{"bpe", tinySP(trainer(spBuilder(nil).int(3, 2))), ErrUnsupported, "model type BPE"},
		{"model type", tinySP(trainer(spBuilder(nil).int(3, 7))), ErrInvalid, "model type 7"},
		{"no unk", spBuilder(nil).bytes(1, spPieceMsg("a", -1, 1)), ErrInvalid, "no unknown piece"},
		{"two unk", tinySP(spBuilder(nil).bytes(1, spPieceMsg("<u2>", 0, 2))), ErrInvalid, "unknown pieces 0 and 9"},
		{"duplicate", tinySP(spBuilder(nil).bytes(1, spPieceMsg("a", -3, 1))), ErrInvalid, `piece "a" has ids 4 and 9`},
		{"empty piece", tinySP(spBuilder(nil).bytes(1, spPieceMsg("", -3, 1))), ErrInvalid, "piece 9 is empty"},
		{"byte without fallback", tinySP(spBuilder(nil).bytes(1, spPieceMsg("<0x41>", 0, 6))), ErrInvalid, "byte fallback is off"},
		{"bad byte piece", tinySP(trainer(spBuilder(nil).int(35, 1)), spBuilder(nil).bytes(1, spPieceMsg("<0x4g>", 0, 6))), ErrInvalid, "is not <0xNN>"},
		{"missing bytes", tinySP(trainer(spBuilder(nil).int(35, 1)), spBuilder(nil).bytes(1, spPieceMsg("<0x41>", 0, 6))), ErrInvalid, "no piece <0x00>"},
		{"charsmap short", tinySP(norm(spBuilder(nil).bytes(2, []byte{1, 0}))), ErrInvalid, "charsmap of 2 bytes"},
		{"charsmap trie", tinySP(norm(spBuilder(nil).bytes(2, []byte{9, 0, 0, 0, 1, 2}))), ErrInvalid, "trie of 9 bytes in a blob of 6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromSentencePiece(tc.data)
			if err == nil {
				t.Fatal("no error")
			}
			var te *Error
			if !errors.As(err, &te) || te.Stage() != "encode" || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.substr) {
				t.Fatalf("error %v, want %v containing %q", err, tc.is, tc.substr)
			}
		})
	}
}

// TestCharsmapHostile: a charsmap whose replacement offset is outside the
// blob makes Encode fail, not panic.
func TestCharsmapHostile(t *testing.T) {
	// A double array with root offset 0: unit 'a' (97) labelled 'a' with
	// a leaf, whose value unit (97 ^ 0) points at offset 100.
	da := make([]uint32, 128)
	da[0] = 0
	da['a'] = 'a' | 1<<8 // label 'a', has_leaf, offset 0 -> value at 'a'^0
	blob := make([]byte, 4+4*len(da))
	blob[0], blob[1] = byte(4*len(da)), byte(4*len(da)>>8)
	for i, u := range da {
		for k := 0; k < 4; k++ {
			blob[4+4*i+k] = byte(u >> (8 * k))
		}
	}
	// The value read is da['a'] itself masked: 'a'|1<<8 = 353 > 3 bytes.
	blob = append(blob, 'x', 0, 'y')
	tok, err := FromSentencePiece(tinySP(spBuilder(nil).bytes(3, spBuilder(nil).bytes(2, blob))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Encode("ba", false, false); err == nil || !strings.Contains(err.Error(), "outside 3 bytes") {
		t.Fatalf("err = %v", err)
	}
}

// ugmMeta is the GGUF metadata llama.cpp's converter writes for a
// SentencePiece unigram model.
func ugmMeta(t testing.TB, m *spModel) *gguf.Metadata {
	t.Helper()
	md := &gguf.Metadata{}
	var toks []string
	var scores []float32
	var types []int32
	for _, p := range m.pieces {
		toks, scores, types = append(toks, p.text), append(scores, p.score), append(types, int32(p.typ))
	}
	for _, kv := range []struct {
		k string
		v any
	}{
		{keyModel, "t5"}, {keyTokens, toks}, {keyScores, scores}, {keyTypes, types},
		{keyCharsmap, m.charsmap}, {keyAddSpc, m.addDummyPrefix}, {keyRemoveSpace, m.removeExtraSpace},
		{"tokenizer.ggml.eos_token_id", uint32(m.eosID)}, {"tokenizer.ggml.unknown_token_id", uint32(m.unkID)},
		{"tokenizer.ggml.padding_token_id", uint32(m.padID)},
	} {
		if err := md.Set(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	return md
}

// TestUGMGGUF: a GGUF "t5" vocabulary written from the model tokenizes the
// vectors as the model does.
func TestUGMGGUF(t *testing.T) {
	m, err := parseSPModel(readSP(t, "ugm-t5like.model"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t5.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(f, ugmMeta(t, m), nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromGGUF(g)
	g.Close()
	if err != nil {
		t.Fatal(err)
	}
	if tok.Model() != "t5" || tok.EOS() != 1 || !tok.AddEOS() {
		t.Fatalf("model %q eos %d addEOS %v", tok.Model(), tok.EOS(), tok.AddEOS())
	}
	dir := filepath.Dir(shared.Path(t, "vocab/ugm/README.md"))
	inp := filepath.Join(dir, "ugm-t5like.model.inp")
	texts, want := readVectors(t, inp, strings.TrimSuffix(inp, ".inp")+".out")
	checkIDs(t, tok, texts, want)

	md := ugmMeta(t, m)
	md.Set(keyCharsmap, []float32{1})
	if _, err := fromMeta(md, nil); err == nil || !strings.Contains(err.Error(), "want an array of uint8 or int8") {
		t.Fatalf("float charsmap: %v", err)
	}
	md = ugmMeta(t, m)
	md.Set(keyTypes, []int32{9})
	if _, err := fromMeta(md, nil); err == nil || !strings.Contains(err.Error(), "1 token types for 2000 tokens") {
		t.Fatalf("short types: %v", err)
	}
}

// FuzzSentencePiece: any bytes either fail to load with an error or give a
// tokenizer whose Encode returns ids inside the vocabulary (or an error).
func FuzzSentencePiece(f *testing.F) {
	f.Add([]byte(tinySP()), "ab a  bab c\xff")
	f.Add([]byte(tinySP(spBuilder(nil).bytes(2, spBuilder(nil).int(35, 1)))), "x")
	m, err := parseSPModel(readSP(f, "ugm-t5like.model"))
	if err != nil {
		f.Fatal(err)
	}
	// A small model with the real charsmap.
	small := tinySP(spBuilder(nil).bytes(3, spBuilder(nil).bytes(2, m.charsmap)))
	f.Add([]byte(small), "Ｈｅｌｌｏ ﬁ ①\u3000x")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tok, err := FromSentencePiece(data)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		ids, err := tok.Encode(text, true, len(text)%2 == 0)
		if err != nil {
			return
		}
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d outside vocabulary of %d", id, tok.VocabSize())
			}
		}
		tok.Decode(ids)
	})
}

// FuzzUGMEncode: any text encodes with the shared models; with byte
// fallback the pieces spell the normalized text exactly.
func FuzzUGMEncode(f *testing.F) {
	for _, s := range roundTripTexts {
		f.Add(s)
	}
	f.Add("a\xffb\xe2\x82 c\xc3 ☃☃ ﬁ\u3000Ｘ")
	toks := []*Tokenizer{loadSP(f, ugmModels[0]), loadSP(f, ugmModels[1])}
	f.Fuzz(func(t *testing.T, text string) {
		for k, tok := range toks {
			ids, err := tok.Encode(text, false, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if id < 0 || id >= tok.VocabSize() {
					t.Fatalf("id %d outside vocabulary", id)
				}
			}
			if k == 1 {
				norm, err := tok.ugm.norm.normalize(text)
				if err != nil {
					t.Fatal(err)
				}
				var raw []byte
				for _, id := range ids {
					if tok.attrs[id]&attrByte != 0 {
						raw = append(raw, tok.pieces[id]...)
					} else {
						raw = append(raw, tok.tokens[id]...)
					}
				}
				if string(raw) != norm {
					t.Fatalf("pieces spell %q, normalized text is %q", raw, norm)
				}
			}
		}
	})
}

// BenchmarkUGMEncode: 64 KiB of prose through the unigram models.
func BenchmarkUGMEncode(b *testing.B) {
	text := benchText(64 << 10)
	for _, name := range ugmModels {
		b.Run(name, func(b *testing.B) {
			tok := loadSP(b, name)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tok.Encode(text, true, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFromSentencePiece: loading a model file.
func BenchmarkFromSentencePiece(b *testing.B) {
	data := readSP(b, "ugm-bytefb.model")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromSentencePiece(data); err != nil {
			b.Fatal(err)
		}
	}
}
