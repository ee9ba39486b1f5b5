package kernel

import (
	"fmt"

	"github.com/glassbox-ai/glassbox/tensor"
)

// QDot returns the dot product of n elements of a quantized weight row w
// and an activation row x in the weight format's vec-dot type. n is a
// multiple of the block size; w and x hold at least n elements' bytes.
type QDot func(n int, w, x []byte) float32

// RowsDot computes out[r] = QDot(n, w[r*rowBytes:], x) for every r <
// len(out): consecutive weight rows against one activation row, with the
// checks done once (matrix × vector is made of these).
type RowsDot func(n int, w []byte, rowBytes int, x []byte, out []float32)

// rowsFromQ builds a RowsDot from a single-row kernel.
func rowsFromQ(q QDot) RowsDot {
	return func(n int, w []byte, rowBytes int, x []byte, out []float32) {
		for r := range out {
			out[r] = q(n, w[r*rowBytes:], x)
		}
	}
}

// RowsDotMulti computes out[k*outStride+r] = QDot(n, w[r*rowBytes:],
// x[k*xStride:]) for r < rows and k < acts: a RowsDot over several
// activation rows at once (batched decoding of several sequences), so a
// fast version can unpack each weight block once for all of them.
type RowsDotMulti func(n int, w []byte, rowBytes, rows int, x []byte, xStride, acts int, out []float32, outStride int)

// multiFromRows builds a RowsDotMulti from a RowsDot, one activation row
// at a time: the specification of every RowsDotMulti.
func multiFromRows(rd RowsDot) RowsDotMulti {
	return func(n int, w []byte, rowBytes, rows int, x []byte, xStride, acts int, out []float32, outStride int) {
		for k := range acts {
			rd(n, w, rowBytes, x[k*xStride:], out[k*outStride:k*outStride+rows])
		}
	}
}

// FDot returns the dot product of a float weight row w (F32, F16 or BF16
// bytes) and len(x) F32 activations.
type FDot func(w []byte, x []float32) float32

// FRows computes out[r] = FDot(w[r*rowBytes:], x) for r < len(out), with
// the same bits, or out[r] += FDot(...) when add is set: one call for a
// run of rows, no call and bounds checks per row (a 2048-column F16 row is
// about 160 ns of streaming at two threads, so a few nanoseconds a row
// show).
type FRows func(w []byte, rowBytes int, x []float32, out []float32, add bool)

// Impl is one implementation of the dot kernels: "generic" is the
// specification; fast ones fill in what they accelerate.
type Impl struct {
	Name  string
	Q     map[tensor.DType]QDot
	Rows  map[tensor.DType]RowsDot      // nil entries: built from Q
	Multi map[tensor.DType]RowsDotMulti // nil entries: built from Rows
	F     map[tensor.DType]FDot
	FRows map[tensor.DType]FRows // nil entries: built from F
	Gemm  map[tensor.DType]Gemm  // matrix × matrix tiles (gemm.go)
	FTile map[tensor.DType]FTile // float matrix × matrix tiles (ftile.go)
	X16   map[tensor.DType]X16   // kernels over x16 tiles (x16.go)
}

// Generic holds the reference kernels.
var Generic = Impl{
	Name: "generic",
	Q: map[tensor.DType]QDot{
		tensor.Q4_0:   dotQ4_0Q8_0Generic,
		tensor.Q4_1:   dotQ4_1Q8_1Generic,
		tensor.Q5_0:   dotQ5_0Q8_0Generic,
		tensor.Q5_1:   dotQ5_1Q8_1Generic,
		tensor.Q8_0:   dotQ8_0Q8_0Generic,
		tensor.Q2_K:   dotQ2KQ8KGeneric,
		tensor.Q3_K:   dotQ3KQ8KGeneric,
		tensor.Q4_K:   dotQ4KQ8KGeneric,
		tensor.Q5_K:   dotQ5KQ8KGeneric,
		tensor.Q6_K:   dotQ6KQ8KGeneric,
		tensor.IQ4_NL: dotIQ4NLQ8_0Generic,
		tensor.IQ4_XS: dotIQ4XSQ8KGeneric,
		tensor.MXFP4:  dotMXFP4Q8_0Generic,
	},
	F: map[tensor.DType]FDot{
		tensor.F32:  dotF32Generic,
		tensor.F16:  dotF16Generic,
		tensor.BF16: dotBF16Generic,
	},
	Gemm: map[tensor.DType]Gemm{
		tensor.Q8_0: gemmGeneric,
		tensor.Q4_0: gemmGeneric,
		tensor.Q4_K: gemmGeneric,
		tensor.Q5_K: gemmGeneric,
		tensor.Q6_K: gemmGeneric,
		tensor.Q3_K: gemmGeneric,
	},
	FTile: map[tensor.DType]FTile{
		tensor.F32:  fTileGeneric(tensor.F32),
		tensor.F16:  fTileGeneric(tensor.F16),
		tensor.BF16: fTileGeneric(tensor.BF16),
	},
	X16: map[tensor.DType]X16{
		tensor.Q4_0:   x16Generic,
		tensor.Q8_0:   x16Generic,
		tensor.Q4_K:   x16Generic,
		tensor.Q5_K:   x16Generic,
		tensor.Q6_K:   x16Generic,
		tensor.Q3_K:   x16Generic,
		tensor.Q2_K:   x16Generic,
		tensor.Q5_0:   x16Generic,
		tensor.Q4_1:   x16Generic,
		tensor.Q5_1:   x16Generic,
		tensor.IQ4_NL: x16Generic,
		tensor.IQ4_XS: x16Generic,
		tensor.MXFP4:  x16Generic,
	},
}

