package kernel

import (
	"fmt"

	"github.com/glassbox-ai/glassbox/tensor"
)

// FTile computes a 4×4 tile of x·Wᵀ for float weights (F32, F16, BF16)
// and F32 activations: tile[i*4+r] = Σ_c W[r0+r][c]·x[i0+i][c] over cols
// columns, with w the matrix bytes (rows of rowBytes) and x the activation
// rows (xStride floats apart). It reuses each weight row across four
// activation rows and each activation row across four weight rows.
type FTile func(w []byte, rowBytes, r0 int, x []float32, xStride, i0, cols int, tile *[16]float32)

// FTileCols is the column granularity of the fast float tiles.
const FTileCols = 16

// FTileFor returns the fast float tile kernel for weights of type wt, if
// this CPU has one.
func FTileFor(wt tensor.DType) (FTile, bool) {
	if active.Name == Generic.Name {
		return nil, false
	}
	f := active.FTile[wt]
	return f, f != nil
}

// checkFTile panics unless the tile's rows and columns are in range.
func checkFTile(wt tensor.DType, w []byte, rowBytes, r0 int, x []float32, xStride, i0, cols int) {
	if r0 < 0 || i0 < 0 || cols <= 0 || rowBytes < cols*wt.TypeSize() || (r0+4)*rowBytes > len(w) ||
		xStride < cols || (i0+3)*xStride+cols > len(x) {
		panic(fmt.Sprintf("kernel: %s float tile at rows %d, activations %d, %d columns out of range", wt, r0, i0, cols))
	}
}

// fTileGeneric is the specification: each entry is the generic dot.
func fTileGeneric(wt tensor.DType) FTile {
	dot := map[tensor.DType]FDot{tensor.F32: dotF32Generic, tensor.F16: dotF16Generic, tensor.BF16: dotBF16Generic}[wt]
	ts := wt.TypeSize()
	return func(w []byte, rowBytes, r0 int, x []float32, xStride, i0, cols int, tile *[16]float32) {
		checkFTile(wt, w, rowBytes, r0, x, xStride, i0, cols)
		for i := range 4 {
			for r := range 4 {
				row := w[(r0+r)*rowBytes : (r0+r)*rowBytes+cols*ts]
				tile[i*4+r] = dot(row, x[(i0+i)*xStride:(i0+i)*xStride+cols])
			}
		}
	}
}
