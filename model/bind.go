package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Binder binds named tensors of a file to weights, checking each shape
// against the config. It keeps the first error so a loader can bind
// everything and check once; the error names the tensor, its shape and
// the shape that was expected.
type Binder struct {
	f           *gguf.File
	err         error
	bytes       int64
	packBytes   int64
	x16Bytes    int64
	arena       *compute.X16Arena // the x16 tiles of all bound matrices, in bind order
	arenaTried  bool
	expertBytes int64 // of the bytes, the experts' (Experts)
	used, of    int   // the experts a token uses, of how many (BindExperts)
}

// prepack is whether bound matrices are repacked for the GEMM kernels on
// their first batched multiplication (compute.PackOnFirstUse), turned on
// by GLASSBOX_PREPACK=1 (read once). Later prompt chunks then skip the
// repacking (~15 % of a 128-token prefill of the 1B Q4_0 model at 2
// threads), but the first batched pass writes the packed copy into fresh
// memory (+2 s on that model here, page faults) and each matrix so used
// keeps compute.PreparedBytes of heap beside its mapped bytes (2× for
// Q4_0: +1.07 GB resident for the 1B model). Worth it for a long-lived
// server that sees many prompts, not for one prompt, hence off by default.
var prepack = os.Getenv("GLASSBOX_PREPACK") == "1"

// NewBinder returns a binder over f.
func NewBinder(f *gguf.File) *Binder { return &Binder{f: f} }

// Err returns the first binding error.
func (b *Binder) Err() error { return b.err }

// Bytes is the total size of the bound tensors.
func (b *Binder) Bytes() int64 { return b.bytes }

// X16Bytes is the heap the bound matrices' x16 copies take (their mapped
// pages are dropped as they are copied).
func (b *Binder) X16Bytes() int64 { return b.x16Bytes }

// PackBytes is the most heap the bound matrices' GEMM repacking can take
// (every matrix multiplied in a batch at least once); 0 when repacking is
// off or this CPU has no GEMM kernels.
func (b *Binder) PackBytes() int64 { return b.packBytes }

// x16 is whether quantized matrices are rearranged into the x16 layout,
// and float matrices into panels of 2048 columns, at load
// (compute.ForDecode), on by default where the CPU has the kernels; GLASSBOX_X16=0 keeps the GGUF layout (to compare, or if
// the copy is unwanted). The copy replaces the mapped pages (they are
// dropped once copied), so resident memory stays one copy of the weights.
var x16 = os.Getenv("GLASSBOX_X16") != "0"

// prepare copies m into the x16 layout now (so that the copy is part of
// loading), or marks it for GEMM repacking on first batched use (see
// prepack). A token embedding that is only looked up row by row (the file
// has a separate output matrix) keeps its mapped layout.
func (b *Binder) prepare(name string, m compute.Matrix) compute.Matrix {
	if b.err != nil {
		return m
	}
	if name == "token_embd.weight" {
		// Lookups read their rows from the file, not the mapping, so the
		// table's pages never join the resident set (a tied table's are
		// dropped as its copy for the output is made).
		if r := b.f.TensorReader(b.tensor(name)); r != nil {
			m = m.ReadRowsFrom(r)
		}
	}
	lookupOnly := name == "token_embd.weight" && b.f.HasTensor("output.weight")
	if x16 && !lookupOnly {
		if m = compute.ForDecodeIn(m, b.f.Evict, b.x16Arena()); m.ForDecoding() {
			m.CopyX16()
			b.x16Bytes += compute.X16Bytes(m)
			return m
		}
	}
	if !prepack {
		return m
	}
	m = compute.PackOnFirstUse(m)
	if m.Prepared() {
		b.packBytes += int64(compute.PreparedBytes(m))
	}
	return m
}

// arenaMin is the smallest file whose x16 tiles go in one arena.
const arenaMin = 64 << 20

// x16Arena returns the arena for the model's x16 tiles, reserved on first
// use: the file's tensor bytes, plus the most the layout adds (Q3_K's
// 3.6 %: 64 bytes per 16 rows × 256 columns, as Q4_K's unpacked scales)
// and alignment, bound what the tiles can take.
// Nil where the OS cannot reserve memory lazily.
func (b *Binder) x16Arena() *compute.X16Arena {
	if !b.arenaTried {
		b.arenaTried = true
		// A small model keeps a mapping per matrix: in an arena its few
		// hundred KiB of tiles would fault in a whole 2 MiB huge page.
		if n := b.f.TensorBytes(); n >= arenaMin {
			b.arena = compute.NewX16Arena(n + n/16 + 1<<20)
		}
	}
	return b.arena
}

func (b *Binder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("load: "+format, args...)
	}
}

// Has reports whether the file has the tensor.
func (b *Binder) Has(name string) bool { return b.f.HasTensor(name) }

// Matrix binds name as a rows × cols matrix (rows of cols elements; GGUF
// ne = [cols, rows]). The data aliases the mapped file.
func (b *Binder) Matrix(name string, rows, cols int) compute.Matrix {
	return b.prepare(name, b.matrix(name, rows, cols))
}

func (b *Binder) matrix(name string, rows, cols int) compute.Matrix {
	t := b.tensor(name)
	if t == nil {
		return compute.Matrix{}
	}
	if len(t.Shape) != 2 || t.Shape[0] != int64(rows) || t.Shape[1] != int64(cols) {
		b.fail("tensor %s: shape %v, want [%d %d] (rows × row length)", name, t.Shape, rows, cols)
		return compute.Matrix{}
	}
	return b.matrixOf(name, t, rows, cols)
}

