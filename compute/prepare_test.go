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
			for _, n := range []int{gemmMinRows, 17} {
				x := randNormal(r, n*cols, 1)
				want := make([]float32, n*rows)
				got := make([]float32, n*rows+1)
				got[n*rows] = 12345 // guard
				MatMul(p, want, m, x, n)
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
