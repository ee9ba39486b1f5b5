//go:build amd64 && !purego

package kernel

import (
	"fmt"

	"github.com/glassbox-ai/glassbox/tensor"
)

//go:noescape
func tileQ8_0VNNI(pairs int, w *byte, wStride int, a *byte, tile *[16]float32)

//go:noescape
func tileQ4_0VNNI(pairs int, w *byte, wStride int, a *byte, tile *[16]float32)

// hasVNNI is AVX-512 F/BW/VL with VNNI, what the tile kernels use.
var hasVNNI = x86.avx512f && x86.avx512bw && x86.avx512vl && x86.avx512vnni

// tileAsm wraps a tile kernel with the bounds checks Go would do.
func tileAsm(wt tensor.DType, f func(pairs int, w *byte, wStride int, a *byte, tile *[16]float32)) Tile {
	return func(w []byte, rowBytes, r0 int, a *Q8Pack, g int, tile *[16]float32) {
		pairs := a.Cols / GemmCols
		if r0 < 0 || (r0+4)*rowBytes > len(w) || rowBytes < pairs*2*wt.TypeSize() || g < 0 ||
			(g+1)*pairs*packRecord > len(a.Data) || pairs == 0 {
			panic(fmt.Sprintf("kernel: %s tile at row %d, group %d out of range", wt, r0, g))
		}
		f(pairs, &w[r0*rowBytes], rowBytes, &a.Data[g*pairs*packRecord], tile)
	}
}
