package kernel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/tensor"
)

// Matrix × matrix (prompt processing) in tiles of 16 weight rows × 16
// activation rows. Activations are quantized exactly as for the dot
// products (Q8_0 for Q8_0/Q4_0 weights, Q8_K for the K-quants); weights and
// activations are repacked in "units" (a block, or a K-quant sub-block)
// so that one VPDPBUSD advances all 16 weight rows of a tile by 4 columns
// for one activation row:
//
//	lane r += Σ_{k<4} u[r][4g+k] · x[i][4g+k]
//
// with u the weight's unsigned level (Q8_0: w+128, Q4_0 and Q4_K: the
// nibble, Q6_K: the 6-bit level). A constant offset is folded in through
// an integer correction per unit, Σ (u−off)·x = Σ u·x − off·Σx; a K-quant
// min through a float term. Each unit's integer sums are then scaled in
// float32:
//
//	out[i][r] += dx[i] · (s1[r]·Σ − s2[r]·Σx[i])
//
// where s1 is the unit's scale (d, or d·sc for K-quants) and s2 the min
// (dmin·m, Q4_K only). The sums equal the dot products' up to float
// rounding (they apply the same integer sums and scales in another order).

const (
	gemmRows = 16 // weight rows per tile
	gemmActs = 16 // activation rows per panel
)

// GemmRows is the weight-row granularity of the GEMM kernels; matrices'
// remaining rows use the dot products.
const GemmRows = gemmRows

// GemmActs is the number of activation rows per GEMM panel.
const GemmActs = gemmActs

// gemmLayout describes one weight format's packed records.
//
//	weight record: levels [groups][16 rows][4]u8, s1 [16]f32, s2 [16]f32 (if min)
//	activation record: q [16 rows][unit]i8, dx [16]f32, then either
//	  corr [16]i32 = −off·Σq (off > 0) or xs [16]f32 = Σq (min)
type gemmLayout struct {
	unit   int   // elements per unit
	off    int32 // constant offset of the levels (0 for Q4_K)
	min    bool  // has a per-unit min (s2, xs)
	super  int   // elements per activation quantization block (32 or 256)
	groups int
	wRec   int
	aRec   int
}

func newLayout(unit int, off int32, min bool, super int) gemmLayout {
	l := gemmLayout{unit: unit, off: off, min: min, super: super, groups: unit / 4}
	l.wRec = l.groups*64 + 64
	if min {
		l.wRec += 64
	}
	l.aRec = 16*unit + 64 + 64
	return l
}

var gemmLayouts = map[tensor.DType]gemmLayout{
	tensor.Q8_0: newLayout(32, 128, false, 32),
	tensor.Q4_0: newLayout(32, 8, false, 32),
	tensor.Q4_K: newLayout(32, 0, true, qkK),
	tensor.Q5_K: newLayout(32, 0, true, qkK),
	tensor.Q6_K: newLayout(16, 32, false, qkK),
	tensor.Q3_K: newLayout(16, 4, false, qkK),
}

func layoutFor(wt tensor.DType) (gemmLayout, error) {
	l, ok := gemmLayouts[wt]
	if !ok {
		return l, fmt.Errorf("kernel: no GEMM kernel for %s weights", wt)
	}
	return l, nil
}

// WPack holds 16 weight rows repacked for the GEMM kernel, one record per
// unit.
type WPack struct {
	Type  tensor.DType
	Units int
	Data  []byte
}

// Pack repacks rows r0..r0+15 of w (rows of rowBytes, cols columns).
func (p *WPack) Pack(wt tensor.DType, w []byte, rowBytes, r0, cols int) error {
	l, err := layoutFor(wt)
	if err != nil {
		return err
	}
	bs := wt.BlockSize()
	if cols <= 0 || cols%bs != 0 || r0 < 0 || (r0+gemmRows)*rowBytes > len(w) || rowBytes < cols/bs*wt.TypeSize() {
		return fmt.Errorf("kernel: GEMM pack of rows %d..%d of %d-column %s weights over %d bytes", r0, r0+gemmRows, cols, wt, len(w))
	}
	p.Type, p.Units = wt, cols/l.unit
	p.Data = grow(p.Data, p.Units*l.wRec)
	switch {
	case packAsm(p, w, rowBytes, r0):
	case wt == tensor.Q4_K || wt == tensor.Q5_K:
		p.packQ45K(w, rowBytes, r0)
	case wt == tensor.Q3_K:
		p.packQ3K(w, rowBytes, r0)
	case wt == tensor.Q6_K:
		p.packQ6K(w, rowBytes, r0)
	default:
		p.packGeneric(w, rowBytes, r0)
	}
	return nil
}

