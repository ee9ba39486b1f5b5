package compute

import (
	"sync"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// rowTile is how many weight rows one task takes: the rows' blocks are
// reused across all n activation rows while they sit in L1/L2.
const rowTile = 16

// scratch buffers for quantized activations, reused across calls.
var byteBufs = sync.Pool{New: func() any { return new([]byte) }}

func getBytes(n int) *[]byte {
	b := byteBufs.Get().(*[]byte)
	if cap(*b) < n {
		*b = make([]byte, n)
	}
	*b = (*b)[:n]
	return b
}

// MatMul computes out[i*Rows+r] = Σ_c x[i*Cols+c]·W[r][c] for i < n
// (x is [n][Cols], out is [n][Rows]).
//
// Quantized weights: the activations are first quantized to the format's
// vec-dot type (kernel.VecDotType) and each block's dot product is an
// integer sum, as llama.cpp does. F32/F16/BF16 weights multiply the F32
// activations directly. Work is split over weight rows; each task streams
// its rows once and reuses them across all n activation rows.
func MatMul(p *Pool, out []float32, w Matrix, x []float32, n int) {
	mustFit("MatMul", out, w, x, n)
	if n == 0 || w.Rows == 0 {
		return
	}
	switch w.Type {
	case tensor.F32, tensor.F16, tensor.BF16:
		matMulFloat(p, out, w, x, n)
		return
	}
	if n >= gemmMinRows && w.Rows >= kernel.GemmRows {
		if gemm, ok := kernel.GemmFor(w.Type); ok {
			matMulGemm(p, out, w, x, n, gemm)
			return
		}
	}
	matMulDots(p, out, w, x, n, 0, w.Rows)
}

// matMulDots computes output columns [rlo, rhi) with the dot kernels.
func matMulDots(p *Pool, out []float32, w Matrix, x []float32, n, rlo, rhi int) {
	vt, err := kernel.VecDotType(w.Type)
	if err != nil {
		panic("compute: MatMul: " + err.Error())
	}
	dot, err := kernel.QDotFor(w.Type)
	if err != nil {
		panic("compute: MatMul: " + err.Error())
	}
	xrb := w.Cols / vt.BlockSize() * vt.TypeSize()
	buf := getBytes(n * xrb)
	defer byteBufs.Put(buf)
	xq := *buf
	p.For(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if err := kernel.Quantize(vt, x[i*w.Cols:(i+1)*w.Cols], xq[i*xrb:(i+1)*xrb]); err != nil {
				panic("compute: MatMul: " + err.Error())
			}
		}
	})
	rb := w.RowBytes()
	tiles := (rhi - rlo + rowTile - 1) / rowTile
	p.For(tiles, func(lo, hi int) {
		for r := rlo + lo*rowTile; r < min(rlo+hi*rowTile, rhi); r++ {
			row := w.Data[r*rb : (r+1)*rb]
			for i := range n {
				out[i*w.Rows+r] = dot(w.Cols, row, xq[i*xrb:(i+1)*xrb])
			}
		}
	})
}

// gemmMinRows is the batch from which the GEMM kernels beat dot products
// (below it, repacking the weights costs more than it saves).
const gemmMinRows = 8

var (
	apacks = sync.Pool{New: func() any { return new(kernel.APack) }}
	wpacks = sync.Pool{New: func() any { return new(kernel.WPack) }}
)

// matMulGemm runs the 16×16 GEMM kernels: the activations are packed once;
// each task takes a range of 16-row weight tiles, repacks each tile once
// and runs it against every activation panel. Rows past the last full tile
// use the dot kernels.
func matMulGemm(p *Pool, out []float32, w Matrix, x []float32, n int, gemm kernel.Gemm) {
	ap := apacks.Get().(*kernel.APack)
	defer apacks.Put(ap)
	if err := ap.Reset(w.Type, n, w.Cols); err != nil {
		matMulDots(p, out, w, x, n, 0, w.Rows) // rows the GEMM layout cannot take
		return
	}
	p.For(n, func(lo, hi int) { ap.PackRows(x, lo, hi) })
	rb := w.RowBytes()
	const tr = kernel.GemmRows
	p.For(w.Rows/tr, func(lo, hi int) {
		wp := wpacks.Get().(*kernel.WPack)
		defer wpacks.Put(wp)
		var t [tr * kernel.GemmActs]float32
		for rt := lo; rt < hi; rt++ {
			if err := wp.Pack(w.Type, w.Data, rb, rt*tr, w.Cols); err != nil {
				panic("compute: MatMul: " + err.Error())
			}
			for pn := range ap.Panels() {
				gemm(wp, ap, pn, &t)
				for i := 0; i < kernel.GemmActs && kernel.GemmActs*pn+i < n; i++ {
					o := (kernel.GemmActs*pn+i)*w.Rows + rt*tr
					copy(out[o:o+tr], t[i*tr:(i+1)*tr])
				}
			}
		}
	})
	if w.Rows%tr != 0 {
		matMulDots(p, out, w, x, n, w.Rows/tr*tr, w.Rows)
	}
}

