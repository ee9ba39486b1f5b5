package unet

import (
	"math"
	"sync"
	"unsafe"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// queryBlock is how many query rows one attention task takes: its scores,
// queryBlock × keys floats, are the only n×m memory there is (4096 keys at
// 512²: 1 MiB), never a whole head's.
const queryBlock = 64

// attention is multi-head scaled dot-product attention without masks,
// softmax(q·kᵀ/√d)·v per head, in float32. Keys are packed per head as
// rows of dp = ⌈d/16⌉·16 floats and values transposed per head as rows of
// mp = ⌈m/16⌉·16 floats (zeros in the padding), so both products run on
// kernel.FTile's 4×4 tiles of dot products; the scores of one block of
// queries are computed, normalised and used before the next block's.
type attention struct {
	kp []float32 // (numHeads, mp, dp) keys
	vt []float32 // (numHeads, d, mp) values, transposed
}

// scratch is one task's query block and scores.
type scratch struct{ q, s []float32 }

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// run sets out (n, dim) to the attention of queries q (n, dim) over keys k
// and values v (m, dim), numHeads heads of dim/numHeads.
func (a *attention) run(p *compute.Pool, out, q, k, v []float32, n, m, dim, numHeads int) {
	d := dim / numHeads
	dp, mp := round16(d), round16(m)
	kp, vt := a.kp[:numHeads*mp*dp], a.vt[:numHeads*d*mp]
	p.For(numHeads, func(lo, hi int) {
		for hd := lo; hd < hi; hd++ {
			kh, vh := kp[hd*mp*dp:(hd+1)*mp*dp], vt[hd*d*mp:(hd+1)*d*mp]
			clear(kh)
			clear(vh)
			for j := range m {
				copy(kh[j*dp:j*dp+d], k[j*dim+hd*d:j*dim+hd*d+d])
				for c, x := range v[j*dim+hd*d : j*dim+hd*d+d] {
					vh[c*mp+j] = x
				}
			}
		}
	})
	tile := fTile()
	scale := float32(1 / math.Sqrt(float64(d)))
	blocks := (n + queryBlock - 1) / queryBlock
	p.For(numHeads*blocks, func(lo, hi int) {
		sc := scratches.Get().(*scratch)
		defer scratches.Put(sc)
		sc.q = grow(sc.q, queryBlock*dp)
		sc.s = grow(sc.s, queryBlock*mp)
		var t [16]float32
		for task := lo; task < hi; task++ {
			hd, i0 := task/blocks, task%blocks*queryBlock
			nq := min(queryBlock, n-i0)
			nq4 := (nq + 3) / 4 * 4
			qb, s := sc.q[:nq4*dp], sc.s[:nq4*mp]
			clear(qb)
			for i := range nq {
				copy(qb[i*dp:i*dp+d], q[(i0+i)*dim+hd*d:(i0+i)*dim+hd*d+d])
			}
			kb := bytesOf(kp[hd*mp*dp : (hd+1)*mp*dp])
			for j0 := 0; j0 < mp; j0 += 4 {
				for i := 0; i < nq4; i += 4 {
					tile(kb, 4*dp, j0, qb, dp, i, dp, &t)
					for a := range 4 {
						copy(s[(i+a)*mp+j0:(i+a)*mp+j0+4], t[4*a:4*a+4])
					}
				}
			}
			for i := range nq {
				row := s[i*mp : i*mp+m]
				kernel.ScaleF32(row, scale)
				compute.Softmax(row)
				clear(s[i*mp+m : (i+1)*mp])
			}
			vb := bytesOf(vt[hd*d*mp : (hd+1)*d*mp])
			for c0 := 0; c0 < d; c0 += 4 {
				for i := 0; i < nq4; i += 4 {
					tile(vb, 4*mp, c0, s, mp, i, mp, &t)
					for a := range min(4, nq-i) {
						o := (i0+i+a)*dim + hd*d + c0
						copy(out[o:o+4], t[4*a:4*a+4])
					}
				}
			}
		}
	})
}

// fTile returns the F32 4×4 tile kernel: kernel.FTileFor's on this CPU,
// else tileGeneric.
func fTile() kernel.FTile {
	if t, ok := kernel.FTileFor(tensor.F32); ok {
		return t
	}
	return tileGeneric
}

// tileGeneric is kernel.FTile for F32 weights in plain Go:
// tile[i*4+r] = Σ_c W[r0+r][c]·x[i0+i][c].
func tileGeneric(w []byte, rowBytes, r0 int, x []float32, xStride, i0, cols int, tile *[16]float32) {
	wf := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w))), len(w)/4)
	rs := rowBytes / 4
	for i := range 4 {
		xr := x[(i0+i)*xStride : (i0+i)*xStride+cols]
		for r := range 4 {
			wr := wf[(r0+r)*rs : (r0+r)*rs+cols]
			var sum float32
			for c, v := range wr {
				sum += v * xr[c]
			}
			tile[i*4+r] = sum
		}
	}
}

// bytesOf views float32s as their little-endian bytes (amd64 and every
// other target Go supports with FTile kernels is little-endian; the
// generic tile reads them back the same way).
func bytesOf(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}
