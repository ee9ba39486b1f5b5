package compute

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/glassbox-ai/glassbox/internal/mmap"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// x16 is a matrix's full 16-row tiles rearranged into the kernel's x16
// layout (kernel/x16.go) on first use: the same bytes as the GGUF rows, so
// the copy replaces the mapped weights (evict drops their pages as tiles
// are copied) rather than adding to them. One tile serves token
// generation, batched decoding and prompt processing, and a row's result
// is the same bits at every batch size.
type x16 struct {
	typ       tensor.DType
	cols      int
	tileBytes int
	float     bool // float panels (x16float.go), not the kernel's layout
	alloc     sync.Once
	data      []byte
	state     []atomic.Uint32 // tileEmpty → tilePacking → tileReady
	left      atomic.Int64    // tiles not yet ready
	evict     func([]byte)    // called once with the tiles' source bytes when all are copied
	src       []byte
	arena     *X16Arena // where the tiles are placed (nil: a mapping of their own)
	panels    []x16Panel
}

// x16Panel is one column panel of a matrix's x16 tiles: every tile's
// columns cols.Lo..cols.Hi−1, tile after tile, from off in the tiles'
// memory. A quantized matrix wider than its panels (x16PanelWidth) is
// stored panel after panel: a thread's range of tiles is then a run through the first panel,
// then one through the next, and so on, each against a slice of the
// activation records small enough to stay in L1 (2.5 KiB for 2048 Q4_0
// columns). Whole tiles of the 1B model's down matrices (8192 columns,
// 73.7 KB a Q4_0 tile, 10 KB of records) streamed at 0.80× the speed of its
// 2048-column gate matrices; their records left L1 between one tile and
// the next. The kernels carry each row's sum from panel to panel through
// the output (kernel.X16Cols), so the bits are those of whole tiles. Float
// matrices are stored the same way in panels of floatPanelCols
// (x16float.go): a panel's tiles are then simply its 16·tiles rows.
type x16Panel struct {
	cols      kernel.X16Cols
	off       int // where the panel's first tile starts
	tileBytes int // bytes of one tile's columns
}

// x16PanelCols is the widest column panel of a quantized matrix (a
// multiple of 256, every type's record; a variable for the tests).
var x16PanelCols = 2048

// x16PanelWidth is the column panel width of x's tiles: Q8_0's rows are
// the widest per column (a 2048-column panel of 16 rows is 34.8 KB, the
// others' 18.4–26.9 KB), and 1024-column panels made the 1B Q8_0 decode
// step 1.02–1.04× faster (four A/Bs, the model loaded twice in both
// orders; prefill 0.98–1.01×; 1536 columns, which split 8192 unevenly,
// were 0.98×).
func x16PanelWidth(x *x16) int {
	switch {
	case x.float:
		return floatPanelCols
	case x.typ == tensor.Q8_0:
		return min(x16PanelCols, 1024)
	}
	return x16PanelCols
}

// x16Panels returns the column panels of x's tiles.
func x16Panels(x *x16, tiles int) []x16Panel {
	width := x16PanelWidth(x)
	var ps []x16Panel
	off := 0
	for lo := 0; lo < x.cols; lo += width {
		hi := min(x.cols, lo+width)
		tb := kernel.X16TileBytes(x.typ, hi-lo)
		if x.float {
			tb = kernel.X16Rows * (hi - lo) * x.typ.TypeSize()
		}
		ps = append(ps, x16Panel{cols: kernel.X16Cols{Lo: lo, Hi: hi, Add: lo > 0}, off: off, tileBytes: tb})
		off += tiles * tb
	}
	return ps
}

// X16Arena is one reservation of memory for the x16 tiles of many matrices
// (a model's), placed one after another in the order they are first
// copied. A mapping per matrix leaves each one's unaligned ends, and all
// of a matrix smaller than 2 MiB, in 4 KiB pages (a quarter of a 1B
// model's tiles); in one huge-page-aligned reservation every whole 2 MiB is
// a huge page, and a layer's matrices, copied in the order they run, sit
// next to each other. Only the bytes handed out are committed. An arena is
// released when it and every matrix placed in it are unreachable.
type X16Arena struct {
	mu   sync.Mutex
	free []byte
}

// x16Align is where each matrix's tiles start in an arena (a cache line).
const x16Align = 64

// NewX16Arena reserves size bytes (an upper bound of the tiles to come: a
// reservation commits no memory until it is written). It returns nil where
// the OS cannot reserve lazily committed memory (matrices then get their
// own memory, as with a nil arena).
func NewX16Arena(size int64) *X16Arena {
	if size <= 0 || size > math.MaxInt {
		return nil
	}
	b, release, err := mmap.Reserve(int(size))
	if err != nil {
		return nil
	}
	a := &X16Arena{free: b}
	runtime.AddCleanup(a, func(release func() error) { _ = release() }, release)
	return a
}

