package kernel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/tensor"
)

// The x16 layout: Q4_0 and Q8_0 weights rearranged once, at load, into
// tiles of 16 rows so that one VPDPBUSD advances all 16 rows of a tile by
// four columns against one activation row, with no per-row horizontal sum
// and one scale multiply per block for all 16 rows. The tile holds the
// same bytes per row as the GGUF blocks (Q4_0 stays 4.5 bits per weight),
// so it replaces the mapped weights rather than adding to them, and the
// same tile serves token generation (one activation row), batched decoding
// (up to 4) and prompt processing (panels of 16).
//
// A tile of 16 rows × cols columns is cols/32 units, one per block column:
//
//	Q4_0 unit (288 bytes): d [16]f16 (row r at 2r), then 4 chunks of 64
//	  bytes; chunk L byte 4r+t: low nibble = level of row r, column 8L+t;
//	  high nibble = level of row r, column 8L+4+t (levels 0..15, value
//	  level−8).
//	Q8_0 unit (544 bytes): d [16]f16, then 8 groups of 64 bytes; group g
//	  byte 4r+t = q[r][4g+t] + 128 (unsigned).
//
// Activations are quantized to Q8_0 exactly as for the dot products and
// packed in panels of Width rows (1, 4 or 16); per unit a panel holds
//
//	q [Width][32]i8, dx [Width]f32, corr [Width]i32 = −off·Σq
//
// (off = 8 for Q4_0, 128 for Q8_0), so that for row r and activation k
//
//	Σ_c w[r][c]·x[k][c] over the block = d[r]·dx[k]·(corr[k] + Σ_c u[r][c]·q[k][c]).
//
// Each row's result is accumulated over the units in order, acc += float(s)·(d·dx)
// with one rounding (FMA); every width gives the same bits for the same
// activation row.

// x16Unit is the bytes of one unit of a tile for each supported type.
var x16Unit = map[tensor.DType]int{tensor.Q4_0: 32 + 256, tensor.Q8_0: 32 + 512}

// x16Off is the level offset folded into corr.
var x16Off = map[tensor.DType]int32{tensor.Q4_0: 8, tensor.Q8_0: 128}

// X16Rows is the rows of one x16 tile.
const X16Rows = 16

// X16Supported reports whether wt has an x16 layout.
func X16Supported(wt tensor.DType) bool { _, ok := x16Unit[wt]; return ok }

// X16TileBytes is the bytes of one tile of 16 rows of cols columns (the
// same as the 16 rows in GGUF blocks).
func X16TileBytes(wt tensor.DType, cols int) int { return cols / qk * x16Unit[wt] }

// PackX16 rearranges rows r0..r0+15 of w (GGUF blocks, rows of rowBytes)
// into one tile dst of X16TileBytes(wt, cols).
func PackX16(wt tensor.DType, w []byte, rowBytes, r0, cols int, dst []byte) error {
	ub, ok := x16Unit[wt]
	if !ok {
		return fmt.Errorf("kernel: no x16 layout for %s weights", wt)
	}
	ts := wt.TypeSize()
	units := cols / qk
	if cols <= 0 || cols%qk != 0 || r0 < 0 || rowBytes < units*ts || (r0+X16Rows)*rowBytes > len(w) || len(dst) < units*ub {
		return fmt.Errorf("kernel: x16 pack of rows %d..%d of %d-column %s weights over %d bytes into %d",
			r0, r0+X16Rows, cols, wt, len(w), len(dst))
	}
	le := binary.LittleEndian
	for u := range units {
		du := dst[u*ub : (u+1)*ub]
		for r := range X16Rows {
			b := w[(r0+r)*rowBytes+u*ts:]
			du[2*r], du[2*r+1] = b[0], b[1]
			if wt == tensor.Q8_0 {
				for g := range 8 {
					le.PutUint32(du[32+64*g+4*r:], le.Uint32(b[2+4*g:])^0x80808080)
				}
				continue
			}
			// Chunk L holds columns 8L..8L+3 (low nibbles) and 8L+4..8L+7
			// (high); the block has column c < 16 in the low nibble of byte
			// c and c+16 in the high nibble of byte c (dequantQ4_0's order).
			q0, q4, q8, q12 := le.Uint32(b[2:]), le.Uint32(b[6:]), le.Uint32(b[10:]), le.Uint32(b[14:])
			const lo = 0x0f0f0f0f
			le.PutUint32(du[32+4*r:], q0&lo|(q4&lo)<<4)
			le.PutUint32(du[96+4*r:], q8&lo|(q12&lo)<<4)
			le.PutUint32(du[160+4*r:], q0>>4&lo|q4&^lo)
			le.PutUint32(du[224+4*r:], q8>>4&lo|q12&^lo)
		}
	}
	return nil
}

// XPack holds activation rows quantized and packed in panels of Width rows
// for the x16 kernels (padding rows of the last panel are zero and
// contribute nothing).
type XPack struct {
	Width   int
	N, Cols int
	off     int32
	Data    []byte
	q8      []byte // [N] Q8_0 rows: each row's quantization scratch
}

