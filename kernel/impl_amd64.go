//go:build amd64 && !purego

package kernel

import (
	"fmt"
	"maps"
	"os"
	"unsafe"

	"github.com/glassbox-ai/glassbox/tensor"
)

// Assembly kernels (dot_amd64.s). Each takes raw pointers; the Go wrappers
// below check lengths first, so the assembly never reads out of bounds.

//go:noescape
func dotQ8_0Q8_0AVX2(nb int, w, x *byte) float32

//go:noescape
func dotQ4_0Q8_0AVX2(nb int, w, x *byte) float32

//go:noescape
func dotQ4_0Q8_0VNNI(nb int, w, x *byte) float32

//go:noescape
func dotQ5_0Q8_0AVX2(nb int, w, x *byte) float32

//go:noescape
func dotQ4_1Q8_1AVX2(nb int, w, x *byte) float32

//go:noescape
func dotQ5_1Q8_1AVX2(nb int, w, x *byte) float32

//go:noescape
func dotQ4KQ8KAVX2(nb int, w, x *byte) float32

//go:noescape
func dotQ2KQ8KAVX2(nb int, w, x *byte) float32

//go:noescape
func dotQ3KQ8KAVX2(nb int, w, x *byte) float32

//go:noescape
func dotQ6KQ8KVNNI(nb int, w, x *byte) float32

//go:noescape
func dotQ5KQ8KAVX2(nb int, w, x *byte) float32

//go:noescape
func dotQ6KQ8KAVX2(nb int, w, x *byte) float32

//go:noescape
func axpyF16AVX2(n int, o *float32, v *byte, a float32)

//go:noescape
func cvtF32toF16(n int, src *float32, dst *byte)

//go:noescape
func cvtF16toF32(n int, src *byte, dst *float32)

//go:noescape
func dotF16AVX2(n int, w *byte, x *float32) float32

//go:noescape
func dotF16AVX512(n int, w *byte, x *float32) float32

//go:noescape
func dotF16RowsAVX512(n, rows int, w *byte, rowBytes int, x *float32, out *float32, add bool)

//go:noescape
func dotBF16AVX2(n int, w *byte, x *float32) float32

//go:noescape
func dotF32AVX2(n int, w *byte, x *float32) float32

// hasAVX2 is AVX2 + FMA + F16C, the baseline of the fast kernels.
var hasAVX2 = x86.avx2 && x86.fma && x86.f16c

// noAsm reports whether GLASSBOX_NOASM asks for the generic kernels.
// GLASSBOX_KERNEL=avx2 picks the AVX2 tier on an AVX-512 machine, so
// that tests cover what machines without AVX-512 run.
func noAsm() bool { v := os.Getenv("GLASSBOX_NOASM"); return v != "" && v != "0" }

func init() {
	if hasAVX2 && hasVNNI {
		avx512 = avx2
		avx512.Name = "avx512vnni"
		avx512.Gemm = map[tensor.DType]Gemm{}
		for _, t := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
			avx512.Gemm[t] = gemmAsm(t)
		}
		avx512.FTile = map[tensor.DType]FTile{
			tensor.F16:  fTileAsm(tensor.F16, ftileF16),
			tensor.F32:  fTileAsm(tensor.F32, ftileF32),
			tensor.BF16: fTileAsm(tensor.BF16, ftileBF16),
		}
		avx512.Q = maps.Clone(avx2.Q)
		avx512.Rows = maps.Clone(avx2.Rows)
		avx512.Q[tensor.Q4_0] = qdotSplit(tensor.Q4_0, 4, dotQ4_0Q8_0VNNI, dotQ4_0Q8_0AVX2)
		avx512.Rows[tensor.Q4_0] = rowsQ4_0Prep
		avx512.Multi = map[tensor.DType]RowsDotMulti{tensor.Q4_0: rowsQ4_0PrepMulti}
		avx512.X16 = map[tensor.DType]X16{}
		for t := range Generic.X16 {
			avx512.X16[t] = x16VNNI
		}
		avx512.F = maps.Clone(avx2.F)
		avx512.F[tensor.F16] = fdotAsmW(tensor.F16, 64, dotF16AVX512)
		avx512.FRows = map[tensor.DType]FRows{tensor.F16: frowsF16AVX512}
		avx512.Q[tensor.Q6_K] = qdotAsm(tensor.Q6_K, dotQ6KQ8KVNNI)
		avx512.Rows[tensor.Q6_K] = rowsAsm(tensor.Q6_K, 1, dotQ6KQ8KVNNI, nil)
	}
	if hasAVX2 && !noAsm() {
		axpyF16 = axpyF16Fast
		scoresBlocks, scoresBlocks4, mixF16 = scoresBlocksFast, scoresBlocks4With(scoresBlocks4AVX2), mixF16Fast
		scoresQ8x4, mixQ8x4 = scoresQ8x4Fast, mixQ8x4Fast
		silu, siluMul, expShift = siluFast, siluMulFast, expShiftFast
		fastReduce = true
		quantRowQ8_0 = quantRowQ8_0Fast
		x16RecQ8_0 = x16RecQ8_0Fast
		x16RecQ8K = x16RecQ8KFast
		fastF16, fastF32 = cvtF16Fast, cvtF32Fast
	}
	switch {
	case noAsm():
	case avx512.Name != "" && os.Getenv("GLASSBOX_KERNEL") != "avx2":
		active = avx512
		scoresBlocks4, mixF16x4, mixQ8x4, scoresQ8x4 = scoresBlocks4With(scoresBlocks4AVX512), mixF16x4Fast512, mixQ8x4Fast512, scoresQ8x4Fast512
		x16RecQ8_0 = x16RecQ8_0Fast512
		silu, siluMul, expShift = siluFast512, siluMulFast512, expShiftFast512
	case hasAVX2:
		active = avx2
	}
	fillDotTables()
}

