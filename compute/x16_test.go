package compute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestForDecode checks MatMul over x16 tiles against the GGUF layout's
// kernels, for token generation, batched decoding and prompt processing,
// with rows past the last full tile; that a row's result is the same bits
// at every batch size and thread count; and that evict sees the tiled
// rows' bytes once, after the last tile is copied. Column panels of 256
// (x16Panel) must give the same bits as whole tiles.
func TestForDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	p1, p2 := NewPool(1), NewPool(2)
	defer p1.Close()
	defer p2.Close()
	defer func(c int) { x16PanelCols = c }(x16PanelCols)
	x16PanelCols = 256
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q3_K, tensor.Q2_K, tensor.Q5_0, tensor.Q4_1, tensor.Q5_1, tensor.IQ4_NL, tensor.IQ4_XS, tensor.MXFP4} {
		shapes := [][2]int{{16, 64}, {40, 96}, {256, 512}, {48, 800}}
		if dt.BlockSize() == 256 {
			shapes = [][2]int{{16, 256}, {40, 512}, {48, 1280}}
		}
		for _, shape := range shapes {
			rows, cols := shape[0], shape[1]
			t.Run(fmt.Sprintf("%s/%dx%d", dt, rows, cols), func(t *testing.T) {
				plain, _ := randMatrix(t, r, dt, rows, cols)
				var evicted [][]byte
				var mu sync.Mutex // tiles are copied (and evicted) by the pool's threads
				m := ForDecode(plain, func(b []byte) { mu.Lock(); evicted = append(evicted, b); mu.Unlock() })
				if !m.ForDecoding() {
					t.Skip("no x16 kernel on this CPU")
				}
				tb := 0 // a tile is its panels' (256 columns here; an odd one of paired records padded)
				for lo := 0; lo < cols; lo += 256 {
					tb += kernel.X16TileBytes(dt, min(256, cols-lo))
				}
				if got, want := X16Bytes(m), int64(rows/16*tb); got != want {
					t.Errorf("X16Bytes %d, want %d", got, want)
				}
				if got, want := len(m.x.panels), (cols+255)/256; got != want {
					t.Errorf("%d column panels, want %d", got, want)
				}
				x16PanelCols = 1 << 20
				whole := ForDecode(plain, nil)
				x16PanelCols = 256
				x := randNormal(r, 33*cols, 1)
				single := make([]float32, rows)
				MatMul(p2, single, m, x, 1)
				tiled := rows / 16 * 16 * plain.RowBytes()
				if len(evicted) != 1 || len(evicted[0]) != tiled || &evicted[0][0] != &plain.Data[0] {
					t.Fatalf("evict calls %d, want one with the %d tiled bytes", len(evicted), tiled)
				}
				for _, n := range []int{1, 2, 4, 7, 33} {
					got := make([]float32, n*rows)
					want := make([]float32, n*rows)
					MatMul(p2, got, m, x, n)
					MatMul(p2, want, plain, x, n)
					if e := maxRelErr(got, widen(want)); e > 1e-5 {
						t.Errorf("n=%d: x16 vs GGUF layout max relative error %g", n, e)
					}
					one := make([]float32, n*rows)
					MatMul(p1, one, m, x, n)
					MatMul(p1, want, whole, x, n)
					for i := range got {
						if got[i] != one[i] {
							t.Fatalf("n=%d: value %d is %g on 2 threads, %g on 1", n, i, got[i], one[i])
						}
						if got[i] != want[i] {
							t.Fatalf("n=%d: value %d is %g in column panels, %g in whole tiles", n, i, got[i], want[i])
						}
					}
					for i := range rows {
						if got[i] != single[i] {
							t.Fatalf("n=%d: row %d of activation 0 is %g, %g alone", n, i, got[i], single[i])
						}
					}
				}
				if len(evicted) != 1 {
					t.Errorf("evict called %d times after later multiplications", len(evicted))
				}
			})
		}
	}
}