// x16Width is the panel width for n activation rows.
func x16Width(n int) int {
	switch {
	case n <= 1:
		return 1
	case n <= 4:
		return 4
	}
	return 16
}

// Panels returns the number of panels.
func (p *XPack) Panels() int { return (p.N + p.Width - 1) / p.Width }

// panelBytes is the bytes of one panel.
func (p *XPack) panelBytes() int { return p.Cols / qk * 40 * p.Width }

// Reset sizes p for n rows of cols activations against wt weights.
func (p *XPack) Reset(wt tensor.DType, n, cols int) error {
	off, ok := x16Off[wt]
	if !ok {
		return fmt.Errorf("kernel: no x16 layout for %s weights", wt)
	}
	if cols <= 0 || cols%qk != 0 || n < 0 {
		return fmt.Errorf("kernel: x16 activations of %d columns: need a positive multiple of %d", cols, qk)
	}
	p.Width, p.N, p.Cols, p.off = x16Width(n), n, cols, off
	p.Data = grow(p.Data, p.Panels()*p.panelBytes())
	p.q8 = grow(p.q8, n*cols/qk*34)
	if n%p.Width != 0 {
		clear(p.Data[(p.Panels()-1)*p.panelBytes():])
	}
	return nil
}

// PackRows quantizes rows [lo,hi) of x ([N][Cols]) into p; different rows
// can be packed concurrently.
func (p *XPack) PackRows(x []float32, lo, hi int) {
	w := p.Width
	le := binary.LittleEndian
	units := p.Cols / qk
	for i := lo; i < hi; i++ {
		pn, k := i/w, i%w
		panel := p.Data[pn*p.panelBytes():]
		blk := p.q8[i*units*34 : (i+1)*units*34] // this row's own scratch
		quantRowQ8_0(x[i*p.Cols:(i+1)*p.Cols], blk)
		for b := range units {
			rec := panel[b*40*w:]
			q := blk[34*b+2 : 34*b+34]
			copy(rec[32*k:32*k+32], q)
			sum := int32(0)
			for _, v := range q {
				sum += int32(int8(v))
			}
			le.PutUint32(rec[32*w+4*k:], math.Float32bits(f16(blk[34*b:])))
			le.PutUint32(rec[36*w+4*k:], uint32(-p.off*sum))
		}
	}
}

// X16 computes out[k*16+r] = Σ_c W[r][c]·x[Width·panel+k][c] for the 16
// rows of tile and every row k < Width of the panel (out has 16·Width
// floats).
type X16 func(wt tensor.DType, tile []byte, a *XPack, panel int, out []float32)

// X16For returns the fast x16 kernel for wt, if this CPU has one (the
// generic one is only the specification).
func X16For(wt tensor.DType) (X16, bool) {
	if active.X16 == nil || active.Name == Generic.Name || !X16Supported(wt) {
		return nil, false
	}
	return active.X16, true
}

// checkX16 panics unless tile, a, panel and out fit together; it returns
// the units and the panel's bytes.
func checkX16(wt tensor.DType, tile []byte, a *XPack, panel int, out []float32) (units int, ap []byte) {
	units = a.Cols / qk
	ub := x16Unit[wt]
	pb := a.panelBytes()
	if ub == 0 || a.off != x16Off[wt] || units == 0 || len(tile) < units*ub || panel < 0 || panel >= a.Panels() ||
		len(a.Data) < (panel+1)*pb || len(out) < 16*a.Width {
		panic(fmt.Sprintf("kernel: x16 %s tile of %d bytes with %d-column activations (width %d), panel %d of %d, %d outputs",
			wt, len(tile), a.Cols, a.Width, panel, a.Panels(), len(out)))
	}
	return units, a.Data[panel*pb : (panel+1)*pb]
}

// x16Generic is the specification of the x16 kernels.
func x16Generic(wt tensor.DType, tile []byte, a *XPack, panel int, out []float32) {
	units, ap := checkX16(wt, tile, a, panel, out)
	ub, w := x16Unit[wt], a.Width
	le := binary.LittleEndian
	clear(out[:16*w])
	for u := range units {
		wu := tile[u*ub : (u+1)*ub]
		ar := ap[u*40*w : (u+1)*40*w]
		for k := range w {
			dx := math.Float32frombits(le.Uint32(ar[32*w+4*k:]))
			for r := range X16Rows {
				s := int32(le.Uint32(ar[36*w+4*k:]))
				for c := range qk {
					s += int32(x16Level(wt, wu, r, c)) * int32(int8(ar[32*k+c]))
				}
				d := f16(wu[2*r:]) * dx
				o := &out[k*16+r]
				*o = float32(math.FMA(float64(s), float64(d), float64(*o)))
			}
		}
	}
}

// x16Level is the unsigned level of row r, column c of unit wu.
func x16Level(wt tensor.DType, wu []byte, r, c int) byte {
	g, t := c/4, c%4
	if wt == tensor.Q8_0 {
		return wu[32+64*g+4*r+t]
	}
	return wu[32+64*(g/2)+4*r+t] >> (4 * (g % 2)) & 15
}