// matrixOf binds tensor t (of the shape its caller checked) as rows × cols.
func (b *Binder) matrixOf(name string, t *gguf.TensorInfo, rows, cols int) compute.Matrix {
	if !t.Type.Known() || cols%t.Type.BlockSize() != 0 {
		b.fail("tensor %s: type %v cannot hold rows of %d elements", name, t.Type, cols)
		return compute.Matrix{}
	}
	m := compute.Matrix{Type: t.Type, Rows: rows, Cols: cols, Data: b.f.Data(t)}
	if err := m.Check(); err != nil {
		// A type glassbox cannot multiply (or, for a token embedding, look
		// up) fails here, at load, not in the first forward pass.
		b.fail("tensor %s: %v", name, err)
		return compute.Matrix{}
	}
	b.bytes += t.Size
	return m
}

// Vector binds name as n float32 values (norm weights, biases, rope
// factors), converting F16/BF16 to F32. It returns a fresh slice.
func (b *Binder) Vector(name string, n int) []float32 {
	t := b.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Shape) != 1 || t.Shape[0] != int64(n) {
		b.fail("tensor %s: shape %v, want [%d]", name, t.Shape, n)
		return nil
	}
	return b.floats(name, t, n)
}

// Vectors binds an (n, width) tensor of F32, F16 or BF16 values as n
// vectors of width (a stacked bias: one row an expert's).
func (b *Binder) Vectors(name string, n, width int) [][]float32 {
	t := b.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Shape) != 2 || t.Shape[0] != int64(n) || t.Shape[1] != int64(width) {
		b.fail("tensor %s: shape %v, want [%d %d]", name, t.Shape, n, width)
		return nil
	}
	all := b.floats(name, t, n*width)
	if all == nil {
		return nil
	}
	out := make([][]float32, n)
	for i := range out {
		out[i] = all[i*width : (i+1)*width : (i+1)*width]
	}
	return out
}

// floats decodes tensor t's n values (F32, F16 or BF16) and counts its bytes.
func (b *Binder) floats(name string, t *gguf.TensorInfo, n int) []float32 {
	data := b.f.Data(t)
	out := make([]float32, n)
	switch t.Type {
	case tensor.F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case tensor.F16:
		for i := range out {
			out[i] = halfToFloat(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case tensor.BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16)
		}
	default:
		b.fail("tensor %s: type %v, want F32, F16 or BF16 for a vector", name, t.Type)
		return nil
	}
	b.bytes += t.Size
	return out
}

func (b *Binder) tensor(name string) *gguf.TensorInfo {
	if b.err != nil {
		return nil
	}
	t, err := b.f.Tensor(name)
	if err != nil {
		b.fail("tensor %s is missing from the file", name)
		return nil
	}
	return t
}

// halfToFloat widens an IEEE 754 binary16 value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
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

// Split binds name as a matrix of sum(rows) rows of cols elements and
// returns its consecutive row ranges as separate matrices (fused
// projections such as Phi-3's attn_qkv: Q rows, then K rows, then V rows).
// The views alias the file like Matrix does.
func (b *Binder) Split(name string, cols int, rows ...int) []compute.Matrix {
	total := 0
	for _, r := range rows {
		total += r
	}
	m := b.matrix(name, total, cols)
	out := make([]compute.Matrix, len(rows))
	if b.err != nil {
		return out
	}
	rowBytes := cols / m.Type.BlockSize() * m.Type.TypeSize()
	start := 0
	for i, r := range rows {
		out[i] = b.prepare(name, compute.Matrix{Type: m.Type, Rows: r, Cols: cols, Data: m.Data[start*rowBytes : (start+r)*rowBytes]})
		start += r
	}
	return out
}

// ReadBytes is the weight bytes one forward pass of one token reads: every
// bound tensor, except that an untied token embedding contributes only the
// one row it looks up (a tied one is read whole as the output matrix), and
// of a mixture of experts only the ones a token uses (BindExperts).
func (b *Binder) ReadBytes(embd compute.Matrix, tied bool) int64 {
	n := b.bytes
	if b.of > 0 {
		n -= b.expertBytes - b.expertBytes*int64(b.used)/int64(b.of)
	}
	if tied || embd.Rows == 0 {
		return n
	}
	return n - int64(len(embd.Data)) + int64(embd.RowBytes())
}

// Experts binds name, a stack of n matrices of rows × cols (GGUF ne =
// [cols, rows, n]: ffn_gate_exps and its kind), as n matrices, each
// prepared as Matrix prepares one.
func (b *Binder) Experts(name string, n, rows, cols int) []compute.Matrix {
	t := b.tensor(name)
	if t == nil {
		return nil
	}
	if len(t.Shape) != 3 || t.Shape[0] != int64(n) || t.Shape[1] != int64(rows) || t.Shape[2] != int64(cols) {
		b.fail("tensor %s: shape %v, want [%d %d %d] (experts × rows × row length)", name, t.Shape, n, rows, cols)
		return nil
	}
	all := b.matrixOf(name, t, n*rows, cols)
	if b.err != nil {
		return nil
	}
	b.expertBytes += t.Size
	out := make([]compute.Matrix, n)
	rb := all.RowBytes()
	for e := range out {
		out[e] = b.prepare(name, compute.Matrix{Type: all.Type, Rows: rows, Cols: cols, Data: all.Data[e*rows*rb : (e+1)*rows*rb]})
	}
	return out
}