// active is the implementation chosen at start (see impl_*.go).
var active = Generic

// Active returns the name of the implementation in use.
func Active() string { return active.Name }

// Impls lists every implementation usable on this CPU, generic first; tests
// run each against the generic one.
func Impls() []Impl { return available() }

// VecDotType returns the type activations are quantized to before a dot
// product with weights of type dt: Q8_0 for Q4_0/Q5_0/Q8_0 (and IQ4_NL,
// MXFP4), Q8_1 for
// Q4_1/Q5_1, Q8_K for the K-quants, and F32 for float weights.
func VecDotType(dt tensor.DType) (tensor.DType, error) {
	switch dt {
	case tensor.F32, tensor.F16, tensor.BF16:
		return tensor.F32, nil
	case tensor.Q4_0, tensor.Q5_0, tensor.Q8_0, tensor.IQ4_NL, tensor.MXFP4:
		return tensor.Q8_0, nil
	case tensor.Q4_1, tensor.Q5_1:
		return tensor.Q8_1, nil
	case tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_XS:
		return tensor.Q8_K, nil
	}
	return 0, fmt.Errorf("kernel: no dot product for weight type %s", dt)
}

// QDotFor returns the active dot kernel for quantized weights of type dt.
func QDotFor(dt tensor.DType) (QDot, error) {
	if dt < tensor.DType(len(qdots)) && qdots[dt] != nil {
		return qdots[dt], nil
	}
	return nil, fmt.Errorf("kernel: no quantized dot product for weight type %s", dt)
}

// FDotFor returns the active dot kernel for float weights of type dt.
func FDotFor(dt tensor.DType) (FDot, error) {
	if dt < tensor.DType(len(fdots)) && fdots[dt] != nil {
		return fdots[dt], nil
	}
	return nil, fmt.Errorf("kernel: no float dot product for weight type %s", dt)
}

// FRowsFor returns the active row-run kernel for float weights of type dt.
func FRowsFor(dt tensor.DType) (FRows, error) {
	if dt < tensor.DType(len(frows)) && frows[dt] != nil {
		return frows[dt], nil
	}
	return nil, fmt.Errorf("kernel: no float dot product for weight type %s", dt)
}

// FRowsFor returns impl's FRows for dt (nil if it has no dot for dt).
func (impl Impl) FRowsFor(dt tensor.DType) FRows {
	if f := impl.FRows[dt]; f != nil {
		return f
	}
	if dot := impl.F[dt]; dot != nil {
		return frowsFromDot(dot)
	}
	return nil
}

// frowsFromDot is an FRows calling dot once per row.
func frowsFromDot(dot FDot) FRows {
	return func(w []byte, rowBytes int, x []float32, out []float32, add bool) {
		for r := range out {
			if v := dot(w[r*rowBytes:], x); add {
				out[r] += v
			} else {
				out[r] = v
			}
		}
	}
}

// qdots and fdots index the active kernels by dtype (a map lookup per
// matrix multiplication showed in profiles); filled in init after the
// implementation is chosen.
var (
	qdots    [64]QDot
	rowsdots [64]RowsDot
	multis   [64]RowsDotMulti
	fdots    [64]FDot
	frows    [64]FRows
)

func fillDotTables() {
	for _, impl := range []Impl{Generic, active} {
		for dt, f := range impl.Q {
			qdots[dt] = f
			rowsdots[dt] = impl.RowsFor(dt)
			multis[dt] = impl.MultiFor(dt)
		}
		for dt, f := range impl.F {
			fdots[dt] = f
			frows[dt] = impl.FRowsFor(dt)
		}
	}
}

// RowsFor returns impl's RowsDot for dt (nil if it has no dot for dt).
func (impl Impl) RowsFor(dt tensor.DType) RowsDot {
	if f := impl.Rows[dt]; f != nil {
		return f
	}
	if q := impl.Q[dt]; q != nil {
		return rowsFromQ(q)
	}
	return nil
}

// MultiFor returns impl's RowsDotMulti for dt (nil if it has no dot for
// dt).
func (impl Impl) MultiFor(dt tensor.DType) RowsDotMulti {
	if f := impl.Multi[dt]; f != nil {
		return f
	}
	if rd := impl.RowsFor(dt); rd != nil {
		return multiFromRows(rd)
	}
	return nil
}

// RowsDotMultiFor returns the active RowsDotMulti for quantized weights of
// type dt.
func RowsDotMultiFor(dt tensor.DType) (RowsDotMulti, error) {
	if dt < tensor.DType(len(multis)) && multis[dt] != nil {
		return multis[dt], nil
	}
	return nil, fmt.Errorf("kernel: no quantized dot product for weight type %s", dt)
}

// RowsDotFor returns the active RowsDot for quantized weights of type dt.
func RowsDotFor(dt tensor.DType) (RowsDot, error) {
	if dt < tensor.DType(len(rowsdots)) && rowsdots[dt] != nil {
		return rowsdots[dt], nil
	}
	return nil, fmt.Errorf("kernel: no quantized dot product for weight type %s", dt)
}
