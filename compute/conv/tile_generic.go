package conv

// tileFunc is a micro-kernel computing m pixels × nr channels, m being
// either less than mr or a multiple of it (whole tiles in one call):
//
//	out[i*outPix+n] = act(bias[n] + skip[i*skipPix+n] +
//	    Σ_{ky<kh} Σ_{j<run} a[i*aPix+ky*aRow+j] · b[(ky*run+j)*nr+n])
//
// for i < m, n < nr; skip may be nil, act is ReLU when relu is set. The
// sum runs over ky, then j, in increasing order, in float32.
type tileFunc = tile[float32]

// tileFuncH is tileFunc for binary16 weights b, each widened exactly to
// float32 before it is used (the same products and sums as tileFunc on
// the widened weights).
type tileFuncH = tile[uint16]

// weight is the element type of packed weights: float32 or binary16.
type weight interface{ float32 | uint16 }

type tile[W weight] struct {
	mr int
	fn func(a []float32, aPix, aRow, kh, run int, b []W, bias, out []float32, outPix int, skip []float32, skipPix int, relu bool, m int)
}

type tileFuncs struct {
	nr16, nr32, nr64 tileFunc
	h16, h32, h64    tileFuncH
}

func (t tileFuncs) forNR(nr int) tileFunc {
	switch nr {
	case 64:
		return t.nr64
	case 32:
		return t.nr32
	}
	return t.nr16
}

func (t tileFuncs) forNRH(nr int) tileFuncH {
	switch nr {
	case 64:
		return t.h64
	case 32:
		return t.h32
	}
	return t.h16
}

var genericTiles = tileFuncs{
	nr16: tileFunc{8, tileGeneric16},
	nr32: tileFunc{8, tileGeneric32},
	nr64: tileFunc{4, tileGeneric64},
	h16:  tileFuncH{8, tileGenericH16},
	h32:  tileFuncH{8, tileGenericH32},
	h64:  tileFuncH{4, tileGenericH64},
}

func tileGenericH16(a []float32, aPix, aRow, kh, run int, b []uint16, bias, out []float32, outPix int, skip []float32, skipPix int, relu bool, m int) {
	tileGenericH(a, aPix, aRow, kh, run, b, 16, bias, out, outPix, skip, skipPix, relu, m)
}

func tileGenericH32(a []float32, aPix, aRow, kh, run int, b []uint16, bias, out []float32, outPix int, skip []float32, skipPix int, relu bool, m int) {
	tileGenericH(a, aPix, aRow, kh, run, b, 32, bias, out, outPix, skip, skipPix, relu, m)
}

func tileGenericH64(a []float32, aPix, aRow, kh, run int, b []uint16, bias, out []float32, outPix int, skip []float32, skipPix int, relu bool, m int) {
	tileGenericH(a, aPix, aRow, kh, run, b, 64, bias, out, outPix, skip, skipPix, relu, m)
}

// tileGenericH is the specification of the binary16-weight kernels:
// tileGeneric with every weight widened by halfToFloat.
func tileGenericH(a []float32, aPix, aRow, kh, run int, b []uint16, nr int, bias, out []float32, outPix int, skip []float32, skipPix int, relu bool, m int) {
	var acc [64]float32
	for i := 0; i < m; i++ {
		acc := acc[:nr]
		clear(acc)
		for ky := 0; ky < kh; ky++ {
			ar := a[i*aPix+ky*aRow : i*aPix+ky*aRow+run]
			bk := b[ky*run*nr : (ky+1)*run*nr]
			for j, av := range ar {
				bj := bk[j*nr : j*nr+nr]
				for n, bv := range bj {
					acc[n] += av * halfToFloat(bv)
				}
			}
		}
		o := out[i*outPix : i*outPix+nr]
		for n := range o {
			v := acc[n] + bias[n]
			if skip != nil {
				v += skip[i*skipPix+n]
			}
			if relu && v < 0 {
				v = 0
			}
			o[n] = v
		}
	}
}

func tileGeneric16(a []float32, aPix, aRow, kh, run int, b, bias, out []float32, outPix int, skip []float32, skipPix int, relu bool, m int) {
	tileGeneric(a, aPix, aRow, kh, run, b, 16, bias, out, outPix, skip, skipPix, relu, m)
}

func tileGeneric32(a []float32, aPix, aRow, kh, run int, b, bias, out []float32, outPix int, skip []float32, skipPix int, relu bool, m int) {
	tileGeneric(a, aPix, aRow, kh, run, b, 32, bias, out, outPix, skip, skipPix, relu, m)
}

func tileGeneric64(a []float32, aPix, aRow, kh, run int, b, bias, out []float32, outPix int, skip []float32, skipPix int, relu bool, m int) {
	tileGeneric(a, aPix, aRow, kh, run, b, 64, bias, out, outPix, skip, skipPix, relu, m)
}

// tileGeneric is the specification of every micro-kernel (see tileFunc).
func tileGeneric(a []float32, aPix, aRow, kh, run int, b []float32, nr int, bias, out []float32, outPix int, skip []float32, skipPix int, relu bool, m int) {
	var acc [64]float32
	for i := 0; i < m; i++ {
		acc := acc[:nr]
		clear(acc)
		for ky := 0; ky < kh; ky++ {
			ar := a[i*aPix+ky*aRow : i*aPix+ky*aRow+run]
			bk := b[ky*run*nr : (ky+1)*run*nr]
			for j, av := range ar {
				bj := bk[j*nr : j*nr+nr]
				for n, bv := range bj {
					acc[n] += av * bv
				}
			}
		}
		o := out[i*outPix : i*outPix+nr]
		for n := range o {
			v := acc[n] + bias[n]
			if skip != nil {
				v += skip[i*skipPix+n]
			}
			if relu && v < 0 {
				v = 0
			}
			o[n] = v
		}
	}
}

// kernelEnv caps the kernel set, read once at start: "avx2" or "generic"
// run the lower tiers on a machine that has more (for tests and CI).
const kernelEnv = "GLASSBOX_CONV_KERNEL"

// Kernel names the micro-kernel set Apply uses on this machine ("avx512",
// "avx2" or "generic"), for reports and for tests sized to the speed.
func Kernel() string { return kernelName() }
