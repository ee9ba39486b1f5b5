// Package tensor owns the description of tensor data: element types (ggml
// dtypes with their block layouts), N-dimensional shapes and strides, and
// views over memory that someone else owns (for example a memory-mapped
// model file). It does no arithmetic.
//
// Layout convention, used everywhere in glassbox: shapes are written
// outermost first and stored row-major, so the last dimension is innermost
// and contiguous. A weight matrix that maps dim → out is stored [out][dim]:
// each output row is a contiguous row of dim elements (GGUF's ne[0] is our
// last dimension).
//
// Imports: standard library only.
package tensor

import "fmt"

// DType is a ggml element type. Its numeric value is the one written in GGUF
// tensor directories (ggml's enum ggml_type).
type DType uint32

// The ggml types. Gaps in the numbering are types ggml has removed; they
// are unknown here, as they are to current readers.
const (
	F32     DType = 0
	F16     DType = 1
	Q4_0    DType = 2
	Q4_1    DType = 3
	Q5_0    DType = 6
	Q5_1    DType = 7
	Q8_0    DType = 8
	Q8_1    DType = 9
	Q2_K    DType = 10
	Q3_K    DType = 11
	Q4_K    DType = 12
	Q5_K    DType = 13
	Q6_K    DType = 14
	Q8_K    DType = 15
	IQ2_XXS DType = 16
	IQ2_XS  DType = 17
	IQ3_XXS DType = 18
	IQ1_S   DType = 19
	IQ4_NL  DType = 20
	IQ3_S   DType = 21
	IQ2_S   DType = 22
	IQ4_XS  DType = 23
	I8      DType = 24
	I16     DType = 25
	I32     DType = 26
	I64     DType = 27
	F64     DType = 28
	IQ1_M   DType = 29
	BF16    DType = 30
	TQ1_0   DType = 34
	TQ2_0   DType = 35
	MXFP4   DType = 39

	// U8 is unsigned bytes, which safetensors and PyTorch files have and
	// GGUF does not (ggml has no uint8 type): a number of glassbox's own,
	// at the end of the table, that the GGUF reader refuses (InGGUF).
	U8 DType = maxDType - 1
)

// Traits describes how a dtype packs elements: BlockSize elements are stored
// in TypeSize bytes. Unquantized types have a block of one element.
type Traits struct {
	Name      string
	BlockSize int // elements per block
	TypeSize  int // bytes per block
	Quantized bool
}

// QK_K is the super-block size of the K-quants and IQ types.
const QK_K = 256

// maxDType bounds the dtype numbers the table covers.
const maxDType = 64

// traitsByType is the type-traits table; block sizes and bytes per block
// follow the block structs of the GGUF/ggml specification. An array, not a
// map: BlockSize and TypeSize are called in hot loops.
var traitsByType = func() (t [maxDType]Traits) {
	for dt, tr := range traitList {
		t[dt] = tr
	}
	return t
}()