// packQ45K is packGeneric specialised for Q4_K and Q5_K (same output,
// tested).
func (p *WPack) packQ45K(w []byte, rowBytes, r0 int) {
	const wRec = 640
	le := binary.LittleEndian
	ts, qsOff := 144, 16
	if p.Type == tensor.Q5_K {
		ts, qsOff = 176, 48
	}
	for r := range gemmRows {
		row := w[(r0+r)*rowBytes:]
		for b := range p.Units / 8 {
			wb := row[b*ts : b*ts+ts]
			d, dmin := f16(wb), f16(wb[2:])
			units := p.Data[b*8*wRec : (b+1)*8*wRec]
			for j := range 8 {
				rec := units[j*wRec : (j+1)*wRec]
				sc, m := scaleMinK4(j, wb[4:16])
				le.PutUint32(rec[512+4*r:], math.Float32bits(d*float32(sc)))
				le.PutUint32(rec[576+4*r:], math.Float32bits(dmin*float32(m)))
				qs := wb[qsOff+32*(j/2) : qsOff+32*(j/2)+32]
				shift := uint(4 * (j % 2))
				if p.Type == tensor.Q5_K {
					qh := wb[16:48]
					for g := range 8 {
						hi := le.Uint32(qh[4*g:]) >> uint(j) & 0x01010101
						le.PutUint32(rec[64*g+4*r:], le.Uint32(qs[4*g:])>>shift&0x0f0f0f0f|hi<<4)
					}
					continue
				}
				for g := range 8 {
					le.PutUint32(rec[64*g+4*r:], le.Uint32(qs[4*g:])>>shift&0x0f0f0f0f)
				}
			}
		}
	}
}

// packScalesK writes the per-unit scales and mins of Q4_K/Q5_K rows (the
// levels are gathered separately).
func (p *WPack) packScalesK(w []byte, rowBytes, r0 int) {
	const wRec = 640
	le := binary.LittleEndian
	ts := p.Type.TypeSize()
	for r := range gemmRows {
		row := w[(r0+r)*rowBytes:]
		for b := range p.Units / 8 {
			wb := row[b*ts : b*ts+ts]
			d, dmin := f16(wb), f16(wb[2:])
			units := p.Data[b*8*wRec : (b+1)*8*wRec]
			for j := range 8 {
				sc, m := scaleMinK4(j, wb[4:16])
				le.PutUint32(units[j*wRec+512+4*r:], math.Float32bits(d*float32(sc)))
				le.PutUint32(units[j*wRec+576+4*r:], math.Float32bits(dmin*float32(m)))
			}
		}
	}
}

// packQ3K is packGeneric specialised for Q3_K (same output, tested).
func (p *WPack) packQ3K(w []byte, rowBytes, r0 int) {
	const wRec = 320
	le := binary.LittleEndian
	for r := range gemmRows {
		row := w[(r0+r)*rowBytes:]
		for b := range p.Units / 16 {
			wb := row[b*110 : b*110+110]
			d := f16(wb[108:])
			units := p.Data[b*16*wRec : (b+1)*16*wRec]
			for j := range 16 {
				rec := units[j*wRec : (j+1)*wRec]
				le.PutUint32(rec[256+4*r:], math.Float32bits(d*float32(scaleQ3K(j, wb[96:108]))))
				n, k, h := j/8, j%8/2, j%2
				qs := wb[32+32*n+16*h : 32+32*n+16*h+16]
				hm := wb[16*h : 16*h+16]
				ls, hs := uint(2*k), uint(4*n+k)
				for g := range 4 {
					lo := le.Uint32(qs[4*g:]) >> ls & 0x03030303
					hi := le.Uint32(hm[4*g:]) >> hs & 0x01010101
					le.PutUint32(rec[64*g+4*r:], lo|hi<<2)
				}
			}
		}
	}
}

