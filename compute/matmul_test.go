package compute

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

func randNormal(r *rand.Rand, n int, sd float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * sd)
	}
	return x
}

func randMatrix(t testing.TB, r *rand.Rand, dt tensor.DType, rows, cols int) (Matrix, []float32) {
	w := randNormal(r, rows*cols, 0.1)
	nb, err := dt.RowBytes(int64(rows * cols))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, nb)
	if err := kernel.Quantize(dt, w, b); err != nil {
		t.Fatal(err)
	}
	if err := kernel.Dequantize(dt, b, w); err != nil {
		t.Fatal(err)
	}
	m, err := NewMatrix(dt, rows, cols, b)
	if err != nil {
		t.Fatal(err)
	}
	return m, w
}

// naive is out[i][r] = Σ x[i][c]·w[r][c] in float64.
func naive(w []float32, rows, cols int, x []float32, n int) []float64 {
	out := make([]float64, n*rows)
	for i := range n {
		for r := range rows {
			var s float64
			for c := range cols {
				s += float64(x[i*cols+c]) * float64(w[r*cols+c])
			}
			out[i*rows+r] = s
		}
	}
	return out
}

func maxRelErr(got []float32, want []float64) float64 {
	var num, den float64
	for i := range want {
		num = max(num, math.Abs(float64(got[i])-want[i]))
		den = max(den, math.Abs(want[i]))
	}
	return num / den
}

func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	p1, p3 := NewPool(1), NewPool(3)
	defer p1.Close()
	defer p3.Close()
	for _, dt := range kernel.SupportedTypes() {
		if _, err := kernel.VecDotType(dt); err != nil {
			continue // activation-only formats (Q8_1, Q8_K)
		}
		t.Run(dt.String(), func(t *testing.T) {
			rows, cols := 37, 2*dt.BlockSize()
			if dt.BlockSize() == 1 {
				cols = 67
			}
			m, wf := randMatrix(t, r, dt, rows, cols)
			for _, n := range []int{1, 5} {
				x := randNormal(r, n*cols, 1)
				want := naive(wf, rows, cols, x, n)
				exact := make([]float32, n*rows)
				MatMulExact(p3, exact, m, x, n)
				if e := maxRelErr(exact, want); e > 1e-5 {
					t.Errorf("n=%d: MatMulExact max error %.2g of max |out|", n, e)
				}
				// Quantized activations cost about the Q8 error (≈1%).
				tol := 1e-5
				if dt.BlockSize() > 1 {
					tol = 0.03
				}
				out1, out3 := make([]float32, n*rows+3), make([]float32, n*rows+3)
				out1[n*rows], out3[n*rows] = 42, 42
				MatMul(p1, out1, m, x, n)
				MatMul(p3, out3, m, x, n)
				if e := maxRelErr(out3, want); e > tol {
					t.Errorf("n=%d: MatMul max error %.2g of max |out| > %.2g", n, e, tol)
				}
				for i := range out1 {
					if math.Float32bits(out1[i]) != math.Float32bits(out3[i]) {
						t.Fatalf("n=%d: out[%d] is %g with 1 thread, %g with 3", n, i, out1[i], out3[i])
					}
				}
				if out3[n*rows] != 42 {
					t.Fatal("MatMul wrote past n*Rows")
				}
			}
		})
	}
}

func TestMatrixCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Matrix
	}{
		{"short data", Matrix{Type: tensor.Q4_0, Rows: 2, Cols: 32, Data: make([]byte, 35)}},
		{"partial block", Matrix{Type: tensor.Q8_0, Rows: 1, Cols: 48, Data: make([]byte, 51)}},
		{"unsupported", Matrix{Type: tensor.TQ2_0, Rows: 1, Cols: 256, Data: make([]byte, 66)}},
		{"zero cols", Matrix{Type: tensor.F32, Rows: 1, Cols: 0, Data: nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Check()
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
		})
	}
	if _, err := NewMatrix(tensor.Q4_0, 2, 32, make([]byte, 36)); err != nil {
		t.Fatal(err)
	}
}

