//go:build amd64 && !purego

package kernel

import (
	"os"
	"strconv"

	"github.com/glassbox-ai/glassbox/tensor"
)

//go:noescape
func x16Q4W1(units int, w, a *byte, out *[16]float32)

//go:noescape
func x16Q4W4(units int, w, a *byte, out *[64]float32)

//go:noescape
func x16Q4W16(units int, w, a *byte, out *[256]float32)

//go:noescape
func x16Q8W1(units int, w, a *byte, out *[16]float32)

//go:noescape
func x16Q8W4(units int, w, a *byte, out *[64]float32)

//go:noescape
func x16Q8W16(units int, w, a *byte, out *[256]float32)

//go:noescape
func x16K4W1(supers int, w, a *byte, out *[16]float32)

//go:noescape
func x16K4W4(supers int, w, a *byte, out *[64]float32)

//go:noescape
func x16K4W16(supers int, w, a *byte, out *[256]float32)

//go:noescape
func x16K5W1(supers int, w, a *byte, out *[16]float32)

//go:noescape
func x16K5W4(supers int, w, a *byte, out *[64]float32)

//go:noescape
func x16K5W16(supers int, w, a *byte, out *[256]float32)

//go:noescape
func x16K6W1(supers int, w, a *byte, out *[16]float32)

//go:noescape
func x16K6W4(supers int, w, a *byte, out *[64]float32)

//go:noescape
func x16K6W16(supers int, w, a *byte, out *[256]float32)

//go:noescape
func x16Q4W1P(units int, w, a *byte, out *[16]float32, dist int)

//go:noescape
func x16Q8W1P(units int, w, a *byte, out *[16]float32, dist int)

// x16Prefetch is GLASSBOX_X16_PREFETCH: how many bytes ahead the one-row
// Q4_0/Q8_0 kernels prefetch (0: not at all, the default) — an experiment
// switch for measuring whether software prefetch helps DRAM streaming.
var x16Prefetch = func() int {
	n, _ := strconv.Atoi(os.Getenv("GLASSBOX_X16_PREFETCH"))
	return max(n, 0) &^ 63
}()

// x16VNNI is the AVX-512 VNNI X16 kernel: checkX16 has validated the
// sizes, so the assembly reads only within tile, the panel and out.
func x16VNNI(wt tensor.DType, tile []byte, a *XPack, panel int, out []float32) {
	units, ap := checkX16(wt, tile, a, panel, out)
	w, x := &tile[0], &ap[0]
	q8 := wt == tensor.Q8_0
	switch wt {
	case tensor.Q4_K:
		supers := units / 8
		switch a.Width {
		case 1:
			x16K4W1(supers, w, x, (*[16]float32)(out))
		case 4:
			x16K4W4(supers, w, x, (*[64]float32)(out))
		default:
			x16K4W16(supers, w, x, (*[256]float32)(out))
		}
		return
	case tensor.Q5_K:
		supers := units / 8
		switch a.Width {
		case 1:
			x16K5W1(supers, w, x, (*[16]float32)(out))
		case 4:
			x16K5W4(supers, w, x, (*[64]float32)(out))
		default:
			x16K5W16(supers, w, x, (*[256]float32)(out))
		}
		return
	case tensor.Q6_K:
		supers := units / 8
		switch a.Width {
		case 1:
			x16K6W1(supers, w, x, (*[16]float32)(out))
		case 4:
			x16K6W4(supers, w, x, (*[64]float32)(out))
		default:
			x16K6W16(supers, w, x, (*[256]float32)(out))
		}
		return
	}
	if a.Width == 1 && x16Prefetch > 0 {
		if q8 {
			x16Q8W1P(units, w, x, (*[16]float32)(out), x16Prefetch)
		} else {
			x16Q4W1P(units, w, x, (*[16]float32)(out), x16Prefetch)
		}
		return
	}
	switch a.Width {
	case 1:
		o := (*[16]float32)(out)
		if q8 {
			x16Q8W1(units, w, x, o)
		} else {
			x16Q4W1(units, w, x, o)
		}
	case 4:
		o := (*[64]float32)(out)
		if q8 {
			x16Q8W4(units, w, x, o)
		} else {
			x16Q4W4(units, w, x, o)
		}
	default:
		o := (*[256]float32)(out)
		if q8 {
			x16Q8W16(units, w, x, o)
		} else {
			x16Q4W16(units, w, x, o)
		}
	}
}