// packQ6K is packGeneric specialised for Q6_K (same output, tested).
func (p *WPack) packQ6K(w []byte, rowBytes, r0 int) {
	const wRec = 320
	le := binary.LittleEndian
	for r := range gemmRows {
		row := w[(r0+r)*rowBytes:]
		for b := range p.Units / 16 {
			wb := row[b*210 : b*210+210]
			d := f16(wb[208:])
			units := p.Data[b*16*wRec : (b+1)*16*wRec]
			for j := range 16 {
				rec := units[j*wRec : (j+1)*wRec]
				le.PutUint32(rec[256+4*r:], math.Float32bits(d*float32(int8(wb[192+j]))))
				n, k, h := j/8, j%8/2, j%2
				ql := wb[64*n+32*(k&1)+16*h : 64*n+32*(k&1)+16*h+16]
				qh := wb[128+32*n+16*h : 128+32*n+16*h+16]
				ls, hs := uint(4*(k>>1)), uint(2*k)
				for g := range 4 {
					lo := le.Uint32(ql[4*g:]) >> ls & 0x0f0f0f0f
					hi := le.Uint32(qh[4*g:]) >> hs & 0x03030303
					le.PutUint32(rec[64*g+4*r:], lo|hi<<4)
				}
			}
		}
	}
}

// packGeneric is the specification of Pack's repacking.
func (p *WPack) packGeneric(w []byte, rowBytes, r0 int) {
	l := gemmLayouts[p.Type]
	ts, bs := p.Type.TypeSize(), p.Type.BlockSize()
	perBlock := bs / l.unit // units per weight block
	for r := range gemmRows {
		row := w[(r0+r)*rowBytes:]
		for b := range p.Units / perBlock {
			wb := row[b*ts : (b+1)*ts]
			for j := range perBlock {
				rec := p.Data[(b*perBlock+j)*l.wRec:]
				s1, s2 := unitScales(p.Type, wb, j)
				binary.LittleEndian.PutUint32(rec[l.groups*64+4*r:], math.Float32bits(s1))
				if l.min {
					binary.LittleEndian.PutUint32(rec[l.groups*64+64+4*r:], math.Float32bits(s2))
				}
				for g := range l.groups {
					binary.LittleEndian.PutUint32(rec[64*g+4*r:], unitLevels(p.Type, wb, j, g))
				}
			}
		}
	}
}

// unitScales returns unit j's scale and min of weight block wb.
func unitScales(wt tensor.DType, wb []byte, j int) (s1, s2 float32) {
	switch wt {
	case tensor.Q4_K, tensor.Q5_K:
		sc, m := scaleMinK4(j, wb[4:16])
		return f16(wb) * float32(sc), f16(wb[2:]) * float32(m)
	case tensor.Q3_K:
		return f16(wb[108:]) * float32(scaleQ3K(j, wb[96:108])), 0
	case tensor.Q6_K:
		return f16(wb[208:]) * float32(int8(wb[192+j])), 0
	}
	return f16(wb), 0
}

// unitLevels returns the four unsigned levels 4g..4g+3 of unit j of block
// wb, packed little-endian.
func unitLevels(wt tensor.DType, wb []byte, j, g int) uint32 {
	le := binary.LittleEndian.Uint32
	switch wt {
	case tensor.Q8_0:
		return le(wb[2+4*g:]) ^ 0x80808080
	case tensor.Q4_0:
		return le(wb[2+4*(g%4):]) >> (4 * (g / 4)) & 0x0f0f0f0f
	case tensor.Q4_K:
		return le(wb[16+32*(j/2)+4*g:]) >> (4 * (j % 2)) & 0x0f0f0f0f
	case tensor.Q5_K:
		lo := le(wb[48+32*(j/2)+4*g:]) >> (4 * (j % 2)) & 0x0f0f0f0f
		hi := le(wb[16+4*g:]) >> j & 0x01010101
		return lo | hi<<4
	case tensor.Q3_K:
		// Unit j (16 elements) is in quarter k of half n; u = q + 4 with the
		// high bit from hmask (see dequantQ3K).
		n, k, h := j/8, j%8/2, j%2
		lo := le(wb[32+32*n+16*h+4*g:]) >> (2 * k) & 0x03030303
		hi := le(wb[16*h+4*g:]) >> (4*n + k) & 0x01010101
		return lo | hi<<2
	case tensor.Q6_K:
		// Unit j (16 elements) is quarter k of half n, second half of the
		// quarter when j is odd (see q6KLevel).
		n, k, h := j/8, j%8/2, j%2
		lo := le(wb[64*n+32*(k&1)+16*h+4*g:]) >> (4 * (k >> 1)) & 0x0f0f0f0f
		hi := le(wb[128+32*n+16*h+4*g:]) >> (2 * k) & 0x03030303
		return lo | hi<<4
	}
	panic("kernel: unitLevels of " + wt.String())
}