// avx512 is avx2 plus the AVX-512 VNNI GEMM kernel (set in init when the
// CPU has them).
var avx512 Impl

func available() []Impl {
	out := []Impl{Generic}
	if hasAVX2 {
		out = append(out, avx2)
	}
	if avx512.Name != "" {
		out = append(out, avx512)
	}
	return out
}

var avx2 = Impl{
	Name: "avx2",
	X16: map[tensor.DType]X16{
		tensor.Q4_0: x16AVX2,
		tensor.Q4_K: x16AVX2,
		tensor.Q5_K: x16AVX2,
		tensor.Q6_K: x16AVX2,
		tensor.Q3_K: x16AVX2,
		tensor.Q2_K: x16AVX2,
		tensor.Q5_0: x16AVX2,
		tensor.Q4_1: x16AVX2,
		tensor.Q5_1: x16AVX2,
	},
	Q: map[tensor.DType]QDot{
		tensor.Q8_0:   qdotAsm(tensor.Q8_0, dotQ8_0Q8_0AVX2),
		tensor.Q4_0:   qdotAsm(tensor.Q4_0, dotQ4_0Q8_0AVX2),
		tensor.Q4_1:   qdotAsm(tensor.Q4_1, dotQ4_1Q8_1AVX2),
		tensor.Q5_0:   qdotAsm(tensor.Q5_0, dotQ5_0Q8_0AVX2),
		tensor.Q5_1:   qdotAsm(tensor.Q5_1, dotQ5_1Q8_1AVX2),
		tensor.Q4_K:   qdotAsm(tensor.Q4_K, dotQ4KQ8KAVX2),
		tensor.Q2_K:   qdotAsm(tensor.Q2_K, dotQ2KQ8KAVX2),
		tensor.IQ4_NL: qdotAsm(tensor.IQ4_NL, dotIQ4NLQ8_0AVX2),
		tensor.IQ4_XS: qdotAsm(tensor.IQ4_XS, dotIQ4XSQ8KAVX2),
		tensor.MXFP4:  qdotAsm(tensor.MXFP4, dotMXFP4Q8_0AVX2),
		tensor.Q3_K:   qdotAsm(tensor.Q3_K, dotQ3KQ8KAVX2),
		tensor.Q5_K:   qdotAsm(tensor.Q5_K, dotQ5KQ8KAVX2),
		tensor.Q6_K:   qdotAsm(tensor.Q6_K, dotQ6KQ8KAVX2),
	},
	Rows: map[tensor.DType]RowsDot{
		tensor.Q8_0: rowsAsm(tensor.Q8_0, 1, dotQ8_0Q8_0AVX2, nil),
		tensor.Q4_0: rowsAsm(tensor.Q4_0, 1, dotQ4_0Q8_0AVX2, nil),
		tensor.Q4_K: rowsAsm(tensor.Q4_K, 1, dotQ4KQ8KAVX2, nil),
		tensor.Q5_K: rowsAsm(tensor.Q5_K, 1, dotQ5KQ8KAVX2, nil),
		tensor.Q6_K: rowsAsm(tensor.Q6_K, 1, dotQ6KQ8KAVX2, nil),
	},
	F: map[tensor.DType]FDot{
		tensor.F16:  fdotAsm(tensor.F16, dotF16AVX2),
		tensor.BF16: fdotAsm(tensor.BF16, dotBF16AVX2),
		tensor.F32:  fdotAsm(tensor.F32, dotF32AVX2),
	},
}

// qdotAsm wraps a block kernel with the length checks the generic kernels
// get from Go's bounds checks.
func qdotAsm(dt tensor.DType, f func(nb int, w, x *byte) float32) QDot {
	vt, _ := VecDotType(dt)
	bs, wts, xts := dt.BlockSize(), dt.TypeSize(), vt.TypeSize()
	return func(n int, w, x []byte) float32 {
		nb := n / bs
		if n%bs != 0 || len(w) < nb*wts || len(x) < nb*xts {
			panic(fmt.Sprintf("kernel: %s dot of %d elements over %d weight and %d activation bytes", dt, n, len(w), len(x)))
		}
		if nb == 0 {
			return 0
		}
		return f(nb, &w[0], &x[0])
	}
}

