package tensor

import (
	"fmt"
	"strings"
	"unsafe"
)

// Shape lists dimensions outermost first; the last is innermost and
// contiguous. Any number of dimensions is allowed (video needs 5).
type Shape []int

// Elements returns the product of the dimensions (1 for a scalar shape).
func (s Shape) Elements() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Equal reports whether s and o have the same dimensions.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// View is a typed, strided window on bytes it does not own, such as a
// memory-mapped weight or an arena buffer. The innermost dimension is
// always packed (whole blocks for quantized types). Strides[i] is the
// distance in bytes between consecutive indices of dimension i; the last
// entry is the size of one block (like ggml's nb[0]) and is never used to
// address, since the innermost dimension cannot be strided.
type View struct {
	Type    DType
	Shape   Shape
	Strides []int // bytes; len(Strides) == len(Shape)
	Data    []byte
}

// NewView returns a contiguous row-major view of shape over data, which
// must hold exactly the bytes the shape needs.
func NewView(t DType, shape Shape, data []byte) (View, error) {
	if len(shape) == 0 {
		return View{}, fmt.Errorf("tensor: view of %s needs at least one dimension", t)
	}
	for _, d := range shape {
		if d < 0 {
			return View{}, fmt.Errorf("tensor: view %s: negative dimension", shape)
		}
	}
	inner := shape[len(shape)-1]
	rb, err := t.RowBytes(int64(inner))
	if err != nil {
		return View{}, fmt.Errorf("tensor: view %s: %w", shape, err)
	}
	strides := make([]int, len(shape))
	strides[len(shape)-1] = t.TypeSize()
	stride := int(rb)
	for i := len(shape) - 2; i >= 0; i-- {
		strides[i] = stride
		stride *= shape[i]
	}
	if need := int(rb) * (shape.Elements() / max(inner, 1)); len(data) != need && !(inner == 0 && len(data) == 0) {
		return View{}, fmt.Errorf("tensor: view %s %s needs %d bytes, has %d", shape, t, need, len(data))
	}
	return View{Type: t, Shape: shape, Strides: strides, Data: data}, nil
}

// rowBytes is the packed size of one innermost row.
func (v View) rowBytes() int {
	rb, _ := v.Type.RowBytes(int64(v.Shape[len(v.Shape)-1]))
	return int(rb)
}

// Contiguous reports whether v is laid out row-major without gaps.
func (v View) Contiguous() bool {
	stride := v.rowBytes()
	for i := len(v.Shape) - 2; i >= 0; i-- {
		if v.Shape[i] > 1 && v.Strides[i] != stride {
			return false
		}
		stride *= v.Shape[i]
	}
	return true
}

// Index returns the view of index i of the outermost dimension (one fewer
// dimension).
func (v View) Index(i int) (View, error) {
	if len(v.Shape) < 2 {
		return View{}, fmt.Errorf("tensor: Index on a %d-dimensional view", len(v.Shape))
	}
	if i < 0 || i >= v.Shape[0] {
		return View{}, fmt.Errorf("tensor: index %d out of range [0,%d)", i, v.Shape[0])
	}
	off := i * v.Strides[0]
	return View{Type: v.Type, Shape: v.Shape[1:], Strides: v.Strides[1:], Data: v.Data[off:]}, nil
}

// Slice narrows dimension dim to [lo, hi). The innermost dimension can be
// narrowed only at block boundaries.
func (v View) Slice(dim, lo, hi int) (View, error) {
	if dim < 0 || dim >= len(v.Shape) {
		return View{}, fmt.Errorf("tensor: Slice dimension %d of a %d-dimensional view", dim, len(v.Shape))
	}
	if lo < 0 || hi < lo || hi > v.Shape[dim] {
		return View{}, fmt.Errorf("tensor: Slice [%d,%d) of dimension %d (size %d)", lo, hi, dim, v.Shape[dim])
	}
	shape := append(Shape(nil), v.Shape...)
	shape[dim] = hi - lo
	var off int
	if dim == len(v.Shape)-1 {
		bs := v.Type.BlockSize()
		if lo%bs != 0 || hi%bs != 0 {
			return View{}, fmt.Errorf("tensor: Slice [%d,%d) of the innermost dimension splits %s blocks of %d", lo, hi, v.Type, bs)
		}
		off = lo / bs * v.Type.TypeSize()
	} else {
		off = lo * v.Strides[dim]
	}
	return View{Type: v.Type, Shape: shape, Strides: append([]int(nil), v.Strides...), Data: v.Data[off:]}, nil
}

// Permute reorders the outer dimensions: order is a permutation of
// 0..len(Shape)-1 that keeps the innermost dimension last.
func (v View) Permute(order ...int) (View, error) {
	n := len(v.Shape)
	if len(order) != n || order[n-1] != n-1 {
		return View{}, fmt.Errorf("tensor: Permute %v of a %d-dimensional view must keep dimension %d last", order, n, n-1)
	}
	seen := make([]bool, n)
	shape, strides := make(Shape, n), make([]int, n)
	for i, o := range order {
		if o < 0 || o >= n || seen[o] {
			return View{}, fmt.Errorf("tensor: Permute %v is not a permutation", order)
		}
		seen[o] = true
		shape[i], strides[i] = v.Shape[o], v.Strides[o]
	}
	return View{Type: v.Type, Shape: shape, Strides: strides, Data: v.Data}, nil
}

// Reshape returns a contiguous view with another shape of the same
// elements; v must be contiguous.
func (v View) Reshape(shape Shape) (View, error) {
	if !v.Contiguous() {
		return View{}, fmt.Errorf("tensor: Reshape %s → %s of a non-contiguous view", v.Shape, shape)
	}
	if shape.Elements() != v.Shape.Elements() {
		return View{}, fmt.Errorf("tensor: Reshape %s → %s changes the element count", v.Shape, shape)
	}
	rb, err := v.Type.RowBytes(int64(shape.Elements()))
	if err != nil {
		return View{}, fmt.Errorf("tensor: Reshape %s → %s: %w", v.Shape, shape, err)
	}
	return NewView(v.Type, shape, v.Data[:rb])
}

// Float32s returns the elements of a contiguous F32 view as a []float32
// aliasing its bytes (no copy).
func (v View) Float32s() ([]float32, error) {
	if v.Type != F32 || !v.Contiguous() {
		return nil, fmt.Errorf("tensor: Float32s of a %s view (contiguous %v)", v.Type, v.Contiguous())
	}
	n := v.Shape.Elements()
	if n == 0 {
		return nil, nil
	}
	if len(v.Data) < 4*n || uintptr(unsafe.Pointer(&v.Data[0]))%4 != 0 {
		return nil, fmt.Errorf("tensor: Float32s: %d bytes, need %d aligned to 4", len(v.Data), 4*n)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&v.Data[0])), n), nil
}