// APack holds activation rows packed for the GEMM kernel in panels of 16
// rows, one record per unit.
type APack struct {
	Type    tensor.DType
	N, Cols int
	Data    []byte
}

// Panels returns the number of 16-row panels (the last may be padded).
func (p *APack) Panels() int { return (p.N + gemmActs - 1) / gemmActs }

// Reset sizes p for n rows of cols activations against weights of type wt.
func (p *APack) Reset(wt tensor.DType, n, cols int) error {
	l, err := layoutFor(wt)
	if err != nil {
		return err
	}
	if cols <= 0 || cols%l.super != 0 || n < 0 {
		return fmt.Errorf("kernel: GEMM for %s needs rows of a positive multiple of %d, got %d", wt, l.super, cols)
	}
	p.Type, p.N, p.Cols = wt, n, cols
	units := cols / l.unit
	p.Data = grow(p.Data, p.Panels()*units*l.aRec)
	if n%gemmActs != 0 {
		// Padding rows of the last panel must be zero, not stale data.
		clear(p.Data[(p.Panels()-1)*units*l.aRec:])
	}
	return nil
}

// PackRows quantizes rows [lo,hi) of x ([N][Cols]) into p. Different rows
// can be packed concurrently.
func (p *APack) PackRows(x []float32, lo, hi int) {
	l := gemmLayouts[p.Type]
	units := p.Cols / l.unit
	var blk [292]byte
	vt := tensor.Q8_0
	if l.super == qkK {
		vt = tensor.Q8_K
	}
	for i := lo; i < hi; i++ {
		pn, k := i/gemmActs, i%gemmActs
		for s := 0; s < p.Cols; s += l.super {
			var dx float32
			var qs []byte
			if vt == tensor.Q8_0 {
				quantRowQ8_0(x[i*p.Cols+s:i*p.Cols+s+qk], blk[:34])
				dx, qs = f16(blk[:]), blk[2:34]
			} else {
				quantQ8K(x[i*p.Cols+s:], blk[:])
				dx, qs = math.Float32frombits(binary.LittleEndian.Uint32(blk[:])), blk[4:260]
			}
			for u := 0; u < l.super/l.unit; u++ {
				rec := p.Data[(pn*units+(s/l.unit)+u)*l.aRec:]
				q := qs[u*l.unit : (u+1)*l.unit]
				copy(rec[l.unit*k:], q)
				sum := int32(0)
				for _, v := range q {
					sum += int32(int8(v))
				}
				binary.LittleEndian.PutUint32(rec[16*l.unit+4*k:], math.Float32bits(dx))
				third := uint32(-l.off * sum)
				if l.min {
					third = math.Float32bits(float32(sum))
				}
				binary.LittleEndian.PutUint32(rec[16*l.unit+64+4*k:], third)
			}
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
func checkGemm(w *WPack, a *APack, panel int) gemmLayout {
	l := gemmLayouts[w.Type]
	if w.Type != a.Type || w.Units != a.Cols/max(l.unit, 1) || len(w.Data) < w.Units*l.wRec || panel < 0 ||
		panel >= a.Panels() || len(a.Data) < (panel+1)*w.Units*l.aRec || w.Units == 0 {
		panic(fmt.Sprintf("kernel: GEMM of %d %s weight units with %d-column %s activations, panel %d of %d",
			w.Units, w.Type, a.Cols, a.Type, panel, a.Panels()))
	}
	return l
}

// gemmGeneric is the specification of the GEMM kernels.
func gemmGeneric(w *WPack, a *APack, panel int, tile *[gemmRows * gemmActs]float32) {
	l := checkGemm(w, a, panel)
	*tile = [gemmRows * gemmActs]float32{}
	f32 := func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
	for u := range w.Units {
		wr := w.Data[u*l.wRec:]
		ar := a.Data[(panel*w.Units+u)*l.aRec:]
		for i := range gemmActs {
			for r := range gemmRows {
				s := int32(0)
				if !l.min {
					s = int32(binary.LittleEndian.Uint32(ar[16*l.unit+64+4*i:]))
				}
				for g := range l.groups {
					for k := range 4 {
						s += int32(wr[64*g+4*r+k]) * int32(int8(ar[l.unit*i+4*g+k]))
					}
				}
				t := float32(s) * f32(wr[l.groups*64+4*r:])
				if l.min {
					t -= f32(wr[l.groups*64+64+4*r:]) * f32(ar[16*l.unit+64+4*i:])
				}
				tile[i*gemmRows+r] += t * f32(ar[16*l.unit+4*i:])
			}
		}
	}
}
