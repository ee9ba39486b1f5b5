package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/glassbox-ai/glassbox/tensor"
)

// file is a safetensors file with header h and data bytes of zeros.
func file(header string, data int) []byte {
	b := make([]byte, 8, 8+len(header)+data)
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, data)...)
}

func TestParse(t *testing.T) {
	good := `{"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"__metadata__":{"format":"pt"}}  `
	f, err := Parse("x.safetensors", file(good, 12))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 2 || f.Tensors[0].Name != "a" || f.Tensors[1].Name != "b" || f.Metadata["format"] != "pt" {
		t.Fatalf("parsed %+v", f)
	}
	if b, ok := f.Tensor("b"); !ok || len(b.Data) != 8 || b.Offset != 4 || b.Size != 8 {
		t.Fatalf("b = %+v", b)
	}
	if _, ok := f.Tensor("c"); ok {
		t.Fatal("found a tensor that is not there")
	}
	if f.HeaderBytes() != int64(8+len(good)) {
		t.Errorf("HeaderBytes = %d", f.HeaderBytes())
	}
}

// TestParseErrors: every way a header can be wrong fails with ErrFormat, an
// error naming the file (and the tensor, when one is at fault) and the
// numbers.
func TestParseErrors(t *testing.T) {
	f32 := func(name string, n, begin int) string {
		return `"` + name + `":{"dtype":"F32","shape":[` + itoa(n) + `],"data_offsets":[` + itoa(begin) + `,` + itoa(begin+4*n) + `]}`
	}
	tests := []struct {
		name, header string
		data         int // bytes of data; negative: cut that many off the end
		want         string
	}{
		{"short", "", -8, "shorter than the 8-byte header length"},
		{"past end", `{}`, -1, "runs past the end"},
		{"over the limit", "", -8 + 1, ""}, // replaced below
		{"not json", `[1]`, 0, "does not start with '{'"},
		{"bad json", `{"a":`, 0, "header entry"},
		{"unterminated", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}`, 4, "header JSON"},
		{"trailing json", `{}{}`, 0, "data after the object"},
		{"key not string", `{1:2}`, 0, "header JSON"},
		{"dtype", `{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, 1, `dtype "Q4"`},
		{"no shape", `{"a":{"dtype":"F32","data_offsets":[0,4]}}`, 4, `no "shape"`},
		{"negative dim", `{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4, "dimension 0 is -1"},
		{"fractional dim", `{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, 4, "header entry"},
		{"too many dims", `{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}}`, 4, "9 dimensions"},
		{"huge shape", `{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, 8, "overflows"},
		{"huge dim", `{"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}}`, 8, "header entry"},
		{"offsets count", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, 4, "data_offsets has 1 values"},
		{"offsets reversed", `{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, 4, "outside"},
		{"truncated", `{` + f32("a", 4, 0) + `}`, 8, "outside the 8-byte data section"},
		{"size", `{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8, "needs 12"},
		{"overlap", `{` + f32("a", 2, 0) + `,` + f32("b", 1, 4) + `}`, 8, `overlap tensor "a"'s`},
		{"gap", `{` + f32("a", 1, 0) + `,` + f32("b", 1, 8) + `}`, 12, `gap of 4 bytes after tensor "a"`},
		{"gap first", `{` + f32("a", 1, 4) + `}`, 8, "must start at 0"},
		{"bytes after", `{` + f32("a", 1, 0) + `}`, 6, "2 bytes after the last one"},
		{"twice", `{` + f32("a", 1, 0) + `,` + f32("a", 1, 4) + `}`, 8, "named twice"},
		{"metadata number", `{"__metadata__":{"a":1}}`, 0, "object of strings"},
		{"metadata null", `{"__metadata__":{"a":null}}`, 0, "object of strings"},
		{"metadata array", `{"__metadata__":["a"]}`, 0, "object of strings"},
		{"metadata twice", `{"__metadata__":{},"__metadata__":{}}`, 0, "given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := file(tc.header, max(tc.data, 0))
			if tc.data < 0 {
				b = b[:len(b)+tc.data]
			}
			want := tc.want
			if tc.name == "over the limit" {
				b = make([]byte, 16)
				binary.LittleEndian.PutUint64(b, MaxHeader+1)
				want = "over the 100000000-byte limit"
			}
			_, err := Parse("x.safetensors", b)
			if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want %q", err, want)
			}
			if !strings.Contains(err.Error(), "load: x.safetensors") {
				t.Errorf("error %q does not name the stage and file", err)
			}
			// The header-only reader agrees.
			_, herr := ParseHeader("x.safetensors", b, int64(len(b)))
			if herr == nil || herr.Error() != err.Error() {
				t.Errorf("ParseHeader: %v, Parse: %v", herr, err)
			}
		})
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// TestWriteRead: what Write writes, Open reads back (names, dtypes,
// shapes, bytes, metadata in any dtype the reader knows), and ReadHeader
// sees the same directory without reading the data.
func TestWriteRead(t *testing.T) {
	type tc struct {
		name  string
		dt    tensor.DType
		shape []int
	}
	ts := []tc{
		{"z.weight", tensor.F32, []int{2, 3}},
		{"a.bias", tensor.F16, []int{3}},
		{"scalar", tensor.BF16, []int{}},
		{"empty", tensor.F32, []int{0, 4}},
		{"ids", tensor.I64, []int{2}},
		{"conv", tensor.F16, []int{2, 1, 3, 3}},
		{"<html>&é", tensor.I8, []int{5}},
	}
	fill := func(i int, n int) []byte {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i*31 + j)
		}
		return b
	}
	var wts []WriteTensor
	for i, x := range ts {
		size := x.dt.TypeSize()
		for _, d := range x.shape {
			size *= d
		}
		data := fill(i, size)
		wts = append(wts, WriteTensor{Name: x.name, DType: x.dt, Shape: x.shape, Fill: func(w io.Writer) error { _, err := w.Write(data); return err }})
	}
	meta := []KV{{"format", "pt"}, {"note", "quote \" and <tag> and \n"}}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(out, wts, meta); err != nil {
		t.Fatal(err)
	}
	out.Close()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if (8+f.HeaderBytes()-8)%8 != 0 {
		t.Errorf("header of %d bytes is not padded to 8", f.HeaderBytes())
	}
	if len(f.Tensors) != len(ts) || f.Metadata["note"] != meta[1].Value || f.Metadata["format"] != "pt" {
		t.Fatalf("read %d tensors, metadata %v", len(f.Tensors), f.Metadata)
	}
	for i, x := range ts {
		got := f.Tensors[i] // file order is write order
		if got.Name != x.name || got.DType != x.dt || !slices.Equal(got.Shape, x.shape) || !bytes.Equal(got.Data, fill(i, len(got.Data))) {
			t.Errorf("tensor %d: %s %s %v (%d bytes), wrote %s %s %v", i, got.Name, got.DType, got.Shape, len(got.Data), x.name, x.dt, x.shape)
		}
	}
	h, err := ReadHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range h.Tensors {
		if h.Tensors[i].Data != nil || h.Tensors[i].Size != int64(len(f.Tensors[i].Data)) || h.Tensors[i].Offset != f.Tensors[i].Offset {
			t.Errorf("ReadHeader tensor %d: %+v", i, h.Tensors[i])
		}
	}
}

// TestWriteErrors: what the writer refuses, and a Fill that writes the
// wrong number of bytes.
func TestWriteErrors(t *testing.T) {
	ok := func(w io.Writer) error { _, err := w.Write(make([]byte, 4)); return err }
	tests := []struct {
		name string
		ts   []WriteTensor
		want string
	}{
		{"dtype", []WriteTensor{{Name: "a", DType: tensor.Q4_0, Shape: []int{32}, Fill: ok}}, "has no safetensors name"},
		{"twice", []WriteTensor{{Name: "a", DType: tensor.F32, Shape: []int{1}, Fill: ok}, {Name: "a", DType: tensor.F32, Shape: []int{1}, Fill: ok}}, "given twice"},
		{"reserved", []WriteTensor{{Name: "__metadata__", DType: tensor.F32, Shape: []int{1}, Fill: ok}}, "reserved"},
		{"negative", []WriteTensor{{Name: "a", DType: tensor.F32, Shape: []int{-1}, Fill: ok}}, "negative dimension"},
		{"short fill", []WriteTensor{{Name: "a", DType: tensor.F32, Shape: []int{2}, Fill: ok}}, "wrote 4 bytes, shape [2] of F32 needs 8"},
		{"fill error", []WriteTensor{{Name: "a", DType: tensor.F32, Shape: []int{1}, Fill: func(io.Writer) error { return io.ErrUnexpectedEOF }}}, "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(io.Discard, tc.ts, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	seeds := []struct {
		header string
		data   int
	}{
		{`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"__metadata__":{"k":"v"}}`, 4},
		{`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`, 0},
		{`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4},                                                         // truncated
		{`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8},    // overlapping
		{`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, 8},                                     // huge shape
		{`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8},    // duplicate key
		{`{"__metadata__":{"a":1,"b":["x"]}}`, 0},                                                                             // non-string metadata
		{`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]}}`, 10}, // gap
		{`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}` + "        ", 6},                                            // padding, bytes after
	}
	for _, s := range seeds {
		f.Add(file(s.header, s.data))
	}
	over := make([]byte, 16)
	binary.LittleEndian.PutUint64(over, MaxHeader+1) // header over the limit
	f.Add(over)
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse("fuzz", b)
		hfile, herr := ParseHeader("fuzz", b, int64(len(b)))
		if (err == nil) != (herr == nil) {
			t.Fatalf("Parse: %v, ParseHeader: %v", err, herr)
		}
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		end := int64(0)
		for i, t2 := range file.Tensors {
			n := int64(t2.DType.TypeSize())
			for _, d := range t2.Shape {
				n *= int64(d)
			}
			if n != int64(len(t2.Data)) || n != t2.Size || t2.Offset != end || hfile.Tensors[i].Size != n {
				t.Fatalf("tensor %q: %d bytes at %d for shape %v (previous end %d)", t2.Name, len(t2.Data), t2.Offset, t2.Shape, end)
			}
			end += n
		}
		if end != int64(len(b))-file.HeaderBytes() {
			t.Fatalf("tensors end at %d of a %d-byte data section", end, int64(len(b))-file.HeaderBytes())
		}
	})
}

// FuzzWriteRead: whatever names, shapes and metadata Write accepts, Parse
// reads back the same (names are lines of the first input, shapes come
// from the bytes of the second).
func FuzzWriteRead(f *testing.F) {
	f.Add("a\nb.weight\n<&>\"\\é", []byte{2, 3, 0, 1}, "k", "v\n\x00")
	f.Add("", []byte{}, "", "")
	f.Fuzz(func(t *testing.T, names string, dims []byte, key, value string) {
		var ts []WriteTensor
		for i, n := range strings.Split(names, "\n") {
			var shape []int
			if i < len(dims) {
				shape = []int{int(dims[i] % 5), int(dims[i] / 64)}
			}
			size := 4
			for _, d := range shape {
				size *= d
			}
			b := bytes.Repeat([]byte{byte(i)}, size)
			ts = append(ts, WriteTensor{Name: n, DType: tensor.F32, Shape: shape, Fill: func(w io.Writer) error { _, err := w.Write(b); return err }})
		}
		var meta []KV
		if key != "" {
			meta = []KV{{key, value}}
		}
		var buf bytes.Buffer
		if err := Write(&buf, ts, meta); err != nil {
			return // empty, reserved or repeated names
		}
		file, err := Parse("fuzz", buf.Bytes())
		if err != nil {
			if !utf8.ValidString(names) || !utf8.ValidString(key) || !utf8.ValidString(value) {
				return // JSON replaces invalid UTF-8, so two names may become one
			}
			t.Fatalf("Parse of Write's output: %v", err)
		}
		if len(file.Tensors) != len(ts) {
			t.Fatalf("%d tensors read, %d written", len(file.Tensors), len(ts))
		}
		for i, w := range ts {
			got := file.Tensors[i]
			if utf8.ValidString(w.Name) && got.Name != w.Name || !slices.Equal(got.Shape, w.Shape) && len(w.Shape) > 0 {
				t.Fatalf("tensor %d: %q %v, wrote %q %v", i, got.Name, got.Shape, w.Name, w.Shape)
			}
		}
		if key != "" && utf8.ValidString(key) && utf8.ValidString(value) && file.Metadata[key] != value {
			t.Fatalf("metadata %q = %q, wrote %q", key, file.Metadata[key], value)
		}
	})
}

// TestEvict drops a mapped tensor's pages and reads it back unchanged;
// bytes outside the mapping are left alone.
func TestEvict(t *testing.T) {
	const n = 3 << 16 // 192 Ki F32 values: whole pages inside the tensor
	data := make([]byte, 4*n)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "e.safetensors")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := []WriteTensor{{Name: "w", DType: tensor.F32, Shape: []int{n}, Fill: func(w io.Writer) error { _, err := w.Write(data); return err }}}
	if err := Write(out, w, nil); err != nil {
		t.Fatal(err)
	}
	out.Close()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tt, _ := f.Tensor("w")
	f.Evict(tt.Data)
	if !bytes.Equal(tt.Data, data) {
		t.Fatal("tensor changed after Evict")
	}
	heap := append([]byte(nil), data...)
	f.Evict(heap) // not the mapping's: nothing happens
	if !bytes.Equal(heap, data) {
		t.Fatal("Evict touched bytes outside the mapping")
	}
}