func TestMatrixRow(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	m, wf := randMatrix(t, r, tensor.Q4_K, 3, 512)
	row := make([]float32, 512)
	m.Row(2, row)
	for c, v := range row {
		if v != wf[2*512+c] {
			t.Fatalf("Row(2)[%d] = %g, want %g", c, v, wf[2*512+c])
		}
	}
}

// TestMatrixRowFrom: with ReadRowsFrom, Row reads its rows through the
// reader (here the true bytes, while Data is zeroed), falls back to Data when
// a read fails, and allocates nothing.
func TestMatrixRowFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.Q6_K, tensor.F32} {
		m, wf := randMatrix(t, r, dt, 5, 512)
		zeroed := m
		zeroed.Data = make([]byte, len(m.Data))
		row := make([]float32, 512)
		for _, tc := range []struct {
			name string
			m    Matrix
			want func(i int) float32
		}{
			{"reader", zeroed.ReadRowsFrom(bytes.NewReader(m.Data)), func(i int) float32 { return wf[i] }},
			// The last row's read comes up one byte short: it is read from Data.
			{"short reader", zeroed.ReadRowsFrom(bytes.NewReader(m.Data[:len(m.Data)-1])), func(i int) float32 {
				if i >= 4*512 {
					return 0
				}
				return wf[i]
			}},
			{"failing reader", zeroed.ReadRowsFrom(failingReader{}), func(int) float32 { return 0 }},
		} {
			for i := range 5 {
				tc.m.Row(i, row)
				for c, v := range row {
					if w := tc.want(i*512 + c); v != w {
						t.Fatalf("%s %s: Row(%d)[%d] = %g, want %g", dt, tc.name, i, c, v, w)
					}
				}
			}
		}
		rm := zeroed.ReadRowsFrom(bytes.NewReader(m.Data))
		if a := testing.AllocsPerRun(50, func() { rm.Row(3, row) }); a >= 1 && !raceEnabled {
			t.Errorf("%s: %.1f allocations per Row", dt, a)
		}
	}
}

type failingReader struct{}

func (failingReader) ReadAt([]byte, int64) (int, error) { return 0, errors.New("read failed") }

// TestMatMulBatchMatchesRows: a batch (tile kernels where available) must
// give what one row at a time (dot kernels) gives, up to float rounding.
func TestMatMulBatchMatchesRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	p := NewPool(2)
	defer p.Close()
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			const rows, cols, n = 37, 512, 21 // two 16-row tiles + dots; a padded panel
			m, _ := randMatrix(t, r, dt, rows, cols)
			x := randNormal(r, n*cols, 1)
			batch := make([]float32, n*rows)
			MatMul(p, batch, m, x, n)
			one := make([]float32, rows)
			for i := range n {
				MatMul(p, one, m, x[i*cols:(i+1)*cols], 1)
				for k := range rows {
					if d := math.Abs(float64(batch[i*rows+k] - one[k])); d > 1e-4*(1+math.Abs(float64(one[k]))) {
						t.Fatalf("row %d col %d: batch %g, single %g", i, k, batch[i*rows+k], one[k])
					}
				}
			}
		})
	}
}

// TestMatVecAllocs: token generation's matrix-vector products allocate
// nothing once warm.
func TestMatVecAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	r := rand.New(rand.NewPCG(4, 4))
	p := NewPool(2)
	defer p.Close()
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.Q4_K, tensor.F16} {
		m, _ := randMatrix(t, r, dt, 64, 512)
		x := randNormal(r, 512, 1)
		out := make([]float32, 64)
		MatMul(p, out, m, x, 1)
		if a := testing.AllocsPerRun(50, func() { MatMul(p, out, m, x, 1) }); a >= 1 {
			t.Errorf("%s: %.1f allocations per MatMul", dt, a)
		}
	}
}
