package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/glassbox-ai/glassbox/tensor"
)

// WriteTensor is one tensor to write: Fill must write exactly the tensor's
// bytes (Numel × the dtype's size, little-endian, row-major).
type WriteTensor struct {
	Name  string
	DType tensor.DType
	Shape []int
	Fill  func(w io.Writer) error
}

// KV is one __metadata__ entry; Write keeps the order it is given.
type KV struct{ Key, Value string }

// dtypeNames is the inverse of dtypes.
var dtypeNames = func() map[tensor.DType]string {
	m := map[tensor.DType]string{}
	for k, v := range dtypes {
		m[v] = k
	}
	return m
}()

// Header returns the header Write writes for ts and meta: the 8-byte
// length, then compact JSON with the tensors in the order given (their data
// contiguous in that order, no gaps) and "__metadata__" last (omitted when
// meta is empty), padded with spaces to a multiple of 8 bytes as the
// reference writer pads it.
func Header(ts []WriteTensor, meta []KV) ([]byte, error) {
	var js bytes.Buffer
	js.WriteByte('{')
	seen := make(map[string]bool, len(ts))
	var off int64
	for i, t := range ts {
		name, ok := dtypeNames[t.DType]
		if !ok {
			return nil, fmt.Errorf("safetensors: write %q: dtype %s has no safetensors name", t.Name, t.DType)
		}
		if t.Name == "" || t.Name == "__metadata__" || seen[t.Name] {
			return nil, fmt.Errorf("safetensors: write: tensor name %q is empty, reserved or given twice", t.Name)
		}
		seen[t.Name] = true
		size := int64(t.DType.TypeSize())
		for _, d := range t.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors: write %q: negative dimension in shape %v", t.Name, t.Shape)
			}
			size *= int64(d)
		}
		if i > 0 {
			js.WriteByte(',')
		}
		writeString(&js, t.Name)
		js.WriteString(`:{"dtype":"` + name + `","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				js.WriteByte(',')
			}
			js.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&js, `],"data_offsets":[%d,%d]}`, off, off+size)
		off += size
	}
	if len(meta) > 0 {
		if len(ts) > 0 {
			js.WriteByte(',')
		}
		js.WriteString(`"__metadata__":{`)
		for i, kv := range meta {
			if i > 0 {
				js.WriteByte(',')
			}
			writeString(&js, kv.Key)
			js.WriteByte(':')
			writeString(&js, kv.Value)
		}
		js.WriteByte('}')
	}
	js.WriteByte('}')
	for (8+js.Len())%8 != 0 {
		js.WriteByte(' ')
	}
	if js.Len() > MaxHeader {
		return nil, fmt.Errorf("safetensors: write: header of %d bytes is over the %d-byte limit readers accept", js.Len(), MaxHeader)
	}
	out := make([]byte, 8, 8+js.Len())
	binary.LittleEndian.PutUint64(out, uint64(js.Len()))
	return append(out, js.Bytes()...), nil
}

// writeString writes s as a JSON string without HTML escaping (as the
// reference writer, serde_json, does).
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)           // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}

// Write writes a safetensors file: Header(ts, meta), then each tensor's
// bytes from its Fill, checking that Fill wrote exactly its size.
func Write(w io.Writer, ts []WriteTensor, meta []KV) error {
	hdr, err := Header(ts, meta)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	for _, t := range ts {
		want := int64(t.DType.TypeSize())
		for _, d := range t.Shape {
			want *= int64(d)
		}
		cw := &countWriter{w: bw}
		if err := t.Fill(cw); err != nil {
			return fmt.Errorf("safetensors: write %q: %w", t.Name, err)
		}
		if cw.n != want {
			return fmt.Errorf("safetensors: write %q: wrote %d bytes, shape %v of %s needs %d", t.Name, cw.n, t.Shape, t.DType, want)
		}
	}
	return bw.Flush()
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
