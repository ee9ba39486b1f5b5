package compute

import (
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestPrepare checks that MatMul over prepared weights gives bit for bit
// what it gives over the mapped weights (the same GEMM kernel on the same
// packed bytes), for every type with a GEMM kernel on this CPU, with a
// partial last tile and partial last activation panel, and that other
// matrices come back unprepared.
func TestPrepare(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	p := NewPool(2)
	defer p.Close()
	prepared := 0
	for _, dt := range kernel.SupportedTypes() {
		if _, err := kernel.VecDotType(dt); err != nil && dt != tensor.F32 {
			continue
		}
		t.Run(dt.String(), func(t *testing.T) {
			rows, cols := 3*kernel.GemmRows+5, 2*max(dt.BlockSize(), 128)
			m, _ := randMatrix(t, r, dt, rows, cols)
			pm, err := Prepare(m)
			if err != nil {
				t.Fatal(err)
			}
			_, gemm := kernel.GemmFor(dt)
			if pm.Prepared() != gemm {
				t.Fatalf("Prepared() = %v, GEMM kernel available = %v", pm.Prepared(), gemm)
			}
			if !gemm {
				if PreparedBytes(m) != 0 {
					t.Errorf("PreparedBytes = %d without a GEMM kernel", PreparedBytes(m))
				}
				return
			}
			prepared++
			if got := len(pm.pack.data); got != PreparedBytes(m) {
				t.Errorf("packed %d bytes, PreparedBytes says %d", got, PreparedBytes(m))
			}
			lazy := PackOnFirstUse(m)
			for _, n := range []int{gemmMinRows, 17} {
				x := randNormal(r, n*cols, 1)
				want := make([]float32, n*rows)
				got := make([]float32, n*rows+1)
				got[n*rows] = 12345 // guard
				MatMul(p, want, m, x, n)
				lz := make([]float32, n*rows)
				MatMul(p, lz, lazy, x, n)
				for i := range want {
					if lz[i] != want[i] {
						t.Fatalf("n=%d: out[%d] = %g lazily prepared, %g not", n, i, lz[i], want[i])
					}
				}
				for rt := range lazy.pack.state {
					if st := lazy.pack.state[rt].Load(); st != tileReady {
						t.Fatalf("lazy tile %d in state %d after a MatMul", rt, st)
					}
				}
				if !equalBytes(lazy.pack.data, pm.pack.data) {
					t.Fatal("lazily packed tiles differ from Prepare's")
				}
				MatMul(p, got[:n*rows], pm, x, n)
				// Another matrix in between must not disturb the packed tiles.
				o, _ := randMatrix(t, r, dt, kernel.GemmRows, cols)
				MatMul(p, make([]float32, n*kernel.GemmRows), o, x, n)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("n=%d: out[%d] = %g prepared, %g not", n, i, got[i], want[i])
					}
				}
				if got[n*rows] != 12345 {
					t.Fatalf("n=%d: guard overwritten", n)
				}
			}
		})
	}
	t.Logf("%d types prepared", prepared)
}

func TestPrepareRejects(t *testing.T) {
	bad := Matrix{Type: tensor.Q4_0, Rows: 16, Cols: 32, Data: make([]byte, 17)}
	if _, err := Prepare(bad); err == nil {
		t.Error("Prepare of a short matrix: no error")
	}
	// A prepared matrix whose header is changed does not use the tiles.
	m, _ := randMatrix(t, rand.New(rand.NewPCG(5, 6)), tensor.Q4_0, 32, 64)
	pm, err := Prepare(m)
	if err != nil {
		t.Fatal(err)
	}
	pm.Type = tensor.Q8_0
	if _, ok := pm.tile(0); ok {
		t.Error("tile of a retyped matrix was used")
	}
}

func equalBytes(a, b []byte) bool { return string(a) == string(b) }

// TestPackOnFirstUseConcurrent multiplies one lazily prepared matrix from
// several goroutines at once (run with -race): every result is the
// unprepared one.
func TestPackOnFirstUseConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	m, _ := randMatrix(t, r, tensor.Q4_0, 8*kernel.GemmRows, 256)
	if _, ok := kernel.GemmFor(tensor.Q4_0); !ok {
		t.Skip("no Q4_0 GEMM kernel on this CPU")
	}
	lazy := PackOnFirstUse(m)
	const n = 9
	x := randNormal(r, n*m.Cols, 1)
	p := NewPool(2)
	defer p.Close()
	want := make([]float32, n*m.Rows)
	MatMul(p, want, m, x, n)
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			q := NewPool(2)
			defer q.Close()
			got := make([]float32, n*m.Rows)
			MatMul(q, got, lazy, x, n)
			for i := range want {
				if got[i] != want[i] {
					errs <- "mismatch"
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
