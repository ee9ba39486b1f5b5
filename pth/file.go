package pth

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/glassbox-ai/glassbox/internal/mmap"
	"github.com/glassbox-ai/glassbox/tensor"
)

// File is an opened checkpoint. Tensor data aliases the mapped file and is
// valid until Close.
type File struct {
	Path    string
	Tensors []Tensor // in state-dict order

	index map[string]int
	unmap func() error
}

// Tensor is one entry of the state dict.
type Tensor struct {
	Name  string
	DType tensor.DType
	Shape []int  // outermost first, as PyTorch's size()
	Data  []byte // little-endian elements, contiguous, aliasing the file
}

// Numel returns the number of elements.
func (t *Tensor) Numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// storageDTypes maps storage classes to element types.
var storageDTypes = map[string]tensor.DType{
	"HalfStorage":     tensor.F16,
	"FloatStorage":    tensor.F32,
	"BFloat16Storage": tensor.BF16,
	"DoubleStorage":   tensor.F64,
	"LongStorage":     tensor.I64,
	"IntStorage":      tensor.I32,
	"ShortStorage":    tensor.I16,
	"CharStorage":     tensor.I8,
	"ByteStorage":     tensor.U8,
}

// Open maps path read-only and parses its state dict.
func Open(filePath string) (*File, error) {
	data, unmap, err := mmap.Map(filePath)
	if errors.Is(err, mmap.ErrIsDir) {
		err = errors.New("is a directory, not a checkpoint")
	}
	if err != nil {
		return nil, &Error{Path: filePath, Offset: -1, Err: err}
	}
	f, err := Parse(data)
	if err != nil {
		unmap()
		var e *Error
		if errors.As(err, &e) {
			e.Path = filePath
		}
		return nil, err
	}
	f.Path = filePath
	f.unmap = unmap
	return f, nil
}

// Close releases the mapping.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap = nil
	f.Tensors = nil
	return err
}

