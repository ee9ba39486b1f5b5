//go:build amd64 && !purego

package kernel

//go:generate go run ./internal/x16gen x16_amd64.s

import "github.com/glassbox-ai/glassbox/tensor"

//go:noescape
func x16Q4W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q4W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q4W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q4W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q8W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q8W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q8W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q8W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K4W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K4W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K4W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K4W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K5W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K5W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K5W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K5W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K6W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K6W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K6W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K6W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K3W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K3W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K3W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K3W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K2W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K2W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K2W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16K2W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q5W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q5W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q5W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q5W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q41W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q41W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q41W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q41W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q51W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q51W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q51W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16Q51W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16QI4W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16QI4W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16QI4W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16QI4W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16KI4W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16KI4W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16KI4W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16KI4W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16QF4W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16QF4W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16QF4W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

//go:noescape
func x16QF4W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)

// x16Kernels holds the assembly kernels by type and panel width.
var x16Kernels = map[tensor.DType][4]func(units, tiles int, w, a *byte, out *float32, stride, rows, add int){
	tensor.Q4_0:   {x16Q4W1, x16Q4W2, x16Q4W4, x16Q4W16},
	tensor.Q8_0:   {x16Q8W1, x16Q8W2, x16Q8W4, x16Q8W16},
	tensor.Q4_K:   {x16K4W1, x16K4W2, x16K4W4, x16K4W16},
	tensor.Q5_K:   {x16K5W1, x16K5W2, x16K5W4, x16K5W16},
	tensor.Q6_K:   {x16K6W1, x16K6W2, x16K6W4, x16K6W16},
	tensor.Q3_K:   {x16K3W1, x16K3W2, x16K3W4, x16K3W16},
	tensor.Q2_K:   {x16K2W1, x16K2W2, x16K2W4, x16K2W16},
	tensor.Q5_0:   {x16Q5W1, x16Q5W2, x16Q5W4, x16Q5W16},
	tensor.Q4_1:   {x16Q41W1, x16Q41W2, x16Q41W4, x16Q41W16},
	tensor.Q5_1:   {x16Q51W1, x16Q51W2, x16Q51W4, x16Q51W16},
	tensor.IQ4_NL: {x16QI4W1, x16QI4W2, x16QI4W4, x16QI4W16},
	tensor.IQ4_XS: {x16KI4W1, x16KI4W2, x16KI4W4, x16KI4W16},
	tensor.MXFP4:  {x16QF4W1, x16QF4W2, x16QF4W4, x16QF4W16},
}

// x16VNNI is the AVX-512 VNNI X16 kernel: checkX16 has validated the
// sizes, so the assembly reads only within tiles and the panel and writes
// only the panel's real rows of out.
func x16VNNI(wt tensor.DType, tiles []byte, n int, a *XPack, panel int, out []float32, stride int, cols X16Cols) {
	units, ap, rows := checkX16(wt, tiles, n, a, panel, out, stride, cols)
	add := 0
	if cols.Add {
		add = 1
	}
	per := units // the kernels count records: blocks, or super-blocks for the K-quants
	if l := x16Layouts[wt]; l.cols == qkK {
		per = units / 8
	}
	w, x, o := &tiles[0], &ap[0], &out[0]
	k := x16Kernels[wt]
	switch a.Width {
	case 1:
		k[0](per, n, w, x, o, 4*stride, rows, add)
	case 2:
		k[1](per, n, w, x, o, 4*stride, rows, add)
	case 4:
		k[2](per, n, w, x, o, 4*stride, rows, add)
	default:
		k[3](per, n, w, x, o, 4*stride, rows, add)
	}
}
