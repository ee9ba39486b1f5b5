package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"unsafe"

	"github.com/glassbox-ai/glassbox/internal/mmap"
	"github.com/glassbox-ai/glassbox/tensor"
)

// MaxHeader is the largest header Open accepts: the reference
// implementation's limit (safetensors/src/tensor.rs: MAX_HEADER_SIZE,
// 100,000,000 bytes), so every file it reads, this package reads.
const MaxHeader = 100_000_000

// ErrFormat marks a file that is not valid safetensors.
var ErrFormat = errors.New("not a valid safetensors file")

// Error is an error at a place in a file.
type Error struct {
	Path   string
	Tensor string // "" for the header as a whole
	Err    error
}

func (e *Error) Error() string {
	if e.Tensor == "" {
		return fmt.Sprintf("load: %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("load: %s: tensor %q: %v", e.Path, e.Tensor, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Stage reports the pipeline stage the error belongs to.
func (e *Error) Stage() string { return "load" }

// Tensor is one tensor of a file.
type Tensor struct {
	Name  string
	DType tensor.DType
	Shape []int  // outermost first
	Data  []byte // aliases the mapped file; nil from ParseHeader/ReadHeader
	// Offset is where Data starts in the data section (after the header).
	Offset int64
	// Size is the tensor's byte count (len(Data) when Data is there).
	Size int64
}

// File is an opened safetensors file.
type File struct {
	Path     string
	Metadata map[string]string
	Tensors  []Tensor // in the order of their data in the file

	index  map[string]int
	header int64 // 8 + N: where the data section starts
	unmap  func() error
	mapped []byte // the mapping (Open), for Evict
}

// dtypes maps the format's dtype names to glassbox's.
var dtypes = map[string]tensor.DType{
	"F64": tensor.F64, "F32": tensor.F32, "F16": tensor.F16, "BF16": tensor.BF16,
	"I64": tensor.I64, "I32": tensor.I32, "I16": tensor.I16, "I8": tensor.I8,
	"U8": tensor.U8,
}

// Open maps path read-only and parses its header.
func Open(path string) (*File, error) {
	data, unmap, err := mmap.Map(path)
	if err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	f, err := parse(path, data)
	if err != nil {
		unmap()
		return nil, err
	}
	f.unmap, f.mapped = unmap, data
	return f, nil
}

// Parse reads a safetensors file held in memory; tensor data alias data.
func Parse(path string, data []byte) (*File, error) { return parse(path, data) }

// ParseHeader reads the header of a file of size bytes from head, its
// first bytes (at least 8 + N of them; more are ignored). Every check Parse
// makes is made; the tensors have no Data. It lets a plan, a listing or a
// stream check read a multi-gigabyte file's directory without mapping it.
func ParseHeader(path string, head []byte, size int64) (*File, error) {
	hdr, err := headerBytes(path, head, size)
	if err != nil {
		return nil, err
	}
	return parseJSON(path, hdr, size-int64(len(hdr))-8, nil)
}

// ReadHeader reads only the header of the file at path (no mapping, no
// weights read): see ParseHeader.
func ReadHeader(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	var n [8]byte
	if _, err := io.ReadFull(fh, n[:]); err != nil {
		return nil, &Error{Path: path, Err: fmt.Errorf("%w: %d bytes, shorter than the 8-byte header length", ErrFormat, st.Size())}
	}
	l := binary.LittleEndian.Uint64(n[:])
	if l > MaxHeader || l > uint64(st.Size()-8) {
		return ParseHeader(path, n[:], st.Size()) // the same error as Parse
	}
	head := make([]byte, 8+l)
	copy(head, n[:])
	if _, err := io.ReadFull(fh, head[8:]); err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	return ParseHeader(path, head, st.Size())
}

// Close releases the mapping; tensor data must not be used afterwards.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap = nil
	return err
}

// Evict tells the operating system that this process no longer needs the
// pages of b, a tensor's Data its owner has copied elsewhere (packed into
// a kernel's layout): the pages wholly inside b leave the resident set and
// are read back from the file if touched again, so b stays valid until
// Close. Bytes outside the mapping (a File from Parse, or not f's data)
// are left alone.
func (f *File) Evict(b []byte) {
	if f.unmap == nil || len(b) == 0 || len(f.mapped) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(&f.mapped[0]))
	p := uintptr(unsafe.Pointer(&b[0]))
	if p < start || p+uintptr(len(b)) > start+uintptr(len(f.mapped)) {
		return
	}
	_ = mmap.Drop(b) // advice only: on failure the pages simply stay resident
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.index[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// HeaderBytes returns 8 + N, the offset of the data section.
func (f *File) HeaderBytes() int64 { return f.header }

type entry struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

func bad(path, tensor string, format string, args ...any) error {
	return &Error{Path: path, Tensor: tensor, Err: fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)}
}

// headerBytes checks the length prefix of a file of size bytes whose first
// bytes are head and returns the JSON header.
func headerBytes(path string, head []byte, size int64) ([]byte, error) {
	if size < 8 || len(head) < 8 {
		return nil, bad(path, "", "%d bytes, shorter than the 8-byte header length", size)
	}
	n := binary.LittleEndian.Uint64(head)
	if n > MaxHeader {
		return nil, bad(path, "", "header length %d is over the %d-byte limit", n, MaxHeader)
	}
	if n > uint64(size-8) {
		return nil, bad(path, "", "header length %d runs past the end of the %d-byte file (truncated?)", n, size)
	}
	if uint64(len(head)-8) < n {
		return nil, bad(path, "", "header length %d, only %d bytes of it given", n, len(head)-8)
	}
	hdr := head[8 : 8+n]
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, bad(path, "", "header does not start with '{' (not safetensors)")
	}
	return hdr, nil
}

func parse(path string, data []byte) (*File, error) {
	hdr, err := headerBytes(path, data, int64(len(data)))
	if err != nil {
		return nil, err
	}
	body := data[8+len(hdr):]
	return parseJSON(path, hdr, int64(len(body)), body)
}

// parseJSON reads the JSON header of a file whose data section has
// dataLen bytes; body, if not nil, is that section, and tensors alias it.
func parseJSON(path string, hdr []byte, dataLen int64, body []byte) (*File, error) {
	// Decode the object's members one by one, so duplicate names are caught.
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, bad(path, "", "header JSON: %v", err)
	}
	f := &File{Path: path, index: map[string]int{}, header: int64(8 + len(hdr))}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad(path, "", "header JSON: %v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, bad(path, "", "header JSON: key %v is not a string", tok)
		}
		if name == "__metadata__" {
			if f.Metadata != nil {
				return nil, bad(path, "", "__metadata__ given twice")
			}
			var raw map[string]json.RawMessage
			if err := dec.Decode(&raw); err != nil || raw == nil {
				return nil, bad(path, "", "__metadata__ must be an object of strings: %v", err)
			}
			f.Metadata = make(map[string]string, len(raw))
			for k, v := range raw {
				var str string
				if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &str) != nil {
					return nil, bad(path, "", "__metadata__ must be an object of strings: %q is %s", k, v)
				}
				f.Metadata[k] = str
			}
			continue
		}
		if _, dup := f.index[name]; dup {
			return nil, bad(path, name, "named twice in the header")
		}
		var e entry
		if err := dec.Decode(&e); err != nil {
			return nil, bad(path, name, "header entry: %v", err)
		}
		t, err := e.tensor(dataLen)
		if err != nil {
			return nil, &Error{Path: path, Tensor: name, Err: fmt.Errorf("%w: %v", ErrFormat, err)}
		}
		t.Name = name
		if body != nil {
			t.Data = body[t.Offset : t.Offset+t.Size : t.Offset+t.Size]
		}
		f.index[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	if _, err := dec.Token(); err != nil {
		return nil, bad(path, "", "header JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		// Only the padding spaces may follow the object.
		return nil, bad(path, "", "header JSON: data after the object (%v)", err)
	}
	if err := f.tile(dataLen); err != nil {
		return nil, err
	}
	return f, nil
}

// tile orders the tensors by offset and checks that they cover the data
// section exactly: no overlap, no gap, no bytes after the last. The
// reference reader (safetensors/src/tensor.rs: Metadata::validate) refuses
// the same files (InvalidOffset, MetadataIncompleteBuffer), so no file its
// users can load is refused here, and no byte of a file goes unexplained.
func (f *File) tile(dataLen int64) error {
	sort.SliceStable(f.Tensors, func(i, j int) bool {
		a, b := &f.Tensors[i], &f.Tensors[j]
		return a.Offset < b.Offset || a.Offset == b.Offset && a.Size < b.Size
	})
	var end int64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		f.index[t.Name] = i
		switch {
		case t.Offset < end:
			return bad(f.Path, t.Name, "data_offsets [%d, %d] overlap tensor %q's (which end at %d)", t.Offset, t.Offset+t.Size, f.Tensors[i-1].Name, end)
		case t.Offset > end && i == 0:
			return bad(f.Path, t.Name, "data_offsets [%d, %d]: the first tensor must start at 0 (%d unexplained bytes before it)", t.Offset, t.Offset+t.Size, t.Offset)
		case t.Offset > end:
			return bad(f.Path, t.Name, "data_offsets [%d, %d] leave a gap of %d bytes after tensor %q (which ends at %d)", t.Offset, t.Offset+t.Size, t.Offset-end, f.Tensors[i-1].Name, end)
		}
		end = t.Offset + t.Size
	}
	if end != dataLen {
		return bad(f.Path, "", "the tensors end at byte %d of the %d-byte data section (%d bytes after the last one: a different file appended, or a wrong header)", end, dataLen, dataLen-end)
	}
	return nil
}