// TestForDecodeConcurrentFirstUse runs the first multiplications of one
// matrix from several goroutines: every tile is copied once and every
// result is the same.
func TestForDecodeConcurrentFirstUse(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	plain, _ := randMatrix(t, r, tensor.Q4_0, 512, 256)
	evicts := 0
	var mu sync.Mutex
	m := ForDecode(plain, func(b []byte) {
		mu.Lock()
		if len(b) == len(plain.Data) {
			evicts++
		}
		mu.Unlock()
	})
	if !m.ForDecoding() {
		t.Skip("no x16 kernel on this CPU")
	}
	x := randNormal(r, 256, 1)
	p := NewPool(2)
	defer p.Close()
	outs := make([][]float32, 6)
	var wg sync.WaitGroup
	for i := range outs {
		outs[i] = make([]float32, 512)
		wg.Go(func() { MatMul(p, outs[i], m, x, 1) })
	}
	wg.Wait()
	for i := range outs {
		for j := range outs[i] {
			if outs[i][j] != outs[0][j] {
				t.Fatalf("goroutine %d row %d: %g, goroutine 0: %g", i, j, outs[i][j], outs[0][j])
			}
		}
	}
	if evicts != 1 {
		t.Errorf("evict called %d times for the whole matrix, want 1", evicts)
	}
}

// TestMatVecX16Allocs: token generation over x16 tiles allocates nothing
// once warm.
func TestMatVecX16Allocs(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	p := NewPool(2)
	defer p.Close()
	arena := NewX16Arena(16 << 20) // float matrices of one panel are tiled only in an arena
	// Q4_0 tiles, one-panel and three-panel float tiles (n=1..3 take the row
	// runs, the three-panel ones adding each panel into the output).
	for _, tc := range []struct {
		dt         tensor.DType
		rows, cols int
		n          int
	}{{tensor.Q4_0, 64, 256, 1}, {tensor.F16, 64, 256, 1}, {tensor.F16, 32, 3 * floatPanelCols, 1}, {tensor.F16, 32, 3 * floatPanelCols, 3}} {
		plain, _ := randMatrix(t, r, tc.dt, tc.rows, tc.cols)
		m := ForDecodeIn(plain, nil, arena)
		if !m.ForDecoding() {
			continue // no x16 kernel on this CPU
		}
		x := randNormal(r, tc.n*tc.cols, 1)
		out := make([]float32, tc.n*tc.rows)
		MatMul(p, out, m, x, tc.n)
		if a := testing.AllocsPerRun(50, func() { MatMul(p, out, m, x, tc.n) }); a > 0 {
			t.Errorf("%s %dx%d, %d rows: %v allocations per multiplication", tc.dt, tc.rows, tc.cols, tc.n, a)
		}
	}
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// TestCopyX16 copies every tile at once (as a loader does) and checks the
// product against a matrix copied lazily, bit for bit.
func TestCopyX16(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	plain, _ := randMatrix(t, r, tensor.Q8_0, 4096, 1024) // 4.25 MiB
	defer func(c int) { evictChunk = c }(evictChunk)
	evictChunk = 1 << 20 // evicted in chunks too
	whole, parts := 0, 0
	var mu sync.Mutex
	eager := ForDecode(plain, func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		if len(b) == len(plain.Data) {
			whole++
		} else {
			parts++
		}
	})
	if !eager.ForDecoding() {
		t.Skip("no x16 kernel on this CPU")
	}
	eager.CopyX16()
	if whole != 1 || parts == 0 {
		t.Fatalf("after CopyX16 the whole matrix was evicted %d times (want 1) and %d chunks (want some)", whole, parts)
	}
	lazy := ForDecode(plain, nil)
	p := NewPool(2)
	defer p.Close()
	x := randNormal(r, 3*plain.Cols, 1)
	a, b := make([]float32, 3*plain.Rows), make([]float32, 3*plain.Rows)
	MatMul(p, a, eager, x, 3)
	MatMul(p, b, lazy, x, 3)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("value %d: %g copied at once, %g copied lazily", i, a[i], b[i])
		}
	}
	Matrix{}.CopyX16() // no tiles: nothing to do
}