// Parse reads a checkpoint held in memory. Tensor data aliases data.
func Parse(data []byte) (*File, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, &Error{Offset: -1, Err: fmt.Errorf("%w: %v", ErrNotZip, err)}
	}
	entries := map[string]*zip.File{}
	prefix := ""
	for _, zf := range zr.File {
		entries[zf.Name] = zf
		if strings.HasSuffix(zf.Name, "/data.pkl") || zf.Name == "data.pkl" {
			prefix = strings.TrimSuffix(zf.Name, "data.pkl")
		}
	}
	pkl, ok := entries[prefix+"data.pkl"]
	if !ok {
		return nil, &Error{Offset: -1, Err: fmt.Errorf("%w: no data.pkl entry", ErrNotZip)}
	}
	if bo, ok := entries[prefix+"byteorder"]; ok {
		b, err := storedBytes(data, bo)
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(b)); s != "little" {
			return nil, &Error{Entry: bo.Name, Offset: -1, Err: wrapf(ErrByteOrder, "%q", s)}
		}
	}
	pb, err := storedBytes(data, pkl)
	if err != nil {
		return nil, err
	}
	root, err := unpickle(pb)
	if err != nil {
		var pe *pickleError
		off := int64(-1)
		if errors.As(err, &pe) {
			off = int64(pe.off)
		}
		return nil, &Error{Entry: pkl.Name, Offset: off, Err: err}
	}
	dict, ok := stateDict(root)
	if !ok {
		return nil, &Error{Entry: pkl.Name, Offset: -1, Err: wrapf(ErrPickle, "top-level object is %s, want a state dict", typeName(root))}
	}
	f := &File{index: map[string]int{}}
	for i, k := range dict.keys {
		name, ok := k.(string)
		if !ok {
			return nil, &Error{Entry: pkl.Name, Offset: -1, Err: wrapf(ErrPickle, "state dict key of type %s", typeName(k))}
		}
		tr, ok := dict.vals[i].(*tensorRef)
		if !ok {
			return nil, &Error{Entry: pkl.Name, Offset: -1, Tensor: name, Err: wrapf(ErrPickle, "value is %s, want a tensor", typeName(dict.vals[i]))}
		}
		if _, dup := f.index[name]; dup {
			return nil, &Error{Entry: pkl.Name, Offset: -1, Tensor: name, Err: wrapf(ErrPickle, "duplicate name")}
		}
		t, err := bindTensor(data, entries, prefix, name, tr)
		if err != nil {
			return nil, err
		}
		f.index[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	return f, nil
}

// storedBytes returns an entry's bytes, aliasing data; the entry must be
// stored uncompressed.
func storedBytes(data []byte, zf *zip.File) ([]byte, error) {
	if zf.Method != zip.Store {
		return nil, &Error{Entry: zf.Name, Offset: -1, Err: wrapf(ErrCompressed, "method %d", zf.Method)}
	}
	off, err := zf.DataOffset()
	if err != nil {
		return nil, &Error{Entry: zf.Name, Offset: -1, Err: fmt.Errorf("%w: %v", ErrTruncated, err)}
	}
	n := zf.CompressedSize64
	if zf.UncompressedSize64 != n {
		return nil, &Error{Entry: zf.Name, Offset: -1, Err: wrapf(ErrNotZip, "stored entry sizes differ (%d vs %d)", n, zf.UncompressedSize64)}
	}
	if off < 0 || uint64(off) > uint64(len(data)) || n > uint64(len(data))-uint64(off) {
		return nil, &Error{Entry: zf.Name, Offset: off, Err: wrapf(ErrTruncated, "entry of %d bytes at offset %d, file has %d", n, off, len(data))}
	}
	return data[off : uint64(off)+n], nil
}

// bindTensor checks a rebuilt tensor against its storage and slices its bytes.
func bindTensor(data []byte, entries map[string]*zip.File, prefix, name string, tr *tensorRef) (Tensor, error) {
	fail := func(err error) (Tensor, error) {
		return Tensor{}, &Error{Entry: prefix + "data/" + cut(tr.storage.key), Offset: -1, Tensor: name, Err: err}
	}
	dt, ok := storageDTypes[tr.storage.dtype]
	if !ok {
		return fail(wrapf(ErrWrongDType, "torch.%s", tr.storage.dtype))
	}
	if path.Clean(tr.storage.key) != tr.storage.key || strings.ContainsAny(tr.storage.key, "/\\") {
		return fail(wrapf(ErrStorage, "storage key %s", quoteShort(tr.storage.key)))
	}
	zf, ok := entries[prefix+"data/"+tr.storage.key]
	if !ok {
		return fail(wrapf(ErrStorage, "no archive entry for storage %s", quoteShort(tr.storage.key)))
	}
	raw, err := storedBytes(data, zf)
	if err != nil {
		return Tensor{}, err
	}
	esize := uint64(dt.TypeSize())
	if tr.storage.numel > math.MaxInt64/8 || uint64(len(raw)) < uint64(tr.storage.numel)*esize {
		return fail(wrapf(ErrStorage, "storage holds %d bytes, its id says %d elements of %d bytes", len(raw), tr.storage.numel, esize))
	}
	shape := make([]int, len(tr.size))
	numel := uint64(1)
	for i, d := range tr.size {
		if d > math.MaxInt32 {
			return fail(wrapf(ErrStorage, "dimension %d is %d", i, d))
		}
		shape[i] = int(d)
		if d == 0 {
			numel = 0
		}
	}
	for _, d := range tr.size {
		if numel != 0 && uint64(d) > uint64(tr.storage.numel)/numel {
			return fail(wrapf(ErrStorage, "shape %v needs more than the storage's %d elements", tr.size, tr.storage.numel))
		}
		numel *= uint64(d)
	}
	// Contiguous means row-major strides (size-1 dimensions may carry any stride).
	want := int64(1)
	for i := len(tr.size) - 1; i >= 0; i-- {
		if tr.size[i] != 1 && tr.stride[i] != want {
			return fail(wrapf(ErrNotContig, "size %v stride %v", tr.size, tr.stride))
		}
		want *= tr.size[i]
	}
	if uint64(tr.offset) > uint64(tr.storage.numel) || numel > uint64(tr.storage.numel)-uint64(tr.offset) {
		return fail(wrapf(ErrStorage, "offset %d + %d elements exceeds the storage's %d", tr.offset, numel, tr.storage.numel))
	}
	start := uint64(tr.offset) * esize
	return Tensor{Name: name, DType: dt, Shape: shape, Data: raw[start : start+numel*esize]}, nil
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*Tensor, error) {
	i, ok := f.index[name]
	if !ok {
		return nil, &Error{Path: f.Path, Offset: -1, Tensor: name, Err: ErrNoTensor}
	}
	return &f.Tensors[i], nil
}

// Float32s returns a copy of the tensor's elements as float32; F16, BF16
// and F32 tensors are supported.
func (t *Tensor) Float32s() ([]float32, error) {
	n := t.Numel()
	out := make([]float32, n)
	switch t.DType {
	case tensor.F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case tensor.F16:
		for i := range out {
			out[i] = F16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case tensor.BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[2*i:])) << 16)
		}
	default:
		return nil, &Error{Offset: -1, Tensor: t.Name, Err: wrapf(ErrWrongDType, "%s cannot be read as float32", t.DType)}
	}
	return out, nil
}

// F16ToF32 converts an IEEE 754 binary16 value to float32 exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