// fdotAsm wraps a float kernel that handles multiples of 32 elements; the
// tail runs the generic loop.
func fdotAsm(dt tensor.DType, f func(n int, w *byte, x *float32) float32) FDot {
	return fdotAsmW(dt, 32, f)
}

// fdotAsmW is fdotAsm for a kernel that takes multiples of width elements.
func fdotAsmW(dt tensor.DType, width int, f func(n int, w *byte, x *float32) float32) FDot {
	ts := dt.TypeSize()
	ref := Generic.F[dt]
	return func(w []byte, x []float32) float32 {
		n := len(x)
		if len(w) < n*ts {
			panic(fmt.Sprintf("kernel: %s dot of %d elements over %d weight bytes", dt, n, len(w)))
		}
		m := n / width * width
		var s float32
		if m > 0 {
			s = f(m, &w[0], unsafe.SliceData(x))
		}
		if m < n {
			s += ref(w[m*ts:], x[m:])
		}
		return s
	}
}

// frowsF16AVX512 is dotF16AVX512 over a run of rows in one call; rows
// whose length is not a multiple of 64 take the per-row dot (its tail is
// Go), so every row has fdotAsmW's bits.
func frowsF16AVX512(w []byte, rowBytes int, x []float32, out []float32, add bool) {
	n, rows := len(x), len(out)
	if rows == 0 {
		return
	}
	if n%64 != 0 || n == 0 || rowBytes < 2*n || len(w) < (rows-1)*rowBytes+2*n {
		frowsFromDot(avx512.F[tensor.F16])(w, rowBytes, x, out, add)
		return
	}
	dotF16RowsAVX512(n, rows, &w[0], rowBytes, &x[0], &out[0], add)
}

// qdotSplit runs f over the largest multiple of step blocks and tail (a
// kernel for any count) over the rest.
func qdotSplit(dt tensor.DType, step int, f, tail func(nb int, w, x *byte) float32) QDot {
	vt, _ := VecDotType(dt)
	bs, wts, xts := dt.BlockSize(), dt.TypeSize(), vt.TypeSize()
	return func(n int, w, x []byte) float32 {
		nb := n / bs
		if n%bs != 0 || len(w) < nb*wts || len(x) < nb*xts {
			panic(fmt.Sprintf("kernel: %s dot of %d elements over %d weight and %d activation bytes", dt, n, len(w), len(x)))
		}
		m := nb / step * step
		var s float32
		if m > 0 {
			s = f(m, &w[0], &x[0])
		}
		if m < nb {
			s += tail(nb-m, &w[m*wts], &x[m*xts])
		}
		return s
	}
}

// axpyF16Fast runs the AVX2 loop over multiples of 16 and the generic one
// over the tail.
func axpyF16Fast(o []float32, v []byte, a float32) {
	m := len(o) &^ 15
	if m > 0 {
		axpyF16AVX2(m, &o[0], &v[0], a)
	}
	axpyF16Generic(o[m:], v[2*m:], a)
}

func cvtF16Fast(dst []float32, src []byte) int {
	m := len(dst) &^ 7
	if m > 0 {
		cvtF16toF32(m, &src[0], &dst[0])
	}
	return m
}

func cvtF32Fast(dst []byte, src []float32) int {
	m := len(src) &^ 7
	if m > 0 {
		cvtF32toF16(m, &src[0], &dst[0])
	}
	return m
}

// rowsAsm is a RowsDot over a block kernel f that takes multiples of step
// blocks (tail takes the rest): one length check for all rows, then a
// direct call per row.
func rowsAsm(dt tensor.DType, step int, f, tail func(nb int, w, x *byte) float32) RowsDot {
	vt, _ := VecDotType(dt)
	bs, wts, xts := dt.BlockSize(), dt.TypeSize(), vt.TypeSize()
	return func(n int, w []byte, rowBytes int, x []byte, out []float32) {
		nb := n / bs
		if len(out) == 0 || nb == 0 {
			clear(out)
			return
		}
		if n%bs != 0 || rowBytes < nb*wts || len(w) < (len(out)-1)*rowBytes+nb*wts || len(x) < nb*xts {
			panic(fmt.Sprintf("kernel: %s dot of %d rows × %d elements over %d weight and %d activation bytes", dt, len(out), n, len(w), len(x)))
		}
		m := nb / step * step
		for r := range out {
			var s float32
			if m > 0 {
				s = f(m, &w[r*rowBytes], &x[0])
			}
			if m < nb {
				s += tail(nb-m, &w[r*rowBytes+m*wts], &x[m*xts])
			}
			out[r] = s
		}
	}
}