// TestX16Arena: matrices placed in one arena sit one after another (each
// on a cache line) and give the same bits as matrices with memory of their
// own; one that does not fit in what is left gets its own memory.
func TestX16Arena(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	// Room for the tiles of the 48-, 16- and 33-row matrices (2304 bytes
	// each), not for the 256 of the 4096-row one.
	a := NewX16Arena(6*2304 + 200*2304)
	if a == nil {
		t.Skip("no lazily committed memory on this OS")
	}
	p := NewPool(2)
	defer p.Close()
	var prev Matrix
	for i, rows := range []int{48, 16, 4096, 33} {
		plain, _ := randMatrix(t, r, tensor.Q4_0, rows, 256)
		own, in := ForDecode(plain, nil), ForDecodeIn(plain, nil, a)
		if !in.ForDecoding() {
			t.Skip("no x16 kernel on this CPU")
		}
		x := randNormal(r, 256, 1)
		want, got := make([]float32, rows), make([]float32, rows)
		MatMul(p, want, own, x, 1)
		MatMul(p, got, in, x, 1)
		for k := range want {
			if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
				t.Fatalf("matrix %d row %d: %g in the arena, %g on its own", i, k, got[k], want[k])
			}
		}
		start := uintptr(unsafe.Pointer(&in.x.data[0]))
		if start%x16Align != 0 {
			t.Errorf("matrix %d starts %d bytes past a cache line", i, start%x16Align)
		}
		if i == 0 {
			prev = in
			continue
		}
		end := uintptr(unsafe.Pointer(&prev.x.data[0])) + uintptr(len(prev.x.data))
		switch i {
		case 1, 3: // right after the last matrix placed in the arena
			if start != (end+x16Align-1)/x16Align*x16Align {
				t.Errorf("matrix %d starts at %#x, the one before in the arena ends at %#x", i, start, end)
			}
		case 2: // too big for what is left: memory of its own
			if base := uintptr(unsafe.Pointer(&a.free[0])); start >= base-6*2304 && start < base+uintptr(len(a.free)) {
				t.Errorf("matrix 2 (%d bytes) was placed in the arena, which had %d left", len(in.x.data), len(a.free))
			}
			continue
		}
		prev = in
	}
}

// TestMatMuls: products that share the input give the same bits as one
// MatMul each, in one loop (x16 matrices of one type and row length) and
// in turn (anything else), for one token, a few and a prompt chunk.
func TestMatMuls(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	p := NewPool(2)
	defer p.Close()
	const cols = 256
	arena := NewX16Arena(16 << 20) // float matrices of one panel are tiled only in an arena
	mk := func(dt tensor.DType, rows int) Matrix {
		plain, _ := randMatrix(t, r, dt, rows, cols)
		return ForDecodeIn(plain, nil, arena)
	}
	cases := map[string][]Matrix{
		"q k v":       {mk(tensor.Q4_0, 128), mk(tensor.Q4_0, 32), mk(tensor.Q4_0, 32)},
		"ragged rows": {mk(tensor.Q8_0, 40), mk(tensor.Q8_0, 16), mk(tensor.Q8_0, 17)},
		"mixed types": {mk(tensor.Q4_K, 64), mk(tensor.Q6_K, 32)},
		"not x16":     {mk(tensor.Q4_0, 64), {Type: tensor.F32, Rows: 8, Cols: cols, Data: make([]byte, 8*cols*4)}},
		"too many":    {mk(tensor.Q4_0, 16), mk(tensor.Q4_0, 16), mk(tensor.Q4_0, 16), mk(tensor.Q4_0, 16), mk(tensor.Q4_0, 16)},
		"one":         {mk(tensor.Q5_K, 48)},
		"float q k v": {mk(tensor.F16, 128), mk(tensor.F16, 32), mk(tensor.F16, 17)},
		"float mixed": {mk(tensor.F16, 32), mk(tensor.F32, 32)},
	}
	if _, fast := kernel.FTileFor(tensor.F16); fast && arena != nil && !cases["float q k v"][0].ForDecoding() {
		t.Fatal("float matrices in the arena have no panel tiles")
	}
	for name, ws := range cases {
		for _, n := range []int{1, 3, 20} {
			x := randNormal(r, n*cols, 1)
			ps := make([]Product, len(ws))
			for i, w := range ws {
				ps[i] = Product{Out: make([]float32, n*w.Rows), W: w}
			}
			MatMuls(p, x, n, ps...)
			for i, w := range ws {
				want := make([]float32, n*w.Rows)
				MatMul(p, want, w, x, n)
				for k := range want {
					if math.Float32bits(ps[i].Out[k]) != math.Float32bits(want[k]) {
						t.Fatalf("%s n=%d: matrix %d out[%d] = %g, MatMul gives %g", name, n, i, k, ps[i].Out[k], want[k])
					}
				}
			}
			// MatMulsApart: an input of its own per matrix.
			xs := make([][]float32, len(ws))
			for i := range ws {
				xs[i] = randNormal(r, n*cols, 1)
			}
			MatMulsApart(p, xs, n, ps...)
			for i, w := range ws {
				want := make([]float32, n*w.Rows)
				MatMul(p, want, w, xs[i], n)
				for k := range want {
					if math.Float32bits(ps[i].Out[k]) != math.Float32bits(want[k]) {
						t.Fatalf("%s n=%d apart: matrix %d out[%d] = %g, MatMul gives %g", name, n, i, k, ps[i].Out[k], want[k])
					}
				}
			}
		}
	}
	for _, name := range []string{"q k v", "float q k v"} {
		q, k := cases[name][0], cases[name][1]
		x := randNormal(r, cols, 1)
		oq, ok := make([]float32, q.Rows), make([]float32, k.Rows)
		if a := testing.AllocsPerRun(50, func() { MatMuls(p, x, 1, Product{oq, q}, Product{ok, k}) }); a > 0 {
			t.Errorf("%s: %v allocations per token", name, a)
		}
		xs := [][]float32{x, randNormal(r, cols, 1)}
		if a := testing.AllocsPerRun(50, func() { MatMulsApart(p, xs, 1, Product{oq, q}, Product{ok, k}) }); a > 0 {
			t.Errorf("%s apart: %v allocations per token", name, a)
		}
	}
}

