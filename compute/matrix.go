package compute

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Matrix is a 2-D weight [Rows][Cols] of any supported dtype, aliasing its
// bytes (typically memory-mapped GGUF data): row r is
// Data[r*RowBytes : (r+1)*RowBytes].
type Matrix struct {
	Type       tensor.DType
	Rows, Cols int
	Data       []byte
	pack       *packed     // weights repacked for the GEMM kernels (Prepare), or nil
	x          *x16        // full tiles in the x16 layout (ForDecode), or nil
	rows       io.ReaderAt // Data's bytes from their file, for Row (ReadRowsFrom), or nil
}

func isFloat(t tensor.DType) bool { return t == tensor.F32 || t == tensor.F16 || t == tensor.BF16 }

// weightTypes lists the weight types Check accepts.
func weightTypes() string {
	var names []string
	for _, t := range kernel.SupportedTypes() {
		if _, err := kernel.QDotFor(t); err == nil || isFloat(t) {
			names = append(names, t.String())
		}
	}
	return strings.Join(names, ", ")
}

// NewMatrix checks and returns a Matrix over data.
func NewMatrix(dt tensor.DType, rows, cols int, data []byte) (Matrix, error) {
	m := Matrix{Type: dt, Rows: rows, Cols: cols, Data: data}
	return m, m.Check()
}

// Check reports whether m is well formed: a supported dtype, Cols a
// multiple of its block size and Data exactly Rows rows long.
func (m Matrix) Check() error {
	_, noDot := kernel.QDotFor(m.Type)
	if !kernel.Supported(m.Type) || noDot != nil && !isFloat(m.Type) {
		return fmt.Errorf("compute: matrix [%d][%d]: unsupported weight type %s (supported: %s)", m.Rows, m.Cols, m.Type, weightTypes())
	}
	if m.Rows < 0 || m.Cols <= 0 || m.Cols%m.Type.BlockSize() != 0 {
		return fmt.Errorf("compute: matrix [%d][%d] %s: row length must be a positive multiple of the block size %d",
			m.Rows, m.Cols, m.Type, m.Type.BlockSize())
	}
	if want := m.Rows * m.RowBytes(); len(m.Data) != want {
		return fmt.Errorf("compute: matrix [%d][%d] %s: needs %d bytes, has %d", m.Rows, m.Cols, m.Type, want, len(m.Data))
	}
	return nil
}

// RowBytes returns the bytes of one row.
func (m Matrix) RowBytes() int { return m.Cols / m.Type.BlockSize() * m.Type.TypeSize() }

// RowData returns the bytes of row r.
func (m Matrix) RowData(r int) []byte {
	rb := m.RowBytes()
	return m.Data[r*rb : (r+1)*rb]
}

// Row dequantizes row r into dst[:Cols] (embedding lookup / get-rows).
func (m Matrix) Row(r int, dst []float32) {
	if r < 0 || r >= m.Rows || len(dst) < m.Cols {
		panic(fmt.Sprintf("compute: Row(%d) of matrix [%d][%d] into %d floats", r, m.Rows, m.Cols, len(dst)))
	}
	src := m.RowData(r)
	var bp *[]byte
	if m.rows != nil {
		bp = rowBufs.Get().(*[]byte)
		if cap(*bp) < len(src) {
			*bp = make([]byte, len(src))
		}
		if b := (*bp)[:len(src)]; readFull(m.rows, b, int64(r*len(src))) {
			src = b
		}
	}
	if err := kernel.Dequantize(m.Type, src, dst[:m.Cols]); err != nil {
		panic(err.Error()) // Check would have caught it
	}
	if bp != nil {
		rowBufs.Put(bp)
	}
}

// ReadRowsFrom returns m with Row reading each row through r, which holds
// Data's bytes (a model file: gguf.File.TensorReader), rather than through
// Data. A lookup-only table such as a token embedding then stays in the
// OS's page cache and out of this process's resident set: read through a
// mapping, each looked-up row would bring in the pages the kernel maps
// around a fault (64 KiB, or a whole large folio of a file just written:
// ~400 KiB per token for the 1B model's table), and a long generation would
// grow toward the whole table. A failed read falls back to Data.
func (m Matrix) ReadRowsFrom(r io.ReaderAt) Matrix {
	m.rows = r
	return m
}

// rowBufs holds Row's read buffers (*[]byte), so a lookup allocates nothing.
var rowBufs = sync.Pool{New: func() any { return new([]byte) }}

// readFull reads len(b) bytes at off, reporting whether all were read.
func readFull(r io.ReaderAt, b []byte, off int64) bool {
	n, err := r.ReadAt(b, off)
	return n == len(b) && (err == nil || err == io.EOF)
}

// mustFit panics if w, out and x do not fit n activation rows.
func mustFit(op string, out []float32, w Matrix, x []float32, n int) {
	if n < 0 || len(x) < n*w.Cols || len(out) < n*w.Rows || len(w.Data) < w.Rows*w.RowBytes() ||
		w.Cols <= 0 || w.Cols%max(w.Type.BlockSize(), 1) != 0 {
		panic(fmt.Sprintf("compute: %s: weight [%d][%d] %s (%d bytes), x %d floats, out %d floats, n %d do not fit",
			op, w.Rows, w.Cols, w.Type, len(w.Data), len(x), len(out), n))
	}
}
