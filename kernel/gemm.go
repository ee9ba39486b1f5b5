package kernel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/tensor"
)

// Matrix × matrix (prompt processing) for Q8_0 and Q4_0 weights, computed
// in tiles of 16 weight rows × 16 activation rows. Activations are
// quantized exactly as for the dot products (Q8_0 values, f16-rounded
// block scales); weights and activations are repacked so that one
// VPDPBUSD instruction advances all 16 weight rows of a tile by 4 columns
// for one activation row:
//
//	lane r += Σ_{k<4} u[r][4g+k] · x[i][4g+k]
//
// with u the weight's unsigned level (Q8_0: w+128; Q4_0: the nibble q) and
// the format's offset folded in through a per-block correction,
// Σ (u−off)·x = Σ u·x − off·Σx. Each block's integer sums are then scaled
// by dw[r]·dx[i] in float32, as in the dot products.

const (
	gemmRows   = 16             // weight rows per tile
	gemmActs   = 16             // activation rows per panel
	wRecord    = 8*64 + 16*4    // per block: 8 groups × 16 rows × 4 levels, 16 scales
	aRecord    = 16*32 + 16*4*2 // per block: 16 rows × 32 quants, 16 scales, 16 corrections
	gemmBlock  = 32
	gemmGroups = gemmBlock / 4
)

// gemmOffset is the offset of each GEMM-capable weight format.
var gemmOffset = map[tensor.DType]int32{tensor.Q8_0: 128, tensor.Q4_0: 8}

// GemmRows is the weight-row granularity of the GEMM kernels; matrices'
// remaining rows use the dot products.
const GemmRows = gemmRows

// GemmActs is the number of activation rows per GEMM panel.
const GemmActs = gemmActs

// WPack holds 16 weight rows repacked for the GEMM kernel: per block,
// levels[g][r][4] for the 8 groups of 4 columns, then the 16 row scales.
type WPack struct {
	Type   tensor.DType
	Blocks int
	Data   []byte
}

// Pack repacks rows r0..r0+15 of w (rows of rowBytes, cols columns).
func (p *WPack) Pack(wt tensor.DType, w []byte, rowBytes, r0, cols int) error {
	if _, ok := gemmOffset[wt]; !ok {
		return fmt.Errorf("kernel: no GEMM kernel for %s weights", wt)
	}
	if cols <= 0 || cols%gemmBlock != 0 || (r0+gemmRows)*rowBytes > len(w) || rowBytes < cols/gemmBlock*wt.TypeSize() {
		return fmt.Errorf("kernel: GEMM pack of rows %d..%d of %d-column %s weights over %d bytes", r0, r0+gemmRows, cols, wt, len(w))
	}
	p.Type, p.Blocks = wt, cols/gemmBlock
	p.Data = grow(p.Data, p.Blocks*wRecord)
	if packAsm(p, w, rowBytes, r0) {
		return nil
	}
	p.packGeneric(w, rowBytes, r0)
	return nil
}

// packGeneric is the specification of Pack's repacking.
func (p *WPack) packGeneric(w []byte, rowBytes, r0 int) {
	wt := p.Type
	ts := wt.TypeSize()
	for r := range gemmRows {
		row := w[(r0+r)*rowBytes:]
		for b := range p.Blocks {
			wb := row[b*ts : (b+1)*ts]
			rec := p.Data[b*wRecord : (b+1)*wRecord]
			for g := range gemmGroups {
				var v uint32
				if wt == tensor.Q8_0 {
					v = binary.LittleEndian.Uint32(wb[2+4*g:]) ^ 0x80808080
				} else {
					v = binary.LittleEndian.Uint32(wb[2+4*(g%4):]) >> (4 * (g / 4)) & 0x0f0f0f0f
				}
				binary.LittleEndian.PutUint32(rec[64*g+4*r:], v)
			}
			binary.LittleEndian.PutUint32(rec[512+4*r:], math.Float32bits(f16(wb)))
		}
	}
}

// APack holds activation rows packed for the GEMM kernel in panels of 16
// rows: per panel and block, q[16][32]int8, dx[16]float32 and
// c[16]int32 = −off·Σq.
type APack struct {
	N, Cols int
	Off     int32
	Data    []byte
}

