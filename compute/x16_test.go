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
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q6_K} {
		shapes := [][2]int{{16, 64}, {40, 96}, {256, 512}}
		if dt.BlockSize() == 256 {
			shapes = [][2]int{{16, 256}, {40, 512}}
		}
		for _, shape := range shapes {
			rows, cols := shape[0], shape[1]
			t.Run(fmt.Sprintf("%s/%dx%d", dt, rows, cols), func(t *testing.T) {
				plain, _ := randMatrix(t, r, dt, rows, cols)
				var evicted [][]byte
				m := ForDecode(plain, func(b []byte) { evicted = append(evicted, b) })
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
				if n := len(evicted); n != rows/16+1 || len(evicted[n-1]) != tiled || &evicted[n-1][0] != &plain.Data[0] {
					t.Fatalf("evict calls %d, want one per tile then one with the %d tiled bytes", n, tiled)
				}
				for _, e := range evicted[:len(evicted)-1] {
					if len(e) != 16*plain.RowBytes() {
						t.Fatalf("a tile's eviction covers %d bytes, want %d", len(e), 16*plain.RowBytes())
					}
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
				if len(evicted) != rows/16+1 {
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
