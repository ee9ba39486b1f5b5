//go:build amd64 && !purego

package kernel

import "github.com/glassbox-ai/glassbox/tensor"

//go:noescape
func ftileF16(cols int, w *byte, rowBytes int, x *float32, xStride int, tile *[16]float32)

//go:noescape
func ftileF32(cols int, w *byte, rowBytes int, x *float32, xStride int, tile *[16]float32)

//go:noescape
func ftileBF16(cols int, w *byte, rowBytes int, x *float32, xStride int, tile *[16]float32)

// fTileAsm wraps an AVX-512 float tile (cols a multiple of 16).
func fTileAsm(wt tensor.DType, k func(cols int, w *byte, rowBytes int, x *float32, xStride int, tile *[16]float32)) FTile {
	return func(w []byte, rowBytes, r0 int, x []float32, xStride, i0, cols int, tile *[16]float32) {
		checkFTile(wt, w, rowBytes, r0, x, xStride, i0, cols)
		if cols%FTileCols != 0 {
			fTileGeneric(wt)(w, rowBytes, r0, x, xStride, i0, cols, tile)
			return
		}
		k(cols, &w[r0*rowBytes], rowBytes, &x[i0*xStride], xStride, tile)
	}
}