// Panels returns the number of 16-row panels (the last may be padded).
func (p *APack) Panels() int { return (p.N + gemmActs - 1) / gemmActs }

// Reset sizes p for n rows of cols activations against weights of type wt.
func (p *APack) Reset(wt tensor.DType, n, cols int) error {
	off, ok := gemmOffset[wt]
	if !ok {
		return fmt.Errorf("kernel: no GEMM kernel for %s weights", wt)
	}
	if cols <= 0 || cols%gemmBlock != 0 || n < 0 {
		return fmt.Errorf("kernel: GEMM needs rows of a positive multiple of %d, got %d", gemmBlock, cols)
	}
	p.N, p.Cols, p.Off = n, cols, off
	p.Data = grow(p.Data, p.Panels()*cols/gemmBlock*aRecord)
	if n%gemmActs != 0 {
		// Padding rows of the last panel must be zero, not stale data.
		clear(p.Data[(p.Panels()-1)*cols/gemmBlock*aRecord:])
	}
	return nil
}

// PackRows quantizes rows [lo,hi) of x ([N][Cols]) into p. Different rows
// can be packed concurrently.
func (p *APack) PackRows(x []float32, lo, hi int) {
	var blk [34]byte
	nb := p.Cols / gemmBlock
	for i := lo; i < hi; i++ {
		pn, k := i/gemmActs, i%gemmActs
		for b := range nb {
			rec := p.Data[(pn*nb+b)*aRecord : (pn*nb+b+1)*aRecord]
			quantQ8_0(x[i*p.Cols+b*gemmBlock:], blk[:])
			copy(rec[32*k:32*k+32], blk[2:])
			s := int32(0)
			for _, q := range blk[2:] {
				s += int32(int8(q))
			}
			binary.LittleEndian.PutUint32(rec[512+4*k:], math.Float32bits(f16(blk[:])))
			binary.LittleEndian.PutUint32(rec[576+4*k:], uint32(-p.Off*s))
		}
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Gemm computes one tile: tile[i*16+r] = Σ_c W[r][c]·x[16·panel+i][c] for
// the 16 weight rows in w and the 16 activation rows of panel.
type Gemm func(w *WPack, a *APack, panel int, tile *[gemmRows * gemmActs]float32)

// GemmFor returns the fast GEMM kernel for weights of type wt, if this CPU
// has one (the generic kernel is only the specification).
func GemmFor(wt tensor.DType) (Gemm, bool) {
	if active.Name == Generic.Name {
		return nil, false
	}
	f := active.Gemm[wt]
	return f, f != nil
}

// checkGemm panics unless w and a fit together.
func checkGemm(w *WPack, a *APack, panel int) {
	if w.Blocks != a.Cols/gemmBlock || len(w.Data) < w.Blocks*wRecord || panel < 0 || panel >= a.Panels() ||
		len(a.Data) < (panel+1)*w.Blocks*aRecord || w.Blocks == 0 {
		panic(fmt.Sprintf("kernel: GEMM of %d weight blocks with %d-column activations, panel %d of %d",
			w.Blocks, a.Cols, panel, a.Panels()))
	}
}

// gemmGeneric is the specification of the GEMM kernels.
func gemmGeneric(w *WPack, a *APack, panel int, tile *[gemmRows * gemmActs]float32) {
	checkGemm(w, a, panel)
	*tile = [gemmRows * gemmActs]float32{}
	for b := range w.Blocks {
		wr := w.Data[b*wRecord:]
		ar := a.Data[(panel*w.Blocks+b)*aRecord:]
		for i := range gemmActs {
			for r := range gemmRows {
				s := int32(binary.LittleEndian.Uint32(ar[576+4*i:]))
				for g := range gemmGroups {
					for k := range 4 {
						s += int32(wr[64*g+4*r+k]) * int32(int8(ar[32*i+4*g+k]))
					}
				}
				dw := math.Float32frombits(binary.LittleEndian.Uint32(wr[512+4*r:]))
				dx := math.Float32frombits(binary.LittleEndian.Uint32(ar[512+4*i:]))
				tile[i*gemmRows+r] += float32(s) * (dw * dx)
			}
		}
	}
}