// take returns n bytes of the arena, or nil when it has less left.
func (a *X16Arena) take(n int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n > len(a.free) {
		return nil
	}
	b := a.free[:n:n]
	a.free = a.free[min(len(a.free), (n+x16Align-1)/x16Align*x16Align):]
	return b
}

// ForDecode returns m marked for the x16 kernels: each full 16-row tile is
// copied into the x16 layout by the first MatMul that reaches it (in the
// first forward pass), and from then on every MatMul of m reads the copy.
// evict (if not nil) is called with all of the tiled rows' bytes after the
// last tile is copied (CopyX16 also calls it every 16 MiB of copied rows),
// so that the owner of a memory-mapped file can drop those pages (resident
// memory stays one copy of the weights); the bytes must stay readable
// afterwards (Row and MatMulExact still read m.Data,
// and rows past the last full tile always do). Float matrices get panel
// tiles (x16float.go) where the CPU has the float tile kernels; those of
// at most one panel only in an arena (ForDecodeIn). m is returned unchanged when it has no x16 kernel on this CPU
// (other types, purego builds, CPUs without AVX-512 VNNI) or is malformed.
func ForDecode(m Matrix, evict func([]byte)) Matrix {
	return ForDecodeIn(m, evict, nil)
}

// ForDecodeIn is ForDecode with the tiles placed in arena (if not nil and
// it has room; otherwise in memory of their own).
func ForDecodeIn(m Matrix, evict func([]byte), arena *X16Arena) Matrix {
	tb := x16TileBytes(m)
	if tb == 0 || floatX16(m) && m.Cols <= floatPanelCols && arena == nil {
		// A float matrix of one panel gains from a copy only in an arena
		// (x16float.go); alone, its own mapping would add page-rounding to
		// a small model's memory for nothing.
		return m
	}
	tiles := m.Rows / kernel.X16Rows
	x := &x16{typ: m.Type, cols: m.Cols, tileBytes: tb, float: floatX16(m),
		state: make([]atomic.Uint32, tiles), evict: evict, src: m.Data[:tiles*kernel.X16Rows*m.RowBytes()], arena: arena}
	x.left.Store(int64(tiles))
	x.panels = x16Panels(x, tiles)
	m.x = x
	return m
}

// X16Bytes is the heap ForDecode(m) takes once m is used: the bytes of its
// full 16-row tiles, 0 when it would not be repacked.
func X16Bytes(m Matrix) int64 {
	return int64(m.Rows/kernel.X16Rows) * int64(x16TileBytes(m))
}

// x16TileBytes is the bytes of one of m's x16 tiles, 0 when m would not
// be repacked: quantized types with an x16 kernel on this CPU, and float
// matrices whose rows the float tile kernels take (x16float.go).
func x16TileBytes(m Matrix) int {
	if m.Check() != nil || m.Rows < kernel.X16Rows {
		return 0
	}
	if floatX16(m) {
		return kernel.X16Rows * m.RowBytes()
	}
	if _, ok := kernel.X16For(m.Type); !ok {
		return 0
	}
	// The sum of its column panels' (each may end with a padded record).
	n := 0
	for _, p := range x16Panels(&x16{typ: m.Type, cols: m.Cols}, 0) {
		n += p.tileBytes
	}
	return n
}

// x16Alloc returns n bytes for x's tiles: from x's arena if it has room
// (x keeps the arena alive), else memory outside the Go heap with huge
// pages where the OS gives them (internal/mmap.Anon), released when x is
// unreachable, or heap memory if mapping fails.
func x16Alloc(x *x16, n int) []byte {
	if x.arena != nil {
		if b := x.arena.take(n); b != nil {
			return b
		}
	}
	b, release, err := mmap.Anon(n)
	if err != nil {
		return make([]byte, n)
	}
	// Every reader of the tiles holds the matrix (and so x) while it reads.
	runtime.AddCleanup(x, func(release func() error) { _ = release() }, release)
	return b
}