var traitList = map[DType]Traits{
	F32:     {"F32", 1, 4, false},
	F16:     {"F16", 1, 2, false},
	BF16:    {"BF16", 1, 2, false},
	F64:     {"F64", 1, 8, false},
	I8:      {"I8", 1, 1, false},
	U8:      {"U8", 1, 1, false},
	I16:     {"I16", 1, 2, false},
	I32:     {"I32", 1, 4, false},
	I64:     {"I64", 1, 8, false},
	Q4_0:    {"Q4_0", 32, 2 + 16, true},         // d f16, 32×4 bits
	Q4_1:    {"Q4_1", 32, 2 + 2 + 16, true},     // d, m f16, 32×4 bits
	Q5_0:    {"Q5_0", 32, 2 + 4 + 16, true},     // d f16, high bits u32, 32×4 bits
	Q5_1:    {"Q5_1", 32, 2 + 2 + 4 + 16, true}, // d, m f16, high bits, 32×4 bits
	Q8_0:    {"Q8_0", 32, 2 + 32, true},         // d f16, 32×int8
	Q8_1:    {"Q8_1", 32, 2 + 2 + 32, true},     // d, s f16, 32×int8
	Q2_K:    {"Q2_K", QK_K, 16 + 64 + 2 + 2, true},
	Q3_K:    {"Q3_K", QK_K, 32 + 64 + 12 + 2, true},
	Q4_K:    {"Q4_K", QK_K, 2 + 2 + 12 + 128, true},
	Q5_K:    {"Q5_K", QK_K, 2 + 2 + 12 + 32 + 128, true},
	Q6_K:    {"Q6_K", QK_K, 128 + 64 + 16 + 2, true},
	Q8_K:    {"Q8_K", QK_K, 4 + 256 + 32, true},
	IQ2_XXS: {"IQ2_XXS", QK_K, 2 + 64, true},
	IQ2_XS:  {"IQ2_XS", QK_K, 2 + 64 + 8, true},
	IQ3_XXS: {"IQ3_XXS", QK_K, 2 + 96, true},
	IQ1_S:   {"IQ1_S", QK_K, 2 + 32 + 16, true},
	IQ4_NL:  {"IQ4_NL", 32, 2 + 16, true},
	IQ3_S:   {"IQ3_S", QK_K, 2 + 64 + 8 + 32 + 4, true},
	IQ2_S:   {"IQ2_S", QK_K, 2 + 64 + 8 + 8, true},
	IQ4_XS:  {"IQ4_XS", QK_K, 2 + 2 + 4 + 128, true},
	IQ1_M:   {"IQ1_M", QK_K, 32 + 16 + 8, true},
	TQ1_0:   {"TQ1_0", QK_K, 48 + 4 + 2, true},
	TQ2_0:   {"TQ2_0", QK_K, 64 + 2, true},
	MXFP4:   {"MXFP4", 32, 1 + 16, true},
}

// Traits returns t's layout; ok is false for an unknown type.
func (t DType) Traits() (Traits, bool) {
	if t >= maxDType || traitsByType[t].BlockSize == 0 {
		return Traits{}, false
	}
	return traitsByType[t], true
}

// Known reports whether t is a dtype this build knows the layout of.
func (t DType) Known() bool { _, ok := t.Traits(); return ok }

// InGGUF reports whether t is a known ggml type, one a GGUF file may
// hold (U8 is not).
func (t DType) InGGUF() bool { return t.Known() && t != U8 }

// String returns the ggml name, or "type(N)" for an unknown type.
func (t DType) String() string {
	if tr, ok := t.Traits(); ok {
		return tr.Name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize returns the number of elements per block (0 if unknown).
func (t DType) BlockSize() int {
	if t >= maxDType {
		return 0
	}
	return traitsByType[t].BlockSize
}

// TypeSize returns the number of bytes per block (0 if unknown).
func (t DType) TypeSize() int {
	if t >= maxDType {
		return 0
	}
	return traitsByType[t].TypeSize
}

// ParseDType returns the dtype named s (case-sensitive ggml names such as
// "Q4_K" or "F16").
func ParseDType(s string) (DType, bool) {
	for t, tr := range traitList {
		if tr.Name == s {
			return t, true
		}
	}
	return 0, false
}

// DTypes lists every known dtype in ascending numeric order.
func DTypes() []DType {
	out := make([]DType, 0, len(traitList))
	for t := DType(0); t < maxDType; t++ {
		if t.Known() {
			out = append(out, t)
		}
	}
	return out
}

// RowBytes returns the bytes that n consecutive elements of type t occupy.
// n must be a multiple of the block size.
func (t DType) RowBytes(n int64) (int64, error) {
	tr, ok := t.Traits()
	if !ok {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%int64(tr.BlockSize) != 0 {
		return 0, fmt.Errorf("%s: %d elements is not a multiple of the block size %d", tr.Name, n, tr.BlockSize)
	}
	return n / int64(tr.BlockSize) * int64(tr.TypeSize), nil
}
