package compute

import (
	"sync"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// rowTile is how many weight rows one task takes: the rows' blocks are
// reused across all n activation rows while they sit in L1/L2.
const rowTile = 16

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
		if floatTiles(w) {
			matMulFloatX16(p, x, n, Product{Out: out, W: w})
		} else {
			matMulFloat(p, out, w, x, n)
		}
		return
	}
	if kern, ok := x16Kernel(w); ok {
		matMulX16(p, x, n, kern, Product{Out: out, W: w})
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

// floatTiles reports whether w is a float matrix with panel tiles.
func floatTiles(w Matrix) bool {
	return w.x != nil && w.x.float && w.x.typ == w.Type && w.x.cols == w.Cols
}

// streamRows is the most activation rows for which a multiplication is
// bound by streaming the weights (token generation, small batches of
// decoding sequences) and takes Pool.ForStream's chunks.
const streamRows = 4

// x16Kernel returns the x16 kernel for w if w has x16 tiles.
func x16Kernel(w Matrix) (kernel.X16, bool) {
	if w.x == nil || w.x.typ != w.Type || w.x.cols != w.Cols {
		return nil, false
	}
	return kernel.X16For(w.Type)
}

// Product is one matrix of a MatMuls call and the rows its result goes
// to.
type Product struct {
	Out []float32
	W   Matrix
}

// MatMuls sets each product's Out to x·Wᵀ, as MatMul(p, Out, W, x, n) does
// (the same bits), for matrices that share the input x (a layer's Q, K and
// V; gate and up). When they all have x16 tiles of one type and row length
// and there are at most four, x is quantized once and one parallel loop
// runs over all of their tiles: one hand-off instead of one per matrix,
// and no matrix too small to keep both threads streaming on its own (the
// 1B model's K and V, 0.6 MB each in Q4_0, ran at half the speed of its
// feed-forward matrices). Float matrices with panel tiles of one type and
// row length share one loop the same way (1B F16: 1.01–1.02× per decode
// step). Otherwise it is MatMul on each in turn.
func MatMuls(p *Pool, x []float32, n int, ps ...Product) {
	for _, pr := range ps {
		mustFit("MatMuls", pr.Out, pr.W, x, n)
	}
	if n == 0 || len(ps) == 0 {
		return
	}
	if len(ps) <= maxShared && floatTiles(ps[0].W) {
		same := true
		for _, pr := range ps[1:] {
			same = same && floatTiles(pr.W) && pr.W.Type == ps[0].W.Type && pr.W.Cols == ps[0].W.Cols
		}
		if same {
			matMulFloatX16(p, x, n, ps...)
			return
		}
	}
	kern, ok := sharedX16(ps)
	if !ok {
		for _, pr := range ps {
			MatMul(p, pr.Out, pr.W, x, n)
		}
		return
	}
	matMulX16(p, x, n, kern, ps...)
}

// sharedX16 returns the x16 kernel of ps's matrices when one loop can take
// them all: x16 tiles of one type and row length, at most maxShared.
func sharedX16(ps []Product) (kernel.X16, bool) {
	kern, ok := x16Kernel(ps[0].W)
	for _, pr := range ps[1:] {
		_, x16 := x16Kernel(pr.W)
		ok = ok && x16 && pr.W.Type == ps[0].W.Type && pr.W.Cols == ps[0].W.Cols
	}
	return kern, ok && len(ps) <= maxShared
}

// MatMulsApart sets each product's Out to xs[i]·Wᵀ, as MatMul(p, Out, W,
// xs[i], n) does (the same bits), for matrices that each have their own
// input (the down projections of a token's experts). When they all have
// x16 tiles of one type and row length and there are at most four, one
// parallel loop runs over all of their tiles, as MatMuls's does.
// Otherwise it is MatMul on each in turn.
func MatMulsApart(p *Pool, xs [][]float32, n int, ps ...Product) {
	if len(xs) != len(ps) {
		panic("compute: MatMulsApart: an input per product")
	}
	for i, pr := range ps {
		mustFit("MatMulsApart", pr.Out, pr.W, xs[i], n)
	}
	if n == 0 || len(ps) == 0 {
		return
	}
	kern, ok := sharedX16(ps)
	if !ok {
		for i, pr := range ps {
			MatMul(p, pr.Out, pr.W, xs[i], n)
		}
		return
	}
	matMulX16Apart(p, xs, n, kern, ps...)
}

// matMulDots computes output columns [rlo, rhi) with the dot kernels.
func matMulDots(p *Pool, out []float32, w Matrix, x []float32, n, rlo, rhi int) {
	vt, err := kernel.VecDotType(w.Type)
	if err != nil {
		panic("compute: MatMul: " + err.Error())
	}
	dot, err := kernel.RowsDotFor(w.Type)
	if err != nil {
		panic("compute: MatMul: " + err.Error())
	}
	multi, err := kernel.RowsDotMultiFor(w.Type)
	if err != nil {
		panic("compute: MatMul: " + err.Error())
	}
	t := dotTasks.Get().(*dotTask)
	defer dotTasks.Put(t)
	xrb := w.Cols / vt.BlockSize() * vt.TypeSize()
	t.xq = grow(t.xq, n*xrb)
	*t = dotTask{w: w, out: out, x: x, n: n, rlo: rlo, rhi: rhi, vt: vt, dot: dot, multi: multi, xrb: xrb, xq: t.xq}
	// Quantize the activations (one row, in token generation, stays on
	// this goroutine: waking a worker for a few microseconds of work costs
	// more than it saves).
	t.phase = quantizeRows
	p.ForTask(n, 1, t)
	t.phase = dotRows
	p.ForTask((rhi-rlo+rowTile-1)/rowTile, grainFor(rowTile*w.RowBytes()*max(n, 1)), t)
	t.out, t.x, t.w.Data = nil, nil, nil // keep no caller memory in the pool
}

// dotTask is matMulDots's loop body, pooled so token generation allocates
// nothing per matrix multiplication.
type dotTask struct {
	w        Matrix
	out, x   []float32
	xq       []byte
	n        int
	rlo, rhi int
	xrb      int
	vt       tensor.DType
	dot      kernel.RowsDot
	multi    kernel.RowsDotMulti // n > 1: each weight block unpacked once for all rows
	phase    int
}

const (
	quantizeRows = iota
	dotRows
)

var dotTasks = sync.Pool{New: func() any { return new(dotTask) }}

func (t *dotTask) Run(lo, hi int) {
	w := t.w
	switch t.phase {
	case quantizeRows:
		for i := lo; i < hi; i++ {
			if err := kernel.Quantize(t.vt, t.x[i*w.Cols:(i+1)*w.Cols], t.xq[i*t.xrb:(i+1)*t.xrb]); err != nil {
				panic("compute: MatMul: " + err.Error())
			}
		}
	case dotRows:
		rb := w.RowBytes()
		r0, r1 := t.rlo+lo*rowTile, min(t.rlo+hi*rowTile, t.rhi)
		if t.n > 1 {
			t.multi(w.Cols, w.Data[r0*rb:r1*rb], rb, r1-r0, t.xq, t.xrb, t.n, t.out[r0:], w.Rows)
			return
		}
		for i := range t.n {
			t.dot(w.Cols, w.Data[r0*rb:r1*rb], rb, t.xq[i*t.xrb:(i+1)*t.xrb], t.out[i*w.Rows+r0:i*w.Rows+r1])
		}
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// minChunkBytes is the least weight traffic (bytes × activation rows) a
// chunk of a multiplication is worth handing to another thread: below it
// (about a microsecond of work) the hand-off costs more than it saves, and
// a tiny model's matrices run on the caller alone. Results do not depend on
// it (each row is computed the same way by whichever thread takes it).
const minChunkBytes = 64 << 10

// grainFor is the tasks per chunk for tasks of taskBytes each.
func grainFor(taskBytes int) int { return max(1, minChunkBytes/max(taskBytes, 1)) }

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
		var pt kernel.WPack // a prepared tile (never put in the pool)
		for rt := lo; rt < hi; rt++ {
			wt := wp
			if pt, _ = w.tile(rt); pt.Data != nil {
				wt = &pt
			} else if err := wp.Pack(w.Type, w.Data, rb, rt*tr, w.Cols); err != nil {
				panic("compute: MatMul: " + err.Error())
			}
			for pn := range ap.Panels() {
				gemm(wt, ap, pn, &t)
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
	rlo, ilo := 0, 0 // rows and activations the tiles leave to the dots
	if tile, ok := kernel.FTileFor(w.Type); ok && n >= 4 && w.Rows >= 4 && w.Cols%kernel.FTileCols == 0 {
		matMulFloatTiles(p, out, w, x, n, tile)
		rlo, ilo = w.Rows/4*4, n/4*4
	}
	// Dots for the rows below rlo with activations from ilo, and for all
	// activations of the rows from rlo.
	t := floatTasks.Get().(*floatTask)
	*t = floatTask{w: w, out: out, x: x, n: n, rlo: rlo, ilo: ilo, dot: dot}
	p.ForTask((w.Rows+rowTile-1)/rowTile, grainFor(rowTile*w.RowBytes()*max(n, 1)), t)
	*t = floatTask{}
	floatTasks.Put(t)
}

// floatTask is matMulFloat's dot loop, pooled so token generation with
// float weights allocates nothing.
type floatTask struct {
	w        Matrix
	out, x   []float32
	n        int
	rlo, ilo int
	dot      kernel.FDot
}

var floatTasks = sync.Pool{New: func() any { return new(floatTask) }}

func (t *floatTask) Run(lo, hi int) {
	w := t.w
	rb := w.RowBytes()
	for r := lo * rowTile; r < min(hi*rowTile, w.Rows); r++ {
		row := w.Data[r*rb : (r+1)*rb]
		first := t.ilo
		if r >= t.rlo {
			first = 0
		}
		for i := first; i < t.n; i++ {
			t.out[i*w.Rows+r] = t.dot(row, t.x[i*w.Cols:(i+1)*w.Cols])
		}
	}
}

// floatPanel is how many activation rows one pass over a thread's weight
// tiles uses (32 rows of 4096 floats = 512 KiB, about L2).
const floatPanel = 32

// matMulFloatTiles computes the 4×4 tiles covering rows [0, Rows/4·4) and
// activations [0, n/4·4).
func matMulFloatTiles(p *Pool, out []float32, w Matrix, x []float32, n int, tile kernel.FTile) {
	t := floatTileTasks.Get().(*floatTileTask)
	*t = floatTileTask{w: w, out: out, x: x, nt: n / 4 * 4, tile: tile}
	p.ForTask(w.Rows/4, 1, t)
	*t = floatTileTask{}
	floatTileTasks.Put(t)
}

// floatTileTask is matMulFloatTiles' loop, pooled with its scratch tile so
// a batch with float weights allocates nothing (a closure and a tile
// passed to the kernel through a func value would escape every call).
type floatTileTask struct {
	w      Matrix
	out, x []float32
	nt     int
	tile   kernel.FTile
}

var floatTileTasks = sync.Pool{New: func() any { return new(floatTileTask) }}

// tileScratch is one Run's 4×4 output tile (Runs of one loop go on
// several workers at once, so each takes its own).
type tileScratch struct{ t [16]float32 }

var tileScratches = sync.Pool{New: func() any { return new(tileScratch) }}

func (k *floatTileTask) Run(lo, hi int) {
	w := k.w
	rb := w.RowBytes()
	sc := tileScratches.Get().(*tileScratch)
	defer tileScratches.Put(sc)
	t := &sc.t
	for i0 := 0; i0 < k.nt; i0 += floatPanel {
		for rt := lo; rt < hi; rt++ {
			for i := i0; i < min(k.nt, i0+floatPanel); i += 4 {
				k.tile(w.Data, rb, 4*rt, k.x, w.Cols, i, w.Cols, t)
				for c := range 4 {
					o := (i+c)*w.Rows + 4*rt
					copy(k.out[o:o+4], t[4*c:4*c+4])
				}
			}
		}
	}
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