// CopyX16 copies every x16 tile of m now, on up to GOMAXPROCS goroutines,
// instead of in the first multiplication: a loader calls it so that the
// copy is timed as loading, not as the first prompt. It does nothing for a
// matrix without x16 tiles; tiles already copied are skipped.
func (m Matrix) CopyX16() {
	if m.x == nil {
		return
	}
	x := m.x
	tiles := len(x.state)
	workers := max(1, min(runtime.GOMAXPROCS(0), tiles/64))
	srcTile := len(x.src) / tiles
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			lo, hi := w*tiles/workers, (w+1)*tiles/workers
			done := lo // tiles below done have had their source evicted
			for rt := lo; rt < hi; rt++ {
				m.x16Tile(rt)
				// Drop the copied source every evictChunk bytes, so that the
				// copy and the mapping never both hold a whole matrix; per
				// tile would be thousands of madvise calls (TLB shootdowns)
				// and split the page cache's huge pages.
				if x.evict != nil && (rt+1-done)*srcTile >= evictChunk {
					x.evict(x.src[done*srcTile : (rt+1)*srcTile])
					done = rt + 1
				}
			}
		})
	}
	wg.Wait()
}

// evictChunk is how much copied source CopyX16 drops at a time (a
// variable for tests).
var evictChunk = 16 << 20

// ForDecoding reports whether m uses the x16 kernels.
func (m Matrix) ForDecoding() bool { return m.x != nil }

// x16Tile copies tile rt if no task has: a task that finds another one
// copying it waits (a few microseconds), so every call reads the same
// layout and gives the same bits.
func (m Matrix) x16Tile(rt int) {
	x := m.x
	x.alloc.Do(func() { x.data = x16Alloc(x, len(x.state)*x.tileBytes) })
	for {
		switch x.state[rt].Load() {
		case tileReady:
			return
		case tileEmpty:
			if !x.state[rt].CompareAndSwap(tileEmpty, tilePacking) {
				continue
			}
			for _, p := range x.panels {
				dst := x.data[p.off+rt*p.tileBytes : p.off+(rt+1)*p.tileBytes]
				if x.float {
					packFloatPanel(x.src, m.RowBytes(), m.Type.TypeSize(), rt*kernel.X16Rows, p.cols, dst)
					continue
				}
				src := x.src[p.cols.Lo/m.Type.BlockSize()*m.Type.TypeSize():] // the panel's first column
				if err := kernel.PackX16(x.typ, src, m.RowBytes(), rt*kernel.X16Rows, p.cols.Hi-p.cols.Lo, dst); err != nil {
					panic("compute: MatMul: " + err.Error()) // ForDecode checked the shapes
				}
			}
			x.state[rt].Store(tileReady)
			if x.left.Add(-1) == 0 && x.evict != nil {
				x.evict(x.src)
			}
			return
		default:
			runtime.Gosched()
		}
	}
}

// x16Copied makes sure tiles lo..hi-1 are copied (at load, normally: then
// this only checks), copying those no task has yet.
func (m Matrix) x16Copied(lo, hi int) {
	for rt := lo; rt < hi; rt++ {
		m.x16Tile(rt)
	}
}

// tiles returns tiles lo..hi-1 of column panel p (copied: x16Copied).
func (x *x16) tiles(p, lo, hi int) []byte {
	cp := x.panels[p]
	return x.data[cp.off+lo*cp.tileBytes : cp.off+hi*cp.tileBytes]
}

// x16Task is matMulX16's loop body, pooled so token generation allocates
// nothing per multiplication. Its loop runs over the tiles of up to
// maxShared matrices that share the input, one after another.
type x16Task struct {
	tileLoop
	x     []float32
	n     int
	ap    kernel.XPack
	kern  kernel.X16
	phase int
	// apart: matrix i multiplies its own input xs[i], packed in aps[i]
	// (MatMulsApart), rather than x.
	apart bool
	xs    [maxShared][]float32
	aps   [maxShared]kernel.XPack
}

// maxShared is the most matrices one MatMuls loop takes (a layer's Q, K
// and V; gate and up).
const maxShared = 4

// tileLoop is a parallel loop over the tiles of up to maxShared matrices
// that share an input, one matrix after another (x16Task, floatX16Task).
type tileLoop struct {
	ws    [maxShared]Matrix
	outs  [maxShared][]float32
	first [maxShared + 1]int // matrix i's tiles are loop indices first[i]..first[i+1]-1
	count int
}

// set makes the loop run over ps's full tiles.
func (l *tileLoop) set(ps []Product) {
	l.count = len(ps)
	for i, pr := range ps {
		l.ws[i], l.outs[i] = pr.W, pr.Out
		l.first[i+1] = l.first[i] + pr.W.Rows/kernel.X16Rows
	}
}

// total is the loop's length.
func (l *tileLoop) total() int { return l.first[l.count] }

// part returns the tiles lo'..hi'-1 of matrix i that loop indices lo..hi-1
// cover (empty when lo' >= hi').
func (l *tileLoop) part(i, lo, hi int) (int, int) {
	return max(lo, l.first[i]) - l.first[i], min(hi, l.first[i+1]) - l.first[i]
}

