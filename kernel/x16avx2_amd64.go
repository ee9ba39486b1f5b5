//go:build amd64 && !purego

package kernel

import (
	"sync"

	"github.com/glassbox-ai/glassbox/tensor"
)

//go:noescape
func x16Q4AVX2(units, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)

//go:noescape
func x16Q5AVX2(units, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)

//go:noescape
func x16Q41AVX2(units, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)

//go:noescape
func x16Q51AVX2(units, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)

//go:noescape
func x16K5AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)

//go:noescape
func x16K6AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)

//go:noescape
func x16K2AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)

//go:noescape
func x16K3AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)

//go:noescape
func x16K4AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)

// x16AccBufs holds the AVX2 kernels' accumulators ([16][16]f32 at most).
var x16AccBufs = sync.Pool{New: func() any { return new([256]float32) }}

// x16AVX2 is the AVX2 X16 kernel (CPUs without AVX-512 VNNI): checkX16 has
// validated the sizes, so the assembly reads only within tiles and the
// panel and writes only the panel's real rows of out.
func x16AVX2(wt tensor.DType, tiles []byte, n int, a *XPack, panel int, out []float32, stride int, cols X16Cols) {
	units, ap, rows := checkX16(wt, tiles, n, a, panel, out, stride, cols)
	add := 0
	if cols.Add {
		add = 1
	}
	acc := x16AccBufs.Get().(*[256]float32)
	defer x16AccBufs.Put(acc)
	switch wt {
	case tensor.Q4_0:
		x16Q4AVX2(units, n, &tiles[0], &ap[0], &out[0], 4*stride, rows, a.Width, &acc[0], add)
	case tensor.Q5_0:
		x16Q5AVX2(units, n, &tiles[0], &ap[0], &out[0], 4*stride, rows, a.Width, &acc[0], add)
	case tensor.Q4_1:
		x16Q41AVX2(units, n, &tiles[0], &ap[0], &out[0], 4*stride, rows, a.Width, &acc[0], add)
	case tensor.Q5_1:
		x16Q51AVX2(units, n, &tiles[0], &ap[0], &out[0], 4*stride, rows, a.Width, &acc[0], add)
	case tensor.Q4_K:
		x16K4AVX2(units/8, n, &tiles[0], &ap[0], &out[0], 4*stride, rows, a.Width, &acc[0], add)
	case tensor.Q5_K:
		x16K5AVX2(units/8, n, &tiles[0], &ap[0], &out[0], 4*stride, rows, a.Width, &acc[0], add)
	case tensor.Q6_K:
		x16K6AVX2(units/8, n, &tiles[0], &ap[0], &out[0], 4*stride, rows, a.Width, &acc[0], add)
	case tensor.Q3_K:
		x16K3AVX2(units/8, n, &tiles[0], &ap[0], &out[0], 4*stride, rows, a.Width, &acc[0], add)
	case tensor.Q2_K:
		x16K2AVX2(units/8, n, &tiles[0], &ap[0], &out[0], 4*stride, rows, a.Width, &acc[0], add)
	default:
		panic("kernel: no AVX2 x16 kernel for " + wt.String())
	}
}
