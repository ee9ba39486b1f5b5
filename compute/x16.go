package compute

import (
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
	alloc     sync.Once
	data      []byte
	state     []atomic.Uint32 // tileEmpty → tilePacking → tileReady
	left      atomic.Int64    // tiles not yet ready
	evict     func([]byte)    // called once with the tiles' source bytes when all are copied
	src       []byte
}

// ForDecode returns m marked for the x16 kernels: each full 16-row tile is
// copied into the x16 layout by the first MatMul that reaches it (in the
// first forward pass), and from then on every MatMul of m reads the copy.
// evict (if not nil) is called with all of the tiled rows' bytes after the
// last tile is copied (CopyX16 also calls it every 16 MiB of copied rows),
// so that the owner of a memory-mapped file can drop those pages (resident
// memory stays one copy of the weights); the bytes must stay readable
// afterwards (Row and MatMulExact still read m.Data,
// and rows past the last full tile always do). m is returned unchanged when
// it has no x16 kernel on this CPU (other types, purego builds, CPUs without
// AVX-512 VNNI) or is malformed.
func ForDecode(m Matrix, evict func([]byte)) Matrix {
	if m.Check() != nil || m.Rows < kernel.X16Rows {
		return m
	}
	if _, ok := kernel.X16For(m.Type); !ok {
		return m
	}
	tiles := m.Rows / kernel.X16Rows
	x := &x16{typ: m.Type, cols: m.Cols, tileBytes: kernel.X16TileBytes(m.Type, m.Cols),
		state: make([]atomic.Uint32, tiles), evict: evict, src: m.Data[:tiles*kernel.X16Rows*m.RowBytes()]}
	x.left.Store(int64(tiles))
	m.x = x
	return m
}

// X16Bytes is the heap ForDecode(m) takes once m is used: the bytes of its
// full 16-row tiles, 0 when it would not be repacked.
func X16Bytes(m Matrix) int64 {
	if m.Check() != nil || m.Rows < kernel.X16Rows {
		return 0
	}
	if _, ok := kernel.X16For(m.Type); !ok {
		return 0
	}
	return int64(m.Rows/kernel.X16Rows) * int64(kernel.X16TileBytes(m.Type, m.Cols))
}

// x16Alloc returns n bytes for x's tiles: memory outside the Go heap with
// huge pages where the OS gives them (internal/mmap.Anon), released when x
// is unreachable, or heap memory if mapping fails.
func x16Alloc(x *x16, n int) []byte {
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

// x16Tile returns tile rt, copying it first if no task has: a task that
// finds another one copying it waits (a few microseconds), so every call
// reads the same layout and gives the same bits.
func (m Matrix) x16Tile(rt int) []byte {
	x := m.x
	x.alloc.Do(func() { x.data = x16Alloc(x, len(x.state)*x.tileBytes) })
	tile := x.data[rt*x.tileBytes : (rt+1)*x.tileBytes]
	for {
		switch x.state[rt].Load() {
		case tileReady:
			return tile
		case tileEmpty:
			if !x.state[rt].CompareAndSwap(tileEmpty, tilePacking) {
				continue
			}
			if err := kernel.PackX16(x.typ, x.src, m.RowBytes(), rt*kernel.X16Rows, x.cols, tile); err != nil {
				panic("compute: MatMul: " + err.Error()) // ForDecode checked the shapes
			}
			x.state[rt].Store(tileReady)
			if x.left.Add(-1) == 0 && x.evict != nil {
				x.evict(x.src)
			}
			return tile
		default:
			runtime.Gosched()
		}
	}
}

// x16Task is matMulX16's loop body, pooled so token generation allocates
// nothing per multiplication.
type x16Task struct {
	w     Matrix
	out   []float32
	x     []float32
	n     int
	ap    kernel.XPack
	kern  kernel.X16
	phase int
}

var x16Tasks = sync.Pool{New: func() any { return new(x16Task) }}

func (t *x16Task) Run(lo, hi int) {
	if t.phase == quantizeRows {
		t.ap.PackRows(t.x, lo, hi)
		return
	}
	w := t.w
	for rt := lo; rt < hi; rt++ {
		w.x16Tile(rt) // copied before use (at load, normally: then this only checks)
	}
	tb := w.x.tileBytes
	tiles := w.x.data[lo*tb : hi*tb]
	width := t.ap.Width
	for pn := range t.ap.Panels() {
		o := pn*width*w.Rows + lo*kernel.X16Rows
		t.kern(w.Type, tiles, hi-lo, &t.ap, pn, t.out[o:], w.Rows)
	}
	runtime.KeepAlive(w.x) // the tiles live outside the Go heap while x does
}

// matMulX16 multiplies with the x16 kernels: activations are quantized and
// packed once, each task takes a range of tiles; rows past the last full
// tile use the dot kernels.
func matMulX16(p *Pool, out []float32, w Matrix, x []float32, n int, kern kernel.X16) {
	t := x16Tasks.Get().(*x16Task)
	defer x16Tasks.Put(t)
	if err := t.ap.Reset(w.Type, n, w.Cols); err != nil {
		panic("compute: MatMul: " + err.Error()) // ForDecode checked the type and shape
	}
	t.w, t.out, t.x, t.n, t.kern = w, out, x, n, kern
	t.phase = quantizeRows
	if n == 1 {
		t.Run(0, 1) // a few microseconds: not worth waking a worker
	} else {
		p.ForTask(n, 1, t)
	}
	t.phase = dotRows
	p.ForTask(w.Rows/kernel.X16Rows, grainFor(w.x.tileBytes*t.ap.Panels()), t)
	t.w, t.out, t.x = Matrix{}, nil, nil // keep no caller memory in the pool
	if w.Rows%kernel.X16Rows != 0 {
		matMulDots(p, out, w, x, n, w.Rows/kernel.X16Rows*kernel.X16Rows, w.Rows)
	}
}
