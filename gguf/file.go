package gguf

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"github.com/glassbox-ai/glassbox/internal/mmap"
)

// File is a parsed GGUF file. Its tensor data aliases the mapped file (or
// the slice given to Parse) and is valid until Close.
type File struct {
	Path       string
	Version    uint32
	Meta       Metadata
	Tensors    []TensorInfo
	Alignment  int64
	DataOffset int64 // where tensor data starts
	Size       int64 // file size in bytes

	index map[string]int
	data  []byte
	unmap func() error
	fh    *os.File // the open file, for TensorReader (nil after Parse)
}

// Open maps path read-only and parses its header. Opening touches only the
// pages that hold the header and tensor directory.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Offset: -1, Err: err}
	}
	data, unmap, err := mmap.MapFile(fh)
	if errors.Is(err, mmap.ErrIsDir) {
		err = errors.New("is a directory, not a model file")
	}
	if err != nil {
		fh.Close()
		return nil, &Error{Path: path, Offset: -1, Err: err}
	}
	f, err := Parse(data)
	if err != nil {
		unmap()
		fh.Close()
		var e *Error
		if errors.As(err, &e) {
			e.Path = path
		}
		return nil, err
	}
	f.Path = path
	f.unmap, f.fh = unmap, fh
	return f, nil
}

// Close releases the mapping. Tensor data slices must not be used after.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	if f.fh != nil {
		err = errors.Join(err, f.fh.Close())
	}
	f.unmap, f.data, f.fh = nil, nil, nil
	return err
}

// TensorReader reads t's data from the file (pread) rather than through
// the mapping: what it reads stays in the OS's page cache, out of this
// process's resident set (compute.Matrix.ReadRowsFrom). It is nil where f
// was not opened from a file (Parse).
func (f *File) TensorReader(t *TensorInfo) io.ReaderAt {
	if f.fh == nil {
		return nil
	}
	return io.NewSectionReader(f.fh, f.DataOffset+t.Offset, t.Size)
}

// Evict drops the resident pages of b, a slice of f's tensor data, from
// this process after the caller has copied it (e.g. weights rearranged for
// the kernels): b stays readable, from the file, until Close. Slices that
// are not f's mapped data are left alone.
func (f *File) Evict(b []byte) {
	if f.unmap == nil || len(b) == 0 || len(f.data) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(&f.data[0]))
	p := uintptr(unsafe.Pointer(&b[0]))
	if p < start || p+uintptr(len(b)) > start+uintptr(len(f.data)) {
		return
	}
	_ = mmap.Drop(b) // advice only: on failure the pages simply stay resident
}

// Tensor returns the directory entry for name.
func (f *File) Tensor(name string) (*TensorInfo, error) {
	i, ok := f.index[name]
	if !ok {
		return nil, &Error{Path: f.Path, Offset: -1, Tensor: name, Err: ErrNoTensor}
	}
	return &f.Tensors[i], nil
}

// HasTensor reports whether the directory lists name.
func (f *File) HasTensor(name string) bool { _, ok := f.index[name]; return ok }

// Data returns the bytes of t, aliasing the mapping (no copy). The layout
// was checked when the file was parsed.
func (f *File) Data(t *TensorInfo) []byte {
	start := f.DataOffset + t.Offset
	return f.data[start : start+t.Size : start+t.Size]
}

// TensorData returns the bytes of the tensor called name.
func (f *File) TensorData(name string) ([]byte, *TensorInfo, error) {
	t, err := f.Tensor(name)
	if err != nil {
		return nil, nil, err
	}
	return f.Data(t), t, nil
}

// TensorBytes returns the total size of all tensor data.
func (f *File) TensorBytes() int64 {
	var n int64
	for i := range f.Tensors {
		n += f.Tensors[i].Size
	}
	return n
}

// Bytes returns the whole mapped image (header and data).
func (f *File) Bytes() []byte { return f.data }
