package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Errors a Binder reports (wrapped in *Error).
var (
	ErrMissing = errors.New("missing")
	ErrShape   = errors.New("wrong shape")
	ErrDType   = errors.New("unsupported element type")
)

// Binder binds tensors of a Source by name, checking their shapes. It keeps
// the first error; after one, every call returns nil, so a constructor can
// bind all its layers and check Err once at the end.
type Binder struct {
	src  Source
	used map[string]bool
	err  error
}

// NewBinder returns a binder over src.
func NewBinder(src Source) *Binder { return &Binder{src: src, used: map[string]bool{}} }

// Err returns the first error, or nil.
func (b *Binder) Err() error { return b.err }

// Fail records err unless an error is already recorded.
func (b *Binder) Fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Has reports whether the source has a tensor called name.
func (b *Binder) Has(name string) bool { _, ok := b.src.Tensor(name); return ok }

// Raw returns the tensor called name after checking its shape (a nil shape
// accepts any).
func (b *Binder) Raw(name string, shape ...int) *Tensor {
	if b.err != nil {
		return nil
	}
	t, ok := b.src.Tensor(name)
	if !ok {
		b.Fail(&Error{Path: b.src.Path(), Tensor: name, Err: fmt.Errorf("%w (is this the right model file?)", ErrMissing)})
		return nil
	}
	if shape != nil && !slices.Equal(t.Shape, shape) {
		b.Fail(&Error{Path: b.src.Path(), Tensor: name, Err: fmt.Errorf("%w: has shape %v, want %v", ErrShape, t.Shape, shape)})
		return nil
	}
	b.used[name] = true
	return t
}

// Float32 returns a new float32 copy of the tensor called name (F32, F16
// or BF16 in the file), after checking its shape. The file's pages of the
// tensor leave the resident set once copied (Evicter), so a load that
// widens or packs every weight holds each one once, not twice.
func (b *Binder) Float32(name string, shape ...int) []float32 {
	t := b.Raw(name, shape...)
	if t == nil {
		return nil
	}
	v, err := Float32s(t)
	if err != nil {
		b.Fail(&Error{Path: b.src.Path(), Tensor: name, Err: err})
		return nil
	}
	b.evict(t)
	return v
}

// evict drops t's file pages from the resident set when the source is a
// mapped file (the copy made of them is what the model keeps).
func (b *Binder) evict(t *Tensor) {
	if e, ok := b.src.(Evicter); ok && len(t.Data) > 0 {
		e.Evict(t.Data)
	}
}

// Float16 returns the tensor called name as IEEE binary16 values: F16 data
// as stored (a copy), F32 and BF16 rounded to nearest even. Its file pages
// are dropped as Float32's are.
func (b *Binder) Float16(name string, shape ...int) []uint16 {
	t := b.Raw(name, shape...)
	if t == nil {
		return nil
	}
	v, err := Float16s(t)
	if err != nil {
		b.Fail(&Error{Path: b.src.Path(), Tensor: name, Err: err})
		return nil
	}
	b.evict(t)
	return v
}

// Unused lists the source's tensors no call has bound, sorted.
func (b *Binder) Unused() []string {
	var out []string
	for _, n := range b.src.Names() {
		if !b.used[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Float32s converts a tensor's elements to float32 (F32, F16, BF16).
func Float32s(t *Tensor) ([]float32, error) {
	n := t.Numel()
	if err := checkLen(t, n); err != nil {
		return nil, err
	}
	out := make([]float32, n)
	switch t.DType {
	case tensor.F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case tensor.F16:
		kernel.FP16sToFP32(out, t.Data[:2*n])
	case tensor.BF16:
		for i := range out {
			out[i] = kernel.BF16ToFP32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	default:
		return nil, fmt.Errorf("%w %s (want F32, F16 or BF16)", ErrDType, t.DType)
	}
	return out, nil
}

// Float16s converts a tensor's elements to binary16 (F16 copied; F32 and
// BF16 rounded to nearest even).
func Float16s(t *Tensor) ([]uint16, error) {
	n := t.Numel()
	if err := checkLen(t, n); err != nil {
		return nil, err
	}
	out := make([]uint16, n)
	switch t.DType {
	case tensor.F16:
		for i := range out {
			out[i] = binary.LittleEndian.Uint16(t.Data[2*i:])
		}
	case tensor.F32:
		for i := range out {
			out[i] = kernel.FP32ToFP16(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
	case tensor.BF16:
		for i := range out {
			out[i] = kernel.FP32ToFP16(kernel.BF16ToFP32(binary.LittleEndian.Uint16(t.Data[2*i:])))
		}
	default:
		return nil, fmt.Errorf("%w %s (want F32, F16 or BF16)", ErrDType, t.DType)
	}
	return out, nil
}

func checkLen(t *Tensor, n int) error {
	size := 0
	switch t.DType {
	case tensor.F32:
		size = 4
	case tensor.F16, tensor.BF16:
		size = 2
	default:
		return fmt.Errorf("%w %s (want F32, F16 or BF16)", ErrDType, t.DType)
	}
	if len(t.Data) != n*size {
		return fmt.Errorf("has %d bytes of data for shape %v of %s (%d wanted)", len(t.Data), t.Shape, t.DType, n*size)
	}
	return nil
}
