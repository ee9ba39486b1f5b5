package compute

import (
	"runtime"
	"sync"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Float panels: the x16 tiles of a float matrix (F32, F16, BF16), stored
// in column panels of floatPanelCols columns (x16Panel) each a row-major
// matrix of the tiled rows:
//
//	panel 0 (rows 0..16·tiles−1, columns 0..2047), panel 1 (columns 2048..4095), ...
//
// (the last panel narrower when the columns are not a multiple; a matrix
// of at most 2048 columns keeps its rows as they are, and is copied only
// into an arena), the same bytes as the rows. Two things make it faster
// than the mapped rows:
//
//   - A row-by-row dot product over a long row cycles all of the
//     activations through L1 once per row: for the 1B model's down matrix
//     (8192 columns) that is 32 KiB of float32 activations beside 16 KiB of
//     weights a row, in a 48 KiB L1, and such rows streamed at 80 % of the
//     read bandwidth where 2048-column rows stream at its full speed. In a
//     panel one 8 KiB slice of activations serves all of a thread's rows
//     from L1, each panel's rows read front to back in one call. (Panels
//     inside each 16-row tile, read tile by tile, were 1.02–1.10× slower
//     per decode step and 1.01× in prefill.)
//   - The copy goes where the quantized tiles go: into the model's arena
//     (huge pages, a layer's matrices next to each other, in the order
//     they run). Copying the 1B F16 model's 2048-column matrices too, with
//     their layout unchanged, made its decode step 1.22× faster in an
//     interleaved A/B in one process, where panels for the down matrices
//     alone gave 1.11–1.19×.
//
// A row's result is the sum of its panels' dot products in panel order: the
// same for any thread count, within rounding of the plain dot product.

// floatPanelCols is the columns of one panel (8 KiB of float32
// activations).
const floatPanelCols = 2048

// floatX16 reports whether m gets float panels: a float matrix whose
// columns the fast tile kernels take (the generic kernels, as in purego
// builds, keep the plain layout).
func floatX16(m Matrix) bool {
	switch m.Type {
	case tensor.F32, tensor.F16, tensor.BF16:
	default:
		return false
	}
	_, ok := kernel.FTileFor(m.Type)
	return ok && m.Cols%kernel.FTileCols == 0
}

// packFloatPanel writes columns cols.Lo..cols.Hi−1 of rows r0..r0+15 of
// w (rows of rb bytes, ts bytes per element) into dst, row after row.
func packFloatPanel(w []byte, rb, ts, r0 int, cols kernel.X16Cols, dst []byte) {
	pb := (cols.Hi - cols.Lo) * ts // a panel row's bytes
	for r := range kernel.X16Rows {
		src := w[(r0+r)*rb+cols.Lo*ts:]
		copy(dst[r*pb:(r+1)*pb], src[:pb])
	}
}

// floatX16Task is matMulFloatX16's loop body over the tiles of up to
// maxShared matrices that share the input, one after another, pooled so
// that token generation allocates nothing.
type floatX16Task struct {
	tileLoop
	x    []float32
	n    int
	rows kernel.FRows
	tile kernel.FTile // nil below 4 activation rows
}

var floatX16Tasks = sync.Pool{New: func() any { return new(floatX16Task) }}

// matMulFloatX16 is MatMul (and MatMuls) for float matrices with panels,
// all of one type and row length (1 ≤ len(ps) ≤ maxShared): one parallel
// loop over all of their tiles; rows past a matrix's last full tile use
// the plain row runs.
func matMulFloatX16(p *Pool, x []float32, n int, ps ...Product) {
	w0 := ps[0].W
	rows, err := kernel.FRowsFor(w0.Type)
	if err != nil {
		panic("compute: MatMul: " + err.Error())
	}
	t := floatX16Tasks.Get().(*floatX16Task)
	*t = floatX16Task{x: x, n: n, rows: rows}
	t.set(ps)
	if n >= 4 {
		t.tile, _ = kernel.FTileFor(w0.Type) // floatX16 checked that there is one
	}
	if n <= streamRows {
		p.ForStream(t.total(), grainFor(w0.x.tileBytes*n), t)
	} else {
		p.ForTask(t.total(), grainFor(w0.x.tileBytes*n), t)
	}
	*t = floatX16Task{} // keep no caller memory in the pool
	floatX16Tasks.Put(t)
	// The rows past each matrix's last tile: fewer than 16, one thread.
	for _, pr := range ps {
		w := pr.W
		rb, r0 := w.RowBytes(), w.Rows/kernel.X16Rows*kernel.X16Rows
		for i := range n {
			rows(w.Data[r0*rb:], rb, x[i*w.Cols:(i+1)*w.Cols], pr.Out[i*w.Rows+r0:(i+1)*w.Rows], false)
		}
	}
}

func (t *floatX16Task) Run(lo, hi int) { t.run(t, lo, hi) }

// span multiplies tiles lo..hi-1 of w into out.
func (t *floatX16Task) span(_ int, w Matrix, out []float32, lo, hi int) {
	w.x16Copied(lo, hi)
	ilo := 0 // activation rows the 4×4 tiles take
	if t.tile != nil {
		ilo = t.n / 4 * 4
		t.tiles(w, out, lo, hi, ilo)
	}
	// Each panel's rows lo·16..hi·16 are one run of rows.
	ts, cols, rows := w.Type.TypeSize(), w.Cols, w.Rows
	for p, cp := range w.x.panels {
		data := w.x.tiles(p, lo, hi)
		c0, pc := cp.cols.Lo, cp.cols.Hi-cp.cols.Lo
		for i := ilo; i < t.n; i++ {
			t.rows(data, pc*ts, t.x[i*cols+c0:i*cols+c0+pc], out[i*rows+lo*kernel.X16Rows:i*rows+hi*kernel.X16Rows], p > 0)
		}
	}
	runtime.KeepAlive(w.x) // the tiles live outside the Go heap while x does
}

// tiles computes activation rows [0, ilo) (a multiple of 4) of tiles
// lo..hi-1 with the 4×4 tile kernel: per group of floatPanel activation
// rows (kept in L2) it runs over all of the tiles, as matMulFloatTiles
// does over rows; a tile per group of activations instead would read all
// of the activations once per tile (1.4× slower for 128 rows).
func (t *floatX16Task) tiles(w Matrix, out []float32, lo, hi, ilo int) {
	acc := new([16]float32) // on the heap (the kernel is a func value): one a chunk
	ts, cols, rows := w.Type.TypeSize(), w.Cols, w.Rows
	for i0 := 0; i0 < ilo; i0 += floatPanel {
		for p, cp := range w.x.panels {
			data := w.x.tiles(p, lo, hi) // rows lo·16..hi·16 of the panel
			c0, pc := cp.cols.Lo, cp.cols.Hi-cp.cols.Lo
			for g := 0; g < (hi-lo)*kernel.X16Rows; g += 4 {
				for i := i0; i < min(ilo, i0+floatPanel); i += 4 {
					t.tile(data, pc*ts, g, t.x[c0:], cols, i, pc, acc)
					for k := range 4 {
						dst := out[(i+k)*rows+lo*kernel.X16Rows+g:][:4]
						for r := range 4 {
							if p == 0 {
								dst[r] = acc[4*k+r]
							} else {
								dst[r] += acc[4*k+r]
							}
						}
					}
				}
			}
		}
	}
}