// spanner multiplies tiles lo..hi-1 of w, the loop's matrix i, into out
// (a tileLoop's body).
type spanner interface {
	span(i int, w Matrix, out []float32, lo, hi int)
}

// run calls s.span on each matrix's part of loop indices lo..hi-1.
func (l *tileLoop) run(s spanner, lo, hi int) {
	for i := range l.count {
		if a, b := l.part(i, lo, hi); a < b {
			s.span(i, l.ws[i], l.outs[i], a, b)
		}
	}
}

// clear drops the matrices and outputs (a pooled task keeps no caller
// memory alive).
func (l *tileLoop) clear() { *l = tileLoop{} }

var x16Tasks = sync.Pool{New: func() any { return new(x16Task) }}

func (t *x16Task) Run(lo, hi int) {
	if t.phase == quantizeRows {
		if t.apart {
			for i := range t.count {
				t.aps[i].PackRows(t.xs[i], lo, hi)
			}
			return
		}
		t.ap.PackRows(t.x, lo, hi)
		return
	}
	t.run(t, lo, hi)
}

// span multiplies tiles lo..hi-1 of w, matrix i, into out.
func (t *x16Task) span(i int, w Matrix, out []float32, lo, hi int) {
	w.x16Copied(lo, hi)
	ap := &t.ap
	if t.apart {
		ap = &t.aps[i]
	}
	width := ap.Width
	for pn := range ap.Panels() {
		o := pn*width*w.Rows + lo*kernel.X16Rows
		for p, cp := range w.x.panels {
			t.kern(w.Type, w.x.tiles(p, lo, hi), hi-lo, ap, pn, out[o:], w.Rows, cp.cols)
		}
	}
	runtime.KeepAlive(w.x) // the tiles live outside the Go heap while x does
}

// matMulX16 multiplies with the x16 kernels: activations are quantized and
// packed once, each task takes a range of tiles; rows past the last full
// tile use the dot kernels. ps all have x16 tiles of one type and row
// length (1 ≤ len(ps) ≤ maxShared).
func matMulX16(p *Pool, x []float32, n int, kern kernel.X16, ps ...Product) {
	w0 := ps[0].W
	t := x16Tasks.Get().(*x16Task)
	defer x16Tasks.Put(t)
	if err := t.ap.Reset(w0.Type, n, w0.Cols); err != nil {
		panic("compute: MatMul: " + err.Error()) // ForDecode checked the type and shape
	}
	t.set(ps)
	t.x, t.n, t.kern = x, n, kern
	t.phase = quantizeRows
	if n == 1 {
		t.Run(0, 1) // a few microseconds: not worth waking a worker
	} else {
		p.ForTask(n, 1, t)
	}
	t.phase = dotRows
	if n <= streamRows {
		p.ForStream(t.total(), grainFor(w0.x.tileBytes*t.ap.Panels()), t)
	} else {
		p.ForTask(t.total(), grainFor(w0.x.tileBytes*t.ap.Panels()), t)
	}
	t.clear()
	t.x = nil // keep no caller memory in the pool
	for _, pr := range ps {
		if w := pr.W; w.Rows%kernel.X16Rows != 0 {
			matMulDots(p, pr.Out, w, x, n, w.Rows/kernel.X16Rows*kernel.X16Rows, w.Rows)
		}
	}
}

// matMulX16Apart is matMulX16 with an input per matrix: xs[i] for ps[i].
func matMulX16Apart(p *Pool, xs [][]float32, n int, kern kernel.X16, ps ...Product) {
	w0 := ps[0].W
	t := x16Tasks.Get().(*x16Task)
	defer x16Tasks.Put(t)
	for i := range ps {
		if err := t.aps[i].Reset(w0.Type, n, w0.Cols); err != nil {
			panic("compute: MatMul: " + err.Error()) // ForDecode checked the type and shape
		}
		t.xs[i] = xs[i]
	}
	t.set(ps)
	t.n, t.kern, t.apart = n, kern, true
	t.phase = quantizeRows
	if n == 1 {
		t.Run(0, 1)
	} else {
		p.ForTask(n, 1, t)
	}
	t.phase = dotRows
	if n <= streamRows {
		p.ForStream(t.total(), grainFor(w0.x.tileBytes*t.aps[0].Panels()), t)
	} else {
		p.ForTask(t.total(), grainFor(w0.x.tileBytes*t.aps[0].Panels()), t)
	}
	t.clear()
	t.apart, t.xs = false, [maxShared][]float32{} // keep no caller memory in the pool
	for i, pr := range ps {
		if w := pr.W; w.Rows%kernel.X16Rows != 0 {
			matMulDots(p, pr.Out, w, xs[i], n, w.Rows/kernel.X16Rows*kernel.X16Rows, w.Rows)
		}
	}
}