func matMulFloat(p *Pool, out []float32, w Matrix, x []float32, n int) {
	dot, err := kernel.FDotFor(w.Type)
	if err != nil {
		panic("compute: MatMul: " + err.Error())
	}
	rb := w.RowBytes()
	rlo, ilo := 0, 0 // rows and activations the tiles leave to the dots
	if tile, ok := kernel.FTileFor(w.Type); ok && n >= 4 && w.Rows >= 4 && w.Cols%kernel.FTileCols == 0 {
		matMulFloatTiles(p, out, w, x, n, tile)
		rlo, ilo = w.Rows/4*4, n/4*4
	}
	// dots for the rows below rlo with activations from ilo, and for all
	// activations of the rows from rlo
	tiles := (w.Rows + rowTile - 1) / rowTile
	p.For(tiles, func(lo, hi int) {
		for r := lo * rowTile; r < min(hi*rowTile, w.Rows); r++ {
			row := w.Data[r*rb : (r+1)*rb]
			first := ilo
			if r >= rlo {
				first = 0
			}
			for i := first; i < n; i++ {
				out[i*w.Rows+r] = dot(row, x[i*w.Cols:(i+1)*w.Cols])
			}
		}
	})
}

// floatPanel is how many activation rows one pass over a thread's weight
// tiles uses (32 rows of 4096 floats = 512 KiB, about L2).
const floatPanel = 32

// matMulFloatTiles computes the 4×4 tiles covering rows [0, Rows/4·4) and
// activations [0, n/4·4).
func matMulFloatTiles(p *Pool, out []float32, w Matrix, x []float32, n int, tile kernel.FTile) {
	rb := w.RowBytes()
	nt := n / 4 * 4
	p.For(w.Rows/4, func(lo, hi int) {
		var t [16]float32
		for i0 := 0; i0 < nt; i0 += floatPanel {
			for rt := lo; rt < hi; rt++ {
				for i := i0; i < min(nt, i0+floatPanel); i += 4 {
					tile(w.Data, rb, 4*rt, x, w.Cols, i, w.Cols, &t)
					for k := range 4 {
						o := (i+k)*w.Rows + 4*rt
						copy(out[o:o+4], t[4*k:4*k+4])
					}
				}
			}
		}
	})
}

// MatMulExact computes the same product as MatMul with the weights
// dequantized to F32 and F32 arithmetic (the reference path for f32ref
// goldens). It is slower: each task dequantizes its rows once.
func MatMulExact(p *Pool, out []float32, w Matrix, x []float32, n int) {
	mustFit("MatMulExact", out, w, x, n)
	if n == 0 || w.Rows == 0 {
		return
	}
	rb := w.RowBytes()
	tiles := (w.Rows + rowTile - 1) / rowTile
	p.For(tiles, func(lo, hi int) {
		fb := getFloats(w.Cols)
		defer floatBufs.Put(fb)
		row := *fb
		for r := lo * rowTile; r < min(hi*rowTile, w.Rows); r++ {
			if err := kernel.Dequantize(w.Type, w.Data[r*rb:(r+1)*rb], row); err != nil {
				panic("compute: MatMulExact: " + err.Error())
			}
			for i := range n {
				out[i*w.Rows+r] = dotF32(row, x[i*w.Cols:(i+1)*w.Cols])
			}
		}
	})
}

var floatBufs = sync.Pool{New: func() any { return new([]float32) }}

func getFloats(n int) *[]float32 {
	b := floatBufs.Get().(*[]float32)
	if cap(*b) < n {
		*b = make([]float32, n)
	}
	*b = (*b)[:n]
	return b
}

// dotF32 is Σ a[i]·b[i] accumulated in float32 in order.
func dotF32(a, b []float32) float32 {
	var s float32
	b = b[:len(a)]
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
