package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// sample builds a small valid GGUF image with two tensors.
func sample(t testing.TB) []byte {
	t.Helper()
	var m Metadata
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", "llama"},
		{"general.name", "tiny"},
		{"llama.block_count", uint32(2)},
		{"llama.rope.freq_base", float32(10000)},
		{"tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>"}},
		{"tokenizer.ggml.scores", []float32{0, 0, 0}},
		{"nested", []Value{mustValue([]int32{1, 2}), mustValue([]int32{3})}},
		{"flag", true},
		{"big", uint64(1 << 40)},
	} {
		if err := m.Set(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	w := make([]byte, 64*4)
	q := make([]byte, 2*34)
	var buf bytes.Buffer
	err := Write(&buf, &m, []WriteTensor{
		{Name: "a.weight", Shape: []int64{4, 16}, Type: tensor.F32, Data: w},
		{Name: "b.weight", Shape: []int64{2, 32}, Type: tensor.Q8_0, Data: q},
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustValue(x any) Value {
	v, err := MakeValue(x)
	if err != nil {
		panic(err)
	}
	return v
}

func TestRoundTrip(t *testing.T) {
	f, err := Parse(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || len(f.Tensors) != 2 || len(f.Meta.KVs) != 9 {
		t.Fatalf("version %d, %d tensors, %d kvs", f.Version, len(f.Tensors), len(f.Meta.KVs))
	}
	if s, err := f.Meta.String("general.architecture"); err != nil || s != "llama" {
		t.Errorf("architecture = %q, %v", s, err)
	}
	if n, err := f.Meta.Uint32("llama.block_count"); err != nil || n != 2 {
		t.Errorf("block_count = %d, %v", n, err)
	}
	if x, err := f.Meta.Float("llama.rope.freq_base"); err != nil || x != 10000 {
		t.Errorf("freq_base = %v, %v", x, err)
	}
	if toks, err := f.Meta.Strings("tokenizer.ggml.tokens"); err != nil || len(toks) != 3 || toks[1] != "<s>" {
		t.Errorf("tokens = %q, %v", toks, err)
	}
	v, _ := f.Meta.Lookup("nested")
	if v.TypeName() != "array[array]" || v.Len() != 2 {
		t.Errorf("nested = %s len %d", v.TypeName(), v.Len())
	}
	if b, err := f.Meta.Bool("flag"); err != nil || !b {
		t.Errorf("flag = %v, %v", b, err)
	}
	ti, err := f.Tensor("b.weight")
	if err != nil {
		t.Fatal(err)
	}
	if ti.Size != 68 || ti.Shape[0] != 2 || ti.Shape[1] != 32 || ti.NE()[0] != 32 {
		t.Errorf("b.weight: %+v", ti)
	}
	if len(f.Data(ti)) != 68 || (f.DataOffset+ti.Offset)%32 != 0 {
		t.Errorf("b.weight data misplaced")
	}
}

func TestGetterErrors(t *testing.T) {
	f, err := Parse(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		want error
		msg  string
	}{
		{"missing", func() error { _, err := f.Meta.String("nope"); return err }, ErrMissingKey, `key "nope": metadata key not found`},
		{"string as int", func() error { _, err := f.Meta.Int("general.name"); return err }, ErrWrongType, "want integer, file has string"},
		{"int as string", func() error { _, err := f.Meta.String("llama.block_count"); return err }, ErrWrongType, "want string, file has uint32"},
		{"uint32 overflow", func() error { _, err := f.Meta.Uint32("big"); return err }, ErrWrongType, "does not fit in uint32"},
		{"float32s as strings", func() error { _, err := f.Meta.Strings("tokenizer.ggml.scores"); return err }, ErrWrongType, "array[float32]"},
		{"no tensor", func() error { _, err := f.Tensor("c.weight"); return err }, ErrNoTensor, `tensor "c.weight"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v containing %q", err, tc.want, tc.msg)
			}
		})
	}
}

// hostile describes a corruption of the sample file and the error it must give.
type hostile struct {
	name   string
	mutate func(b []byte) []byte
	want   error
	msg    string // substrings of the message, separated by |
}

func put32(b []byte, off int, v uint32) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
func put64(b []byte, off int, v uint64) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }

// find returns the offset of s in b (which must be present).
func find(b []byte, s string) int {
	i := bytes.Index(b, []byte(s))
	if i < 0 {
		panic("not found: " + s)
	}
	return i
}

func TestHostile(t *testing.T) {
	base := sample(t)
	// Offsets into the tensor directory: each entry is name, n_dims, dims..., type, offset.
	bEntry := find(base, "b.weight") - 8
	bDims := bEntry + 8 + len("b.weight")
	bType := bDims + 4 + 16
	bOff := bType + 4
	tokens := find(base, "<unk>") - 8
	cases := []hostile{
		{"empty", func(b []byte) []byte { return nil }, ErrTruncated, "at byte 0: |magic needs 4 bytes, 0 remain"},
		{"bad magic", func(b []byte) []byte { copy(b, "GGML"); return b }, ErrBadMagic, `magic is "GGML"`},
		{"version 1", func(b []byte) []byte { return put32(b, 4, 1) }, ErrVersion, "version 1"},
		{"version 9", func(b []byte) []byte { return put32(b, 4, 9) }, ErrVersion, "version 9 (supported: 2, 3)"},
		{"big endian", func(b []byte) []byte { return put32(b, 4, 3<<24) }, ErrVersion, "big-endian"},
		{"truncated header", func(b []byte) []byte { return b[:20] }, ErrTruncated, "metadata count needs 8 bytes"},
		{"huge kv count", func(b []byte) []byte { return put64(b, 16, 1<<60) }, ErrInvalid, "metadata count 1152921504606846976 cannot fit"},
		{"huge tensor count", func(b []byte) []byte { return put64(b, 8, 1<<50) }, ErrInvalid, "tensor count"},
		{"huge string", func(b []byte) []byte { return put64(b, 24, 1<<62) }, ErrTruncated, "at byte 24: |metadata key of 4611686018427387904 bytes, only"},
		{"huge array", func(b []byte) []byte { return put64(b, tokens-8, 1<<61) }, ErrInvalid, `key "tokenizer.ggml.tokens": |array of 2305843009213693952 string cannot fit`},
		{"bad value type", func(b []byte) []byte {
			return put32(b, find(b, "general.architecture")+len("general.architecture"), 99)
		}, ErrUnknownType, `at byte 52: key "general.architecture": |metadata value type 99`},
		{"not utf8 key", func(b []byte) []byte { b[find(b, "general.name")] = 0xff; return b }, ErrInvalid, "metadata key is not valid UTF-8"},
		{"not utf8 value", func(b []byte) []byte { b[find(b, "<unk>")+1] = 0xc3; return b }, ErrInvalid, `key "tokenizer.ggml.tokens": |string element is not valid UTF-8`},
		{"bad bool", func(b []byte) []byte { b[find(b, "flag")+4+4] = 7; return b }, ErrInvalid, "bool value is 7"},
		{"unknown tensor type", func(b []byte) []byte { return put32(b, bType, 4) }, ErrUnknownType, `tensor "b.weight": |tensor type 4`},
		{"U8, not a ggml type", func(b []byte) []byte { return put32(b, bType, uint32(tensor.U8)) }, ErrUnknownType, `tensor "b.weight": |tensor type 63`},
		{"too many dims", func(b []byte) []byte { return put32(b, bDims, 9) }, ErrInvalid, "9 dimensions"},
		{"row not multiple of block", func(b []byte) []byte { return put64(b, bDims+4, 33) }, ErrInvalid, "row length 33 is not a multiple of Q8_0's block size 32"},
		{"misaligned", func(b []byte) []byte { return put64(b, bOff, 8) }, ErrInvalid, "data offset 8 is not a multiple of the alignment 32"},
		{"overlap", func(b []byte) []byte { return put64(b, bOff, 0) }, ErrInvalid, "overlaps tensor"},
		{"past end", func(b []byte) []byte { return put64(b, bOff, 1<<20) }, ErrTruncated, "runs past the end of the file"},
		{"truncated data", func(b []byte) []byte { return b[:len(b)-40] }, ErrTruncated, `tensor "b.weight": |data [800, 868) runs past the end of the file (856 bytes)`},
		{"truncated directory", func(b []byte) []byte { return b[:bType+2] }, ErrTruncated, `tensor "b.weight": |tensor type needs 4 bytes, 2 remain`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(bytes.Clone(base))
			f, err := Parse(b)
			if err == nil {
				t.Fatalf("parsed a hostile file: %d tensors", len(f.Tensors))
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v is not %v", err, tc.want)
			}
			for _, part := range strings.Split(tc.msg, "|") {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not contain %q", err, part)
				}
			}
			var ge *Error
			if !errors.As(err, &ge) || ge.Stage() != "load" {
				t.Errorf("error %T is not a load-stage *Error", err)
			}
		})
	}
}

func TestBadAlignment(t *testing.T) {
	var m Metadata
	m.Set("general.alignment", uint32(24))
	var buf bytes.Buffer
	// The writer refuses it, so build the header by hand.
	e := &encoder{w: &buf}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(0)
	e.u64(1)
	e.str("general.alignment")
	e.u32(uint32(TypeUint32))
	e.u32(24)
	_, err := Parse(buf.Bytes())
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "alignment 24 is not a power of two") {
		t.Fatalf("got %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample(f))
	f.Add([]byte("GGUF"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := Parse(b)
		if err != nil {
			var ge *Error
			if !errors.As(err, &ge) {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			return
		}
		for i := range g.Tensors {
			d := g.Data(&g.Tensors[i])
			if int64(len(d)) != g.Tensors[i].Size {
				t.Fatalf("tensor %q: %d bytes, want %d", g.Tensors[i].Name, len(d), g.Tensors[i].Size)
			}
		}
		for _, kv := range g.Meta.KVs {
			_ = kv.Value.String()
		}
	})
}

// TestVersion2 checks that a version 2 file (the same layout as version 3,
// which only added big-endian variants) reads like version 3.
func TestVersion2(t *testing.T) {
	b := sample(t)
	binary.LittleEndian.PutUint32(b[4:], 2)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || len(f.Tensors) != 2 {
		t.Fatalf("version %d, %d tensors", f.Version, len(f.Tensors))
	}
}
