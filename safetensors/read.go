package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/glassbox-ai/glassbox/internal/mmap"
	"github.com/glassbox-ai/glassbox/tensor"
)

// MaxHeader is the largest header Open accepts (the format's reference
// implementation refuses headers over 100 MB).
const MaxHeader = 100 << 20

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
	Data  []byte // aliases the mapped file
	// Offset is where Data starts in the data section (after the header).
	Offset int64
}

// File is an opened safetensors file.
type File struct {
	Path     string
	Metadata map[string]string
	Tensors  []Tensor // in the order of their data in the file

	index  map[string]int
	header int64 // 8 + N: where the data section starts
	unmap  func() error
}

// dtypes maps the format's dtype names to glassbox's.
var dtypes = map[string]tensor.DType{
	"F64": tensor.F64, "F32": tensor.F32, "F16": tensor.F16, "BF16": tensor.BF16,
	"I64": tensor.I64, "I32": tensor.I32, "I16": tensor.I16, "I8": tensor.I8,
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
	f.unmap = unmap
	return f, nil
}

// Parse reads a safetensors file held in memory; tensor data alias data.
func Parse(path string, data []byte) (*File, error) { return parse(path, data) }

// Close releases the mapping; tensor data must not be used afterwards.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap = nil
	return err
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

func parse(path string, data []byte) (*File, error) {
	bad := func(tensor string, format string, args ...any) error {
		return &Error{Path: path, Tensor: tensor, Err: fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)}
	}
	if len(data) < 8 {
		return nil, bad("", "%d bytes, shorter than the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeader {
		return nil, bad("", "header length %d is over the %d-byte limit", n, MaxHeader)
	}
	if n > uint64(len(data)-8) {
		return nil, bad("", "header length %d runs past the end of the %d-byte file (truncated?)", n, len(data))
	}
	hdr := data[8 : 8+n]
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, bad("", "header does not start with '{' (not safetensors)")
	}
	body := data[8+n:]
	// Decode the object's members one by one, so duplicate names are caught.
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, bad("", "header JSON: %v", err)
	}
	f := &File{Path: path, index: map[string]int{}, header: int64(8 + n)}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad("", "header JSON: %v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, bad("", "header JSON: key %v is not a string", tok)
		}
		if name == "__metadata__" {
			if f.Metadata != nil {
				return nil, bad("", "__metadata__ given twice")
			}
			f.Metadata = map[string]string{}
			if err := dec.Decode(&f.Metadata); err != nil {
				return nil, bad("", "__metadata__ must be an object of strings: %v", err)
			}
			continue
		}
		var e entry
		if err := dec.Decode(&e); err != nil {
			return nil, bad(name, "header entry: %v", err)
		}
		if _, dup := f.index[name]; dup {
			return nil, bad(name, "named twice in the header")
		}
		t, err := e.tensor(name, body)
		if err != nil {
			return nil, &Error{Path: path, Tensor: name, Err: fmt.Errorf("%w: %v", ErrFormat, err)}
		}
		f.index[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	if _, err := dec.Token(); err != nil {
		return nil, bad("", "header JSON: %v", err)
	}
	// Order by offset and check that no two tensors overlap.
	sort.SliceStable(f.Tensors, func(i, j int) bool {
		return f.Tensors[i].Offset < f.Tensors[j].Offset
	})
	for i := range f.Tensors {
		f.index[f.Tensors[i].Name] = i
		if i > 0 {
			prev := &f.Tensors[i-1]
			if f.Tensors[i].Offset < prev.Offset+int64(len(prev.Data)) {
				return nil, bad(f.Tensors[i].Name, "data overlaps tensor %q's", prev.Name)
			}
		}
	}
	return f, nil
}

func (e *entry) tensor(name string, body []byte) (Tensor, error) {
	dt, ok := dtypes[e.DType]
	if !ok {
		return Tensor{}, fmt.Errorf("dtype %q is not one of F64, F32, F16, BF16, I64, I32, I16, I8", e.DType)
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
	if begin < 0 || end < begin || end > int64(len(body)) {
		return Tensor{}, fmt.Errorf("data_offsets [%d, %d] outside the %d-byte data section (truncated file?)", begin, end, len(body))
	}
	if end-begin != size {
		return Tensor{}, fmt.Errorf("data_offsets [%d, %d] hold %d bytes, shape %v of %s needs %d", begin, end, end-begin, e.Shape, dt, size)
	}
	return Tensor{Name: name, DType: dt, Shape: shape, Data: body[begin:end:end], Offset: begin}, nil
}
