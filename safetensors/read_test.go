package safetensors

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func file(header string, data int) []byte {
	b := make([]byte, 8, 8+len(header)+data)
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, data)...)
}

func TestParse(t *testing.T) {
	good := `{"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"__metadata__":{"format":"pt"}}`
	f, err := Parse("x.safetensors", file(good, 12))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 2 || f.Tensors[0].Name != "a" || f.Tensors[1].Name != "b" || f.Metadata["format"] != "pt" {
		t.Fatalf("parsed %+v", f)
	}
	if b, ok := f.Tensor("b"); !ok || len(b.Data) != 8 || b.Offset != 4 {
		t.Fatalf("b = %+v", b)
	}
	tests := []struct {
		name, header string
		data         int
		want         string
	}{
		{"short", "", -8, "shorter than the 8-byte header length"},
		{"past end", `{}`, -1, "runs past the end"},
		{"not json", `[1]`, 0, "does not start with '{'"},
		{"bad json", `{"a":`, 0, "header entry"},
		{"dtype", `{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, 1, `dtype "Q4"`},
		{"negative dim", `{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4, "dimension 0 is -1"},
		{"outside", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, 8, "outside the 8-byte data section"},
		{"size", `{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8, "needs 12"},
		{"overflow", `{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, 8, "overflows"},
		{"overlap", `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8, "overlaps"},
		{"twice", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8, "named twice"},
		{"metadata", `{"__metadata__":{"a":1}}`, 0, "object of strings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := file(tc.header, max(tc.data, 0))
			if tc.data < 0 {
				b = b[:len(b)+tc.data]
			}
			_, err := Parse("x.safetensors", b)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "x.safetensors") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(file(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"__metadata__":{"k":"v"}}`, 4))
	f.Add(file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse("fuzz", b)
		if err != nil {
			return
		}
		for _, t2 := range file.Tensors {
			n := t2.DType.TypeSize()
			for _, d := range t2.Shape {
				n *= d
			}
			if n != len(t2.Data) {
				t.Fatalf("tensor %q: %d bytes for shape %v", t2.Name, len(t2.Data), t2.Shape)
			}
		}
	})
}
