package kernel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestRowsDotMulti runs every implementation's RowsDotMulti against the
// same implementation's RowsDot one activation row at a time (its
// specification; equal bit for bit), for 1–9 activation rows (every mix
// of the 4-, 2- and 1-row kernels), odd block
// counts (the Q4_0 kernel's tail path) and strides wider than a row, with
// guard values after every output row.
func TestRowsDotMulti(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const guard = float32(-777)
	for _, impl := range Impls() {
		for dt := range impl.Q {
			multi, rows := impl.MultiFor(dt), impl.RowsFor(dt)
			vt, _ := VecDotType(dt)
			t.Run(fmt.Sprintf("%s/%s", impl.Name, dt), func(t *testing.T) {
				for _, blocks := range []int{1, 3, 4, 9, 64} {
					n := blocks * dt.BlockSize()
					const nrows = 5
					w := quantized(t, dt, randNormal(r, nrows*n, 1))
					rb := len(w) / nrows
					xrb := len(quantized(t, vt, randNormal(r, n, 1)))
					for _, acts := range []int{1, 2, 3, 4, 5, 6, 7, 9} {
						xStride, outStride := xrb+xrb/2, nrows+3
						x := make([]byte, acts*xStride)
						for k := range acts {
							copy(x[k*xStride:], quantized(t, vt, randNormal(r, n, 1)))
						}
						got := make([]float32, acts*outStride)
						for i := range got {
							got[i] = guard
						}
						multi(n, w, rb, nrows, x, xStride, acts, got, outStride)
						for k := range acts {
							want := make([]float32, nrows)
							rows(n, w, rb, x[k*xStride:], want)
							for i := range nrows {
								if got[k*outStride+i] != want[i] {
									t.Fatalf("n=%d acts=%d: out[%d][%d] = %g, RowsDot %g", n, acts, k, i, got[k*outStride+i], want[i])
								}
							}
							for i := nrows; i < outStride; i++ {
								if got[k*outStride+i] != guard {
									t.Fatalf("n=%d acts=%d: guard after row %d overwritten", n, acts, k)
								}
							}
						}
					}
				}
			})
		}
	}
}
