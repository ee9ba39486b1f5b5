package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/glassbox-ai/glassbox/tensor"
)

// WriteTensor is one tensor to write. Either Data holds its bytes, or
// Fill streams them (for tensors too large to hold in memory); exactly
// Size() bytes must result.
type WriteTensor struct {
	Name  string
	Shape []int64 // outermost first
	Type  tensor.DType
	Data  []byte
	Fill  func(w io.Writer) error
}

// Size returns the tensor's data size in bytes.
func (t *WriteTensor) Size() (int64, error) {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	if len(t.Shape) == 0 || t.Shape[len(t.Shape)-1]%int64(t.Type.BlockSize()) != 0 {
		return 0, fmt.Errorf("gguf: tensor %q: shape %v does not fit %s blocks", t.Name, t.Shape, t.Type)
	}
	return t.Type.RowBytes(n)
}

// Write writes a GGUF version 3 file with the given metadata and tensors,
// in order, each aligned to general.alignment (default 32).
func Write(w io.Writer, meta *Metadata, tensors []WriteTensor) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	e := &encoder{w: bw}
	sizes, align, err := e.header(meta, tensors)
	if err != nil {
		return err
	}
	for i := range tensors {
		t := &tensors[i]
		if e.err != nil {
			return e.err
		}
		start := e.n
		if t.Fill != nil {
			if err := t.Fill(e); err != nil {
				return fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
			}
		} else {
			e.raw(t.Data)
		}
		if got := e.n - start; e.err == nil && got != sizes[i] {
			return fmt.Errorf("gguf: tensor %q: wrote %d bytes, want %d", t.Name, got, sizes[i])
		}
		e.pad(align)
	}
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

// WriteHeader writes only the header, metadata and tensor directory (with
// the padding that follows) and returns the size the complete file would
// have. Truncating the file to that size gives a valid GGUF whose tensor
// data reads as zeros: a sparse stand-in for a large model, for planning
// and benchmarks.
func WriteHeader(w io.Writer, meta *Metadata, tensors []WriteTensor) (int64, error) {
	bw := bufio.NewWriter(w)
	e := &encoder{w: bw}
	sizes, align, err := e.header(meta, tensors)
	if err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	total := e.n
	for _, s := range sizes {
		total = alignUp(total+s, align)
	}
	return total, nil
}

// header encodes everything before the tensor data and returns each
// tensor's data size and the alignment.
func (e *encoder) header(meta *Metadata, tensors []WriteTensor) ([]int64, int64, error) {
	align := int64(DefaultAlignment)
	if v, ok := meta.Lookup("general.alignment"); ok {
		a, ok := v.v.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return nil, 0, fmt.Errorf("gguf: general.alignment must be a uint32 power of two")
		}
		align = int64(a)
	}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(meta.KVs)))
	for _, kv := range meta.KVs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type))
		e.value(kv.Value)
	}
	sizes := make([]int64, len(tensors))
	var off int64
	for i := range tensors {
		t := &tensors[i]
		size, err := t.Size()
		if err != nil {
			return nil, 0, err
		}
		sizes[i] = size
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- {
			e.u64(uint64(t.Shape[j]))
		}
		e.u32(uint32(t.Type))
		e.u64(uint64(off))
		off = alignUp(off+size, align)
	}
	e.pad(align)
	return sizes, align, e.err
}

type encoder struct {
	w   io.Writer
	n   int64
	err error
	buf [8]byte
}

func (e *encoder) Write(p []byte) (int, error) {
	e.raw(p)
	if e.err != nil {
		return 0, e.err
	}
	return len(p), nil
}

func (e *encoder) raw(p []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(p)
	e.n += int64(n)
	e.err = err
}

func (e *encoder) pad(align int64) {
	for e.n%align != 0 && e.err == nil {
		e.raw([]byte{0})
	}
}

func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:], v); e.raw(e.buf[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.raw(e.buf[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *encoder) value(v Value) {
	switch x := v.v.(type) {
	case uint8:
		e.raw([]byte{x})
	case int8:
		e.raw([]byte{byte(x)})
	case bool:
		if x {
			e.raw([]byte{1})
		} else {
			e.raw([]byte{0})
		}
	case uint16:
		binary.LittleEndian.PutUint16(e.buf[:], x)
		e.raw(e.buf[:2])
	case int16:
		binary.LittleEndian.PutUint16(e.buf[:], uint16(x))
		e.raw(e.buf[:2])
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case string:
		e.str(x)
	default:
		e.u32(uint32(v.Elem))
		e.u64(uint64(v.Len()))
		e.elements(v)
	}
}

func (e *encoder) elements(v Value) {
	each := func(n int, at func(i int) any) {
		for i := 0; i < n; i++ {
			e.value(Value{Type: v.Elem, v: at(i)})
		}
	}
	switch a := v.v.(type) {
	case []Value:
		for _, x := range a {
			e.value(x)
		}
	case []string:
		each(len(a), func(i int) any { return a[i] })
	case []bool:
		each(len(a), func(i int) any { return a[i] })
	case []uint8:
		e.raw(a)
	case []int8:
		each(len(a), func(i int) any { return a[i] })
	case []uint16:
		each(len(a), func(i int) any { return a[i] })
	case []int16:
		each(len(a), func(i int) any { return a[i] })
	case []uint32:
		each(len(a), func(i int) any { return a[i] })
	case []int32:
		each(len(a), func(i int) any { return a[i] })
	case []float32:
		each(len(a), func(i int) any { return a[i] })
	case []uint64:
		each(len(a), func(i int) any { return a[i] })
	case []int64:
		each(len(a), func(i int) any { return a[i] })
	case []float64:
		each(len(a), func(i int) any { return a[i] })
	}
}