// TestForDecodeFloat: float matrices get panel tiles
// that give the plain layout's results within rounding, the same bits on
// any thread count, with the rows past the last tile and every batch path
// (dots below 4 activation rows, 4×4 tiles and leftover dots above).
func TestForDecodeFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	p1, p2 := NewPool(1), NewPool(2)
	defer p1.Close()
	defer p2.Close()
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		for _, shape := range [][2]int{{16, 2*floatPanelCols + 32}, {37, 3 * floatPanelCols}, {16, floatPanelCols}, {40, 64}, {16, floatPanelCols + 8}} {
			rows, cols := shape[0], shape[1]
			t.Run(fmt.Sprintf("%s/%dx%d", dt, rows, cols), func(t *testing.T) {
				plain, _ := randMatrix(t, r, dt, rows, cols)
				evicts := 0
				var mu sync.Mutex
				evict := func([]byte) { mu.Lock(); evicts++; mu.Unlock() }
				m := ForDecode(plain, evict)
				_, fast := kernel.FTileFor(dt)
				if !fast || cols%kernel.FTileCols != 0 || cols <= floatPanelCols {
					// One panel is copied only into an arena.
					if m.ForDecoding() {
						t.Fatal("tiled a matrix that should keep its layout")
					}
					if !fast || cols%kernel.FTileCols != 0 {
						if X16Bytes(plain) != 0 {
							t.Fatal("X16Bytes of a matrix that keeps its layout")
						}
						return
					}
					arena := NewX16Arena(int64(len(plain.Data)) + 1<<20)
					if arena == nil {
						return // no lazily committed memory on this OS
					}
					if m = ForDecodeIn(plain, evict, arena); !m.ForDecoding() {
						t.Fatal("a one-panel matrix was not tiled in an arena")
					}
				}
				if !m.ForDecoding() {
					t.Fatal("no panel tiles")
				}
				if got, want := X16Bytes(m), int64(rows/16*16*plain.RowBytes()); got != want {
					t.Errorf("X16Bytes %d, want %d", got, want)
				}
				x := randNormal(r, 9*cols, 1)
				for _, n := range []int{1, 3, 4, 9} {
					got, want, one := make([]float32, n*rows), make([]float32, n*rows), make([]float32, n*rows)
					MatMul(p2, got, m, x, n)
					MatMul(p2, want, plain, x, n)
					MatMul(p1, one, m, x, n)
					if e := maxRelErr(got, widen(want)); e > 1e-5 {
						t.Errorf("n=%d: panels vs plain layout max relative error %g", n, e)
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(one[i]) {
							t.Fatalf("n=%d: value %d is %g on 2 threads, %g on 1", n, i, got[i], one[i])
						}
					}
				}
				if evicts != 1 {
					t.Errorf("evict called %d times, want once", evicts)
				}
			})
		}
	}
}
