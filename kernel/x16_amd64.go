//go:build amd64 && !purego

package kernel

//go:generate go run ./internal/x16gen x16_amd64.s

import (
	"os"
	"strconv"

	"github.com/glassbox-ai/glassbox/tensor"
)

//go:noescape
func x16Q4W1(units, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16Q4W4(units, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16Q4W16(units, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16Q8W1(units, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16Q8W4(units, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16Q8W16(units, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16K4W1(supers, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16K4W4(supers, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16K4W16(supers, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16K5W1(supers, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16K5W4(supers, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16K5W16(supers, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16K6W1(supers, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16K6W4(supers, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16K6W16(supers, tiles int, w, a *byte, out *float32, stride, rows int)

//go:noescape
func x16Q4W1P(units, tiles int, w, a *byte, out *float32, stride, rows int, dist int)

//go:noescape
func x16Q8W1P(units, tiles int, w, a *byte, out *float32, stride, rows int, dist int)

// x16Prefetch is GLASSBOX_X16_PREFETCH: how many bytes ahead the one-row
// Q4_0/Q8_0 kernels prefetch (0: not at all, the default) — an experiment
// switch for measuring whether software prefetch helps DRAM streaming.
var x16Prefetch = func() int {
	n, _ := strconv.Atoi(os.Getenv("GLASSBOX_X16_PREFETCH"))
	return max(n, 0) &^ 63
}()

// x16Kernels holds the assembly kernels by type and panel width.
var x16Kernels = map[tensor.DType][3]func(units, tiles int, w, a *byte, out *float32, stride, rows int){
	tensor.Q4_0: {x16Q4W1, x16Q4W4, x16Q4W16},
	tensor.Q8_0: {x16Q8W1, x16Q8W4, x16Q8W16},
	tensor.Q4_K: {x16K4W1, x16K4W4, x16K4W16},
	tensor.Q5_K: {x16K5W1, x16K5W4, x16K5W16},
	tensor.Q6_K: {x16K6W1, x16K6W4, x16K6W16},
}

// x16VNNI is the AVX-512 VNNI X16 kernel: checkX16 has validated the
// sizes, so the assembly reads only within tiles and the panel and writes
// only the panel's real rows of out.
func x16VNNI(wt tensor.DType, tiles []byte, n int, a *XPack, panel int, out []float32, stride int) {
	units, ap, rows := checkX16(wt, tiles, n, a, panel, out, stride)
	per := units // the kernels count records: blocks, or super-blocks for the K-quants
	if l := x16Layouts[wt]; l.cols == qkK {
		per = units / 8
	}
	w, x, o := &tiles[0], &ap[0], &out[0]
	if a.Width == 1 && x16Prefetch > 0 {
		switch wt {
		case tensor.Q4_0:
			x16Q4W1P(per, n, w, x, o, 4*stride, rows, x16Prefetch)
			return
		case tensor.Q8_0:
			x16Q8W1P(per, n, w, x, o, 4*stride, rows, x16Prefetch)
			return
		}
	}
	k := x16Kernels[wt]
	switch a.Width {
	case 1:
		k[0](per, n, w, x, o, 4*stride, rows)
	case 4:
		k[1](per, n, w, x, o, 4*stride, rows)
	default:
		k[2](per, n, w, x, o, 4*stride, rows)
	}
}