func (e *entry) tensor(dataLen int64) (Tensor, error) {
	dt, ok := dtypes[e.DType]
	if !ok {
		return Tensor{}, fmt.Errorf("dtype %q is not one of F64, F32, F16, BF16, I64, I32, I16, I8, U8", e.DType)
	}
	if e.Shape == nil {
		return Tensor{}, errors.New(`no "shape" (a scalar is [])`)
	}
	if len(e.Shape) > 8 {
		return Tensor{}, fmt.Errorf("%d dimensions (at most 8)", len(e.Shape))
	}
	numel := int64(1)
	shape := make([]int, len(e.Shape))
	for i, d := range e.Shape {
		if d < 0 {
			return Tensor{}, fmt.Errorf("dimension %d is %d", i, d)
		}
		if d > 0 && numel > math.MaxInt64/8/d {
			return Tensor{}, fmt.Errorf("shape %v overflows", e.Shape)
		}
		numel *= d
		shape[i] = int(d)
	}
	size := numel * int64(dt.TypeSize())
	if len(e.Offsets) != 2 {
		return Tensor{}, fmt.Errorf("data_offsets has %d values, want 2", len(e.Offsets))
	}
	begin, end := e.Offsets[0], e.Offsets[1]
	if begin < 0 || end < begin || end > dataLen {
		return Tensor{}, fmt.Errorf("data_offsets [%d, %d] outside the %d-byte data section (truncated file?)", begin, end, dataLen)
	}
	if end-begin != size {
		return Tensor{}, fmt.Errorf("data_offsets [%d, %d] hold %d bytes, shape %v of %s needs %d", begin, end, end-begin, e.Shape, dt, size)
	}
	return Tensor{DType: dt, Shape: shape, Offset: begin, Size: size}, nil
}
