//go:build amd64 && !purego

package kernel

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/glassbox-ai/glassbox/tensor"
)

//go:noescape
func dotQ4_0PrepVNNI(pairs int, w, xp *byte) float32

//go:noescape
func dotQ4_0PrepVNNI2(pairs int, w, x0, x1 *byte, out *[2]float32)

//go:noescape
func dotQ4_0PrepVNNI4(pairs int, w, x0, x1, x2, x3 *byte, out *[4]float32)

// Matrix × vector for Q4_0 with AVX-512 VNNI: the activation row is shared
// by every weight row, so its side of the work (lane order, the −8·Σx
// offset, the block scales as lanes) is done once per call into 192-byte
// records per pair of blocks, and the per-row loop is left with the
// weights' nibbles and scales.

var q4prepBufs = sync.Pool{New: func() any { return new([]byte) }}

// prepQ4_0 writes the records for the first 2·pairs Q8_0 blocks of x.
func prepQ4_0(x []byte, pairs int, xp []byte) {
	le := binary.LittleEndian
	for p := range pairs {
		a, b := x[68*p:68*p+34], x[68*p+34:68*p+68]
		rec := xp[192*p : 192*p+192]
		copy(rec[0:16], a[2:18])
		copy(rec[16:32], b[2:18])
		copy(rec[32:48], a[18:34])
		copy(rec[48:64], b[18:34])
		for l := range 16 {
			s := int32(int8(rec[4*l])) + int32(int8(rec[4*l+1])) + int32(int8(rec[4*l+2])) + int32(int8(rec[4*l+3]))
			le.PutUint32(rec[64+4*l:], uint32(-8*s))
		}
		da, db := math.Float32bits(f16(a)), math.Float32bits(f16(b))
		for l := range 16 {
			d := da
			if l/4%2 == 1 {
				d = db
			}
			le.PutUint32(rec[128+4*l:], d)
		}
	}
}

// rowsQ4_0Prep is the avx512 RowsDot for Q4_0.
func rowsQ4_0Prep(n int, w []byte, rowBytes int, x []byte, out []float32) {
	const wts, xts = 18, 34
	nb := n / 32
	if len(out) == 0 || nb == 0 {
		clear(out)
		return
	}
	if n%32 != 0 || rowBytes < nb*wts || len(w) < (len(out)-1)*rowBytes+nb*wts || len(x) < nb*xts {
		panic(fmt.Sprintf("kernel: %s dot of %d rows × %d elements over %d weight and %d activation bytes", tensor.Q4_0, len(out), n, len(w), len(x)))
	}
	pairs := nb / 4 * 2 // the kernel takes pairs two at a time
	bp := q4prepBufs.Get().(*[]byte)
	defer q4prepBufs.Put(bp)
	*bp = grow(*bp, max(pairs, 1)*192)
	xp := *bp
	prepQ4_0(x, pairs, xp)
	m := 2 * pairs
	for r := range out {
		var s float32
		if pairs > 0 {
			s = dotQ4_0PrepVNNI(pairs, &w[r*rowBytes], &xp[0])
		}
		if m < nb {
			s += dotQ4_0Q8_0AVX2(nb-m, &w[r*rowBytes+m*wts], &x[m*xts])
		}
		out[r] = s
	}
}

// rowsQ4_0PrepMulti is the avx512 RowsDotMulti for Q4_0: the activation
// rows are prepared once per call, and each weight row's blocks are
// unpacked once for four activation rows at a time (then two, then one). Results equal rowsQ4_0Prep's bit for bit.
func rowsQ4_0PrepMulti(n int, w []byte, rowBytes, rows int, x []byte, xStride, acts int, out []float32, outStride int) {
	const wts, xts = 18, 34
	nb := n / 32
	if rows <= 0 || acts <= 0 {
		return
	}
	if n%32 != 0 || nb == 0 || rowBytes < nb*wts || len(w) < (rows-1)*rowBytes+nb*wts || xStride < nb*xts ||
		len(x) < (acts-1)*xStride+nb*xts || outStride < rows || len(out) < (acts-1)*outStride+rows {
		panic(fmt.Sprintf("kernel: %s dot of %d rows × %d elements with %d activation rows over %d weight, %d activation and %d output values",
			tensor.Q4_0, rows, n, acts, len(w), len(x), len(out)))
	}
	pairs := nb / 4 * 2
	if pairs == 0 {
		multiFromRows(rowsQ4_0Prep)(n, w, rowBytes, rows, x, xStride, acts, out, outStride)
		return
	}
	rec := pairs * 192
	bp := q4prepBufs.Get().(*[]byte)
	defer q4prepBufs.Put(bp)
	*bp = grow(*bp, acts*rec)
	xp := *bp
	for k := range acts {
		prepQ4_0(x[k*xStride:], pairs, xp[k*rec:(k+1)*rec])
	}
	m := 2 * pairs
	var s4 [4]float32
	var s2 [2]float32
	for r := range rows {
		wr := w[r*rowBytes:]
		k := 0
		for ; k+4 <= acts; k += 4 {
			dotQ4_0PrepVNNI4(pairs, &wr[0], &xp[k*rec], &xp[(k+1)*rec], &xp[(k+2)*rec], &xp[(k+3)*rec], &s4)
			for j := range 4 {
				out[(k+j)*outStride+r] = s4[j]
			}
		}
		if k+2 <= acts {
			dotQ4_0PrepVNNI2(pairs, &wr[0], &xp[k*rec], &xp[(k+1)*rec], &s2)
			out[k*outStride+r], out[(k+1)*outStride+r] = s2[0], s2[1]
			k += 2
		}
		if k < acts {
			out[k*outStride+r] = dotQ4_0PrepVNNI(pairs, &wr[0], &xp[k*rec])
		}
		if m < nb {
			for k := range acts {
				out[k*outStride+r] += dotQ4_0Q8_0AVX2(nb-m, &wr[m*wts], &x[k*xStride+m*xts])
			}
		}
	}
}
