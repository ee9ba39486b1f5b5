package kernel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/tensor"
)

// Matrix × matrix (prompt processing) for Q8_0 and Q4_0 weights. The
// activations are quantized exactly as for the dot products (Q8_0 values
// and f16-rounded block scales) but packed for reuse: quants contiguous per
// row, block scales as float32, and per 4 quants a correction that folds
// the weight format's offset into the integer sum:
//
//	Σ (u−off)·x = Σ u·x + (−off·Σx),  u = unsigned weight level
//
// (u = q for Q4_0 with off 8; u = w+128 for Q8_0 with off 128), so the
// inner loop needs only unsigned×signed byte products (VPDPBUSD).

// Q8Pack is a set of activation rows packed for the tile kernels. Rows
// are grouped by four; each group stores, for every pair of blocks (64
// activations), a record of packRecord bytes:
//
//	q [4][64]int8    at 0     quants of the group's four rows
//	c [4][16]int32   at 256   −Off·Σ of each 4 quants
//	d [4][2]float32  at 512   the two block scales of each row
//
// so a tile kernel walks one pointer through the group.
type Q8Pack struct {
	N, Cols int
	Off     int32 // the weight format's offset folded into c
	Data    []byte
}

const packRecord = 4*64 + 4*64 + 4*8

// gemmOffset is the offset of each tile-capable weight format.
var gemmOffset = map[tensor.DType]int32{tensor.Q8_0: 128, tensor.Q4_0: 8}

// GemmCols is the column granularity of the tile kernels: rows must be a
// multiple of 64 elements (two blocks per step).
const GemmCols = 64

// Groups returns the number of 4-row groups (the last may be padding).
func (p *Q8Pack) Groups() int { return (p.N + 3) / 4 }

// Reset sizes p for n rows of cols activations against weights of type
// wt, reusing its buffer.
func (p *Q8Pack) Reset(wt tensor.DType, n, cols int) error {
	off, ok := gemmOffset[wt]
	if !ok {
		return fmt.Errorf("kernel: no GEMM kernel for %s weights", wt)
	}
	if cols <= 0 || cols%GemmCols != 0 || n < 0 {
		return fmt.Errorf("kernel: GEMM needs rows of a positive multiple of %d, got %d", GemmCols, cols)
	}
	p.N, p.Cols, p.Off = n, cols, off
	size := p.Groups() * cols / GemmCols * packRecord
	if cap(p.Data) < size {
		p.Data = make([]byte, size)
	}
	p.Data = p.Data[:size]
	if n%4 != 0 {
		// Padding rows of the last group must be zero (their outputs are
		// discarded, but they must not be NaN garbage).
		g := p.Groups() - 1
		clear(p.Data[g*cols/GemmCols*packRecord:])
	}
	return nil
}

// PackRows quantizes rows [lo,hi) of x ([N][Cols]) into p, which Reset
// sized. Different rows can be packed concurrently.
func (p *Q8Pack) PackRows(x []float32, lo, hi int) {
	var blk [34]byte
	pairs := p.Cols / GemmCols
	for i := lo; i < hi; i++ {
		g, k := i/4, i%4
		for pr := range pairs {
			rec := p.Data[(g*pairs+pr)*packRecord : (g*pairs+pr+1)*packRecord]
			for h := range 2 {
				quantQ8_0(x[i*p.Cols+pr*GemmCols+h*qk:], blk[:])
				q := rec[64*k+32*h : 64*k+32*h+32]
				copy(q, blk[2:])
				for j := range 8 {
					s := int32(int8(q[4*j])) + int32(int8(q[4*j+1])) + int32(int8(q[4*j+2])) + int32(int8(q[4*j+3]))
					binary.LittleEndian.PutUint32(rec[256+64*k+32*h+4*j:], uint32(-p.Off*s))
				}
				binary.LittleEndian.PutUint32(rec[512+8*k+4*h:], math.Float32bits(f16(blk[:])))
			}
		}
	}
}

// Tile computes the 4×4 tile of x·Wᵀ for weight rows r0..r0+3 (w holds
// the matrix, rows of rowBytes) and activation group g of a:
// tile[i*4+r] = Σ_c W[r0+r][c]·x[4g+i][c].
type Tile func(w []byte, rowBytes, r0 int, a *Q8Pack, g int, tile *[16]float32)

// TileFor returns the fast tile kernel for weights of type wt, if this CPU
// has one (the generic tile is only the specification).
func TileFor(wt tensor.DType) (Tile, bool) {
	if active.Name == Generic.Name {
		return nil, false
	}
	f := active.Tile[wt]
	return f, f != nil
}

// tileGeneric is the specification of the tile kernels.
func tileGeneric(wt tensor.DType) Tile {
	return func(w []byte, rowBytes, r0 int, a *Q8Pack, g int, tile *[16]float32) {
		pairs := a.Cols / GemmCols
		ts := wt.TypeSize()
		for i := range 4 {
			for r := range 4 {
				row := w[(r0+r)*rowBytes : (r0+r+1)*rowBytes]
				var sum float32
				for pr := range pairs {
					rec := a.Data[(g*pairs+pr)*packRecord:]
					for h := range 2 {
						wb := row[(2*pr+h)*ts : (2*pr+h+1)*ts]
						s := int32(0)
						for j := range qk {
							if j%4 == 0 {
								s += int32(binary.LittleEndian.Uint32(rec[256+64*i+32*h+j:]))
							}
							s += unsignedLevel(wt, wb, j) * int32(int8(rec[64*i+32*h+j]))
						}
						dx := math.Float32frombits(binary.LittleEndian.Uint32(rec[512+8*i+4*h:]))
						sum += float32(s) * dx * f16(wb)
					}
				}
				tile[i*4+r] = sum
			}
		}
	}
}

// unsignedLevel is weight j of block wb as the unsigned level u.
func unsignedLevel(wt tensor.DType, wb []byte, j int) int32 {
	if wt == tensor.Q8_0 {
		return int32(int8(wb[2+j])) + 128
	}
	if j < 16 {
		return int32(wb[2+j] & 0xf)
	}
	return int32(wb[2+j-16] >> 4)
}
