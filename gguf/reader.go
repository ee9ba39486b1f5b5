package gguf

import (
	"encoding/binary"
	"math"
	"sort"
	"unicode/utf8"

	"github.com/glassbox-ai/glassbox/tensor"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims bounds the rank of a tensor in the directory. ggml stops at 4;
// glassbox's own tensors go further (video), so the reader accepts up to 8.
const MaxDims = 8

// maxArrayDepth bounds nested metadata arrays (each level costs a frame).
const maxArrayDepth = 8

// TensorInfo is one entry of the tensor directory.
type TensorInfo struct {
	Name        string
	Shape       []int64      // outermost first (GGUF's ne reversed)
	Type        tensor.DType //
	Offset      int64        // of the data, relative to File.DataOffset
	Size        int64        // bytes of data
	EntryOffset int64        // where the directory entry starts in the file
}

// Elements returns the number of elements.
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// NE returns the dimensions in GGUF/ggml order (innermost first).
func (t *TensorInfo) NE() []int64 {
	ne := make([]int64, len(t.Shape))
	for i, d := range t.Shape {
		ne[len(t.Shape)-1-i] = d
	}
	return ne
}

// decoder walks a byte slice and records the first failure's offset.
type decoder struct {
	b   []byte
	off int64
}

func (d *decoder) remaining() int64 { return int64(len(d.b)) - d.off }

func (d *decoder) need(n int64, what string) error {
	if n < 0 || d.remaining() < n {
		return &Error{Offset: d.off, Err: wrapf(ErrTruncated, "%s needs %d bytes, %d remain", what, n, max(d.remaining(), 0))}
	}
	return nil
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v, nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.need(8, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v, nil
}

func (d *decoder) str(what string) (string, error) {
	start := d.off
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(d.remaining()) {
		return "", &Error{Offset: start, Err: wrapf(ErrTruncated, "%s of %d bytes, only %d remain", what, n, d.remaining())}
	}
	s := d.b[d.off : d.off+int64(n)]
	if !utf8.Valid(s) {
		return "", &Error{Offset: start, Err: wrapf(ErrInvalid, "%s is not valid UTF-8", what)}
	}
	d.off += int64(n)
	return string(s), nil
}

// Parse reads a GGUF image held in memory. Tensor data is not copied: the
// File refers to b, which must stay unchanged while the File is used.
func Parse(b []byte) (*File, error) {
	f := &File{data: b, Size: int64(len(b)), Alignment: DefaultAlignment}
	d := &decoder{b: b}
	if err := d.need(4, "magic"); err != nil {
		return nil, err
	}
	if string(b[:4]) != Magic {
		return nil, &Error{Offset: 0, Err: wrapf(ErrBadMagic, "magic is %q, want %q", b[:4], Magic)}
	}
	d.off = 4
	ver, err := d.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case ver == 2 || ver == 3:
	case ver == 1:
		return nil, &Error{Offset: 4, Err: wrapf(ErrVersion, "version 1 (32-bit counts) is obsolete; reconvert the model")}
	case ver&0xffff == 0 && ver>>16 != 0:
		return nil, &Error{Offset: 4, Err: wrapf(ErrVersion, "version field 0x%08x looks big-endian; only little-endian files are supported", ver)}
	default:
		return nil, &Error{Offset: 4, Err: wrapf(ErrVersion, "version %d (supported: 2, 3)", ver)}
	}
	f.Version = ver
	nt, err := d.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nkv, err := d.u64("metadata count")
	if err != nil {
		return nil, err
	}
	// Each KV takes at least 8 (key length) + 4 (type) + 1 bytes; each
	// tensor entry at least 8 + 4 + 8 + 4 + 8. Refuse counts the file
	// cannot hold before allocating anything for them.
	if nkv > uint64(d.remaining())/13 {
		return nil, &Error{Offset: 16, Err: wrapf(ErrInvalid, "metadata count %d cannot fit in the %d bytes that remain", nkv, d.remaining())}
	}
	if nt > uint64(d.remaining())/32 {
		return nil, &Error{Offset: 8, Err: wrapf(ErrInvalid, "tensor count %d cannot fit in the %d bytes that remain", nt, d.remaining())}
	}
	for i := uint64(0); i < nkv; i++ {
		kv, err := d.kv()
		if err != nil {
			return nil, err
		}
		if !f.Meta.add(kv) {
			return nil, &Error{Offset: kv.Offset, Key: kv.Key, Err: wrapf(ErrInvalid, "duplicate metadata key")}
		}
	}
	if kv, err := f.Meta.get("general.alignment"); err == nil {
		a, ok := kv.Value.v.(uint32)
		if !ok {
			return nil, mistyped(kv, "uint32")
		}
		if a == 0 || a&(a-1) != 0 {
			return nil, &Error{Offset: kv.Offset, Key: kv.Key, Err: wrapf(ErrInvalid, "alignment %d is not a power of two", a)}
		}
		f.Alignment = int64(a)
	}
	f.Tensors = make([]TensorInfo, 0, nt)
	f.index = make(map[string]int, nt)
	for i := uint64(0); i < nt; i++ {
		ti, err := d.tensorInfo()
		if err != nil {
			return nil, err
		}
		if _, dup := f.index[ti.Name]; dup {
			return nil, &Error{Offset: ti.EntryOffset, Tensor: ti.Name, Err: wrapf(ErrInvalid, "duplicate tensor name")}
		}
		f.index[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}
	f.DataOffset = alignUp(d.off, f.Alignment)
	if err := f.checkLayout(); err != nil {
		return nil, err
	}
	return f, nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

func (d *decoder) kv() (KV, error) {
	start := d.off
	key, err := d.str("metadata key")
	if err != nil {
		return KV{}, err
	}
	t, err := d.u32("value type")
	if err != nil {
		return KV{}, withKey(err, key)
	}
	v, err := d.value(ValueType(t), 0)
	if err != nil {
		return KV{}, withKey(err, key)
	}
	return KV{Key: key, Value: v, Offset: start}, nil
}

func withKey(err error, key string) error {
	if e, ok := err.(*Error); ok && e.Key == "" {
		e.Key = key
	}
	return err
}

func (d *decoder) value(t ValueType, depth int) (Value, error) {
	start := d.off
	if !t.valid() {
		return Value{}, &Error{Offset: start - 4, Err: wrapf(ErrUnknownType, "metadata value type %d", uint32(t))}
	}
	if t == TypeArray {
		return d.array(depth)
	}
	if t == TypeString {
		s, err := d.str("string value")
		return Value{Type: t, v: s}, err
	}
	if err := d.need(int64(t.size()), t.String()+" value"); err != nil {
		return Value{}, err
	}
	v := d.scalar(t)
	if t == TypeBool {
		if b := d.b[start]; b > 1 {
			return Value{}, &Error{Offset: start, Err: wrapf(ErrInvalid, "bool value is %d, want 0 or 1", b)}
		}
	}
	return v, nil
}

// scalar decodes a fixed-size value whose bytes are known to be present.
func (d *decoder) scalar(t ValueType) Value {
	p := d.b[d.off:]
	d.off += int64(t.size())
	le := binary.LittleEndian
	var x any
	switch t {
	case TypeUint8:
		x = p[0]
	case TypeInt8:
		x = int8(p[0])
	case TypeBool:
		x = p[0] == 1
	case TypeUint16:
		x = le.Uint16(p)
	case TypeInt16:
		x = int16(le.Uint16(p))
	case TypeUint32:
		x = le.Uint32(p)
	case TypeInt32:
		x = int32(le.Uint32(p))
	case TypeFloat32:
		x = math.Float32frombits(le.Uint32(p))
	case TypeUint64:
		x = le.Uint64(p)
	case TypeInt64:
		x = int64(le.Uint64(p))
	case TypeFloat64:
		x = math.Float64frombits(le.Uint64(p))
	}
	return Value{Type: t, v: x}
}

func (d *decoder) array(depth int) (Value, error) {
	start := d.off
	if depth >= maxArrayDepth {
		return Value{}, &Error{Offset: start, Err: wrapf(ErrInvalid, "arrays nested deeper than %d", maxArrayDepth)}
	}
	et, err := d.u32("array element type")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Value{}, &Error{Offset: start, Err: wrapf(ErrUnknownType, "array element type %d", et)}
	}
	n, err := d.u64("array length")
	if err != nil {
		return Value{}, err
	}
	if n > uint64(d.remaining())/uint64(elem.minSize()) {
		return Value{}, &Error{Offset: start, Err: wrapf(ErrInvalid, "array of %d %s cannot fit in the %d bytes that remain", n, elem, d.remaining())}
	}
	out := Value{Type: TypeArray, Elem: elem}
	switch elem {
	case TypeString:
		a := make([]string, n)
		for i := range a {
			if a[i], err = d.str("string element"); err != nil {
				return Value{}, err
			}
		}
		out.v = a
	case TypeArray:
		a := make([]Value, n)
		for i := range a {
			if a[i], err = d.array(depth + 1); err != nil {
				return Value{}, err
			}
		}
		out.v = a
	default:
		out.v, err = d.scalars(elem, int(n))
		if err != nil {
			return Value{}, err
		}
	}
	return out, nil
}

// scalars decodes n fixed-size values into a typed slice; the caller has
// checked that n·size bytes remain.
func (d *decoder) scalars(t ValueType, n int) (any, error) {
	switch t {
	case TypeUint8:
		return decodeSlice(d, n, func(v Value) uint8 { return v.v.(uint8) }, t)
	case TypeInt8:
		return decodeSlice(d, n, func(v Value) int8 { return v.v.(int8) }, t)
	case TypeBool:
		for i := 0; i < n; i++ {
			if d.b[d.off+int64(i)] > 1 {
				return nil, &Error{Offset: d.off + int64(i), Err: wrapf(ErrInvalid, "bool element is %d, want 0 or 1", d.b[d.off+int64(i)])}
			}
		}
		return decodeSlice(d, n, func(v Value) bool { return v.v.(bool) }, t)
	case TypeUint16:
		return decodeSlice(d, n, func(v Value) uint16 { return v.v.(uint16) }, t)
	case TypeInt16:
		return decodeSlice(d, n, func(v Value) int16 { return v.v.(int16) }, t)
	case TypeUint32:
		return decodeSlice(d, n, func(v Value) uint32 { return v.v.(uint32) }, t)
	case TypeInt32:
		return decodeSlice(d, n, func(v Value) int32 { return v.v.(int32) }, t)
	case TypeFloat32:
		return decodeSlice(d, n, func(v Value) float32 { return v.v.(float32) }, t)
	case TypeUint64:
		return decodeSlice(d, n, func(v Value) uint64 { return v.v.(uint64) }, t)
	case TypeInt64:
		return decodeSlice(d, n, func(v Value) int64 { return v.v.(int64) }, t)
	case TypeFloat64:
		return decodeSlice(d, n, func(v Value) float64 { return v.v.(float64) }, t)
	}
	return nil, &Error{Offset: d.off, Err: wrapf(ErrUnknownType, "array element type %d", uint32(t))}
}

func decodeSlice[T any](d *decoder, n int, conv func(Value) T, t ValueType) ([]T, error) {
	out := make([]T, n)
	for i := range out {
		out[i] = conv(d.scalar(t))
	}
	return out, nil
}

func (d *decoder) tensorInfo() (TensorInfo, error) {
	start := d.off
	name, err := d.str("tensor name")
	if err != nil {
		return TensorInfo{}, err
	}
	fail := func(err error) (TensorInfo, error) {
		if e, ok := err.(*Error); ok {
			e.Tensor = name
			return TensorInfo{}, e
		}
		return TensorInfo{}, &Error{Offset: start, Tensor: name, Err: err}
	}
	nd, err := d.u32("dimension count")
	if err != nil {
		return fail(err)
	}
	if nd == 0 || nd > MaxDims {
		return fail(&Error{Offset: d.off - 4, Err: wrapf(ErrInvalid, "%d dimensions (allowed: 1 to %d)", nd, MaxDims)})
	}
	ne := make([]int64, nd)
	elems := int64(1)
	for i := range ne {
		v, err := d.u64("dimension")
		if err != nil {
			return fail(err)
		}
		if v > 1<<40 {
			return fail(&Error{Offset: d.off - 8, Err: wrapf(ErrInvalid, "dimension %d is %d", i, v)})
		}
		ne[i] = int64(v)
		if ne[i] != 0 && elems > math.MaxInt64/ne[i] {
			return fail(&Error{Offset: d.off - 8, Err: wrapf(ErrInvalid, "element count overflows")})
		}
		elems *= ne[i]
	}
	tt, err := d.u32("tensor type")
	if err != nil {
		return fail(err)
	}
	dt := tensor.DType(tt)
	if !dt.InGGUF() {
		return fail(&Error{Offset: d.off - 4, Err: wrapf(ErrUnknownType, "tensor type %d", tt)})
	}
	off, err := d.u64("data offset")
	if err != nil {
		return fail(err)
	}
	if ne[0]%int64(dt.BlockSize()) != 0 {
		return fail(&Error{Offset: start, Err: wrapf(ErrInvalid, "row length %d is not a multiple of %s's block size %d", ne[0], dt, dt.BlockSize())})
	}
	size, _ := dt.RowBytes(elems)
	if off > math.MaxInt64/2 {
		return fail(&Error{Offset: d.off - 8, Err: wrapf(ErrInvalid, "data offset %d", off)})
	}
	shape := make([]int64, nd)
	for i := range ne {
		shape[int(nd)-1-i] = ne[i]
	}
	return TensorInfo{Name: name, Shape: shape, Type: dt, Offset: int64(off), Size: size, EntryOffset: start}, nil
}

// checkLayout verifies that every tensor's data is aligned, inside the
// file, and overlaps no other tensor.
func (f *File) checkLayout() error {
	if len(f.Tensors) > 0 && f.DataOffset > f.Size {
		return &Error{Offset: f.DataOffset, Err: wrapf(ErrTruncated, "tensor data should start at byte %d but the file has %d bytes", f.DataOffset, f.Size)}
	}
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	var prev *TensorInfo
	for _, i := range order {
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return &Error{Offset: t.EntryOffset, Tensor: t.Name, Err: wrapf(ErrInvalid, "data offset %d is not a multiple of the alignment %d", t.Offset, f.Alignment)}
		}
		end := f.DataOffset + t.Offset + t.Size
		if end > f.Size || end < 0 {
			return &Error{Offset: t.EntryOffset, Tensor: t.Name, Err: wrapf(ErrTruncated, "data [%d, %d) runs past the end of the file (%d bytes)", f.DataOffset+t.Offset, end, f.Size)}
		}
		if prev != nil && prev.Offset+prev.Size > t.Offset && t.Size > 0 {
			return &Error{Offset: t.EntryOffset, Tensor: t.Name, Err: wrapf(ErrInvalid, "data at offset %d overlaps tensor %q (offset %d, %d bytes)", t.Offset, prev.Name, prev.Offset, prev.Size)}
		}
		if t.Size > 0 {
			prev = t
		}
	}
	return nil
}
