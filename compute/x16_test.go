package compute

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestForDecode checks MatMul over x16 tiles against the GGUF layout's
// kernels, for token generation, batched decoding and prompt processing,
// with rows past the last full tile; that a row's result is the same bits
// at every batch size and thread count; and that evict sees the tiled
// rows' bytes once, after the last tile is copied.
func TestForDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	p1, p2 := NewPool(1), NewPool(2)
	defer p1.Close()
	defer p2.Close()
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
		shapes := [][2]int{{16, 64}, {40, 96}, {256, 512}}
		if dt.BlockSize() == 256 {
			shapes = [][2]int{{16, 256}, {40, 512}}
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
				if got, want := X16Bytes(m), int64(rows/16*kernel.X16TileBytes(dt, cols)); got != want {
					t.Errorf("X16Bytes %d, want %d", got, want)
				}
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
					for i := range got {
						if got[i] != one[i] {
							t.Fatalf("n=%d: value %d is %g on 2 threads, %g on 1", n, i, got[i], one[i])
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
	plain, _ := randMatrix(t, r, tensor.Q4_0, 64, 256)
	m := ForDecode(plain, nil)
	if !m.ForDecoding() {
		t.Skip("no x16 kernel on this CPU")
	}
	p := NewPool(2)
	defer p.Close()
	x := randNormal(r, 256, 1)
	out := make([]float32, 64)
	MatMul(p, out, m, x, 1)
	if a := testing.AllocsPerRun(50, func() { MatMul(p, out, m, x, 1) }); a > 0 {
		t.Errorf("%v allocations per token", a)
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
