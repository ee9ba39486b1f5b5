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
//	Q4_0 unit (288 bytes): d [16]f16 (row r at 2r) and 4 chunks of 64
//	  bytes; chunk L byte 4r+t: low nibble = level of row r, column 8L+t;
//	  high nibble = level of row r, column 8L+4+t (levels 0..15, value
//	  level−8). Units go in pairs of 576 bytes (9 cache lines): both
//	  units' d (one line), then both units' chunks, each on a 64-byte
//	  boundary (the K-quants' pairs); an odd tile's last unit is its d,
//	  then its chunks. Unpaired (d, chunks per unit), every other unit's
//	  chunk loads straddled two cache lines (docs/BENCHMARKS.md, session
//	  15).
//	Q8_0 unit (544 bytes, paired as Q4_0's: 1088 bytes, 17 lines): d
//	  [16]f16 and 8 groups of 64 bytes; group g byte 4r+t = q[r][4g+t] +
//	  128 (unsigned).
//	Q5_0 unit (352 bytes, paired as Q4_0's: 704 bytes, 11 lines): Q4_0's,
//	  then a 64-byte chunk of fifth bits (byte 4r+t holds in bit g that of
//	  column 4g+t): levels 0..31, value level−16.
//	Q4_1 unit (320 bytes): d [16]f16, m [16]f16, then Q4_0's four chunks:
//	  value d·level + m.
//	Q5_1 unit (384 bytes): Q4_1's, then Q5_0's chunk of fifth bits.
//	IQ4_NL unit (288 bytes, paired as Q4_0's): Q4_0's, the nibbles being indices into the
//	  IQ4 table (quant_iq4.go); the kernels look each level up as
//	  kv[nibble]+128 (unsigned), with offset 128.
//	MXFP4 unit (272 bytes, as the 16 rows' GGUF blocks): e [16]u8 (the
//	  E8M0 scale bytes, row r at r) and IQ4_NL's four chunks of indices
//	  into the MXFP4 table (quant_mxfp4.go), looked up as kv[nibble]+128
//	  with offset 128; scale d = 2^(e−128). Units go in fours of 1088
//	  bytes (17 lines): the four units' e (one line), then their chunks; a
//	  tile's last one to three units are the same, their line of e padded.
//	  A byte a row keeps every E8M0 scale exact, where a f16 d holds
//	  2^(e−128) only for e in 104..143, and the unit no larger than GGUF's.
//	IQ4_XS super-unit of 256 columns (2208 bytes, 32 more than the 16
//	  rows' GGUF blocks, paired as Q6_K's): d [16]f16, then two groups of
//	  four units of 32 columns: 64 bytes of scales, per unit ls−32 as
//	  [16]i8, then per unit IQ4_NL's four chunks of indices; value
//	  d·(ls−32)·kv[nibble], Q6_K's arithmetic with one scale for both
//	  halves and offset 128.
//	Q4_K super-unit of 256 columns (2368 bytes, 64 more than the 16 rows'
//	  GGUF blocks): d [16]f16, dmin [16]f16, then four pairs of sub-blocks
//	  of 32 columns. A pair is 64 bytes of scales, per sub-block sc [16]u8
//	  and m [16]u8 (the 6-bit scale and min of row r at r and 16+r,
//	  unpacked), then per sub-block four chunks laid out as Q4_0's (value
//	  d·sc·level − dmin·m).
//	Q5_K super-unit of 256 columns (2880 bytes, 2.3 % more than GGUF): as
//	  Q4_K's, but each sub-block's four chunks of low nibbles are followed
//	  by a 64-byte chunk of fifth bits: byte 4r+t holds in bit g the fifth
//	  bit of column 4g+t.
//	Q6_K super-unit of 256 columns (3360 bytes, as the GGUF blocks): d
//	  [16]f16, then four pairs of units of 32 columns: 64 bytes of scales,
//	  per unit those of its two halves of 16 columns (sc [2][16]i8, row r at
//	  16h+r), then per unit the low four bits of the levels as Q4_0's chunks
//	  (256 bytes) and their high two bits in two 64-byte chunks: chunk H
//	  byte 4r+t holds in bits 2i..2i+1 the high bits of column 16H+4i+t
//	  (value d·sc·(level−32)). Super-units go in pairs (superAt): both
//	  heads (d, one line), then both bodies (the four pairs of units), so
//	  that with a 32-byte head the level chunks stay on 64-byte
//	  boundaries; an odd tile's last super-unit is its head, then its body.
//	  Unpaired, every other super-unit's chunk loads straddled two cache
//	  lines (docs/BENCHMARKS.md, session 16).
//	Q3_K super-unit of 256 columns (1824 bytes, 64 more than the 16 rows'
//	  GGUF blocks): d [16]f16, then four pairs of units of 32 columns: 64
//	  bytes of scales, per unit those of its two halves of 16 columns
//	  (sc−32 as [2][16]i8, row r at 16h+r), then per unit the low two bits
//	  of the levels in two 64-byte chunks (chunk H byte 4r+t holds in bits
//	  2i..2i+1 those of column 16H+4i+t) and their high bit in one (byte
//	  4r+t holds in bit g that of column 4g+t): levels 0..7, value
//	  d·(sc−32)·(level−4), Q6_K's arithmetic with offset 4; paired as
//	  Q6_K's.
//	Q2_K super-unit of 256 columns (1344 bytes, as the GGUF blocks): d
//	  [16]f16, dmin [16]f16, then four pairs of units of 32 columns: 64
//	  bytes of scales, per unit its two halves' GGUF scale bytes (scale in
//	  the low nibble, min in the high one, [2][16]u8, row r at 16h+r), then
//	  per unit the levels (0..3) in two 64-byte chunks laid out as Q3_K's
//	  low bits: value d·sc·level − dmin·m, Q4_K's arithmetic per 16
//	  columns.
//
// A sub-block's scales sit just before its levels, so that a kernel reads
// each tile in order: with all eight sub-blocks' scales at the head of the
// super-unit, the memory-bound Q4_K matrix × vector streamed 1.1–1.2×
// slower (docs/BENCHMARKS.md, session 6). Pairs keep the level chunks on
// 64-byte boundaries.
//
// Activations are quantized to Q8_0 exactly as for the dot products and
// packed in panels of Width rows (1, 2, 4 or 16); per unit a panel holds
//
//	q [Width][32]i8, dx [Width]f32, corr [Width]i32 = −off·Σq
//
// (off = 8 for Q4_0, 16 for Q5_0, 128 for Q8_0), so that for row r and
// activation k
//
//	Σ_c w[r][c]·x[k][c] over the block = d[r]·dx[k]·(corr[k] + Σ_c u[r][c]·q[k][c]).
//
// For Q4_1 and Q5_1 the third field is Q8_1's s: float32(Σq)·d (d before
// its rounding to f16) rounded to f16, as float32, and acc = fma(d·dx,
// float(Σ u·q), acc), then acc = fma(m, s, acc).
//
// For Q4_K the activations are quantized to Q8_K (one dx per 256 columns,
// repeated in each unit) and the third field is the float dx·Σq of the
// unit, so that with s1 = d·sc and s2 = dmin·m of the row's sub-block
//
//	Σ_c w[r][c]·x[k][c] over the unit = s1[r]·dx[k]·Σ_c u[r][c]·q[k][c] − s2[r]·(dx·Σq)[k],
//
// accumulated as acc = fma(s1·dx, float(Σ), acc), then acc −= s2·(dx·Σq).
// For Q6_K and Q3_K (Q8_K activations) each unit's halves of 16 columns
// have their own scale and correction: the record is 44 bytes per row, q,
// dx, then corr = −off·Σq of each half, and acc = fma(s1a·dx, float(Σa),
// acc), then the same for the second half. Q2_K's halves have a scale and
// a min each: the record holds dx·Σq of each half (as float32), and per
// half acc = fma(s1·dx, float(Σ), acc), then acc −= s2·(dx·Σq).
//
// Each row's result is accumulated over the units in order, acc += float(s)·(d·dx)
// with one rounding (FMA); every width gives the same bits for the same
// activation row.

// x16Layout describes one type's tiles.
type x16Layout struct {
	cols  int       // columns per record (a block, or a Q4_K super-block)
	rec   int       // bytes of one record of 16 rows
	head  int       // K-quants: bytes before the first pair of sub-blocks
	lev   int       // K-quants: level bytes of one sub-block (32 columns)
	off   int32     // level offset folded into corr (0 with a min)
	min   bool      // Q4_K: sub-block scales and mins (Q4_1, Q5_1: a min per block)
	k     bool      // Q8_K activations (one dx per 256 columns)
	halve bool      // Q6_K, Q3_K, Q2_K: a scale and a correction (Q2_K: a min) per 16 columns
	scb   int       // K-quants: bytes of one sub-block's scales (0: 32, a scale and a min or two halves' scales)
	table *[16]int8 // IQ4, MXFP4: the stored levels are indices into this table (nil: they are the levels)
	pair  bool      // Q4_0, IQ4_NL, Q8_0, Q5_0: units in pairs, both scales then both units' levels (unitAt)
	quad  bool      // MXFP4: units in fours, E8M0 scale bytes (unitAt)
	spair bool      // Q6_K, Q3_K, IQ4_XS: super-units in pairs, both heads then both bodies (superAt)
	group int       // K-quants: sub-blocks whose scales share a cache line (0: 2; IQ4_XS: 4)
}

// unitAt returns where unit u of a tile keeps its 32 bytes of scales and
// its levels (Q4_0, IQ4_NL: 256 bytes of chunks; Q8_0: 512 of groups;
// Q5_0: 320), in a paired layout: a pair is both units' scales (one cache
// line), then both units' levels; an odd tile's last unit is its scales,
// 32 bytes of padding, then its levels (tileBytes). In MXFP4's layout of
// fours, a four is its units' 16 bytes of scales (one line), then their
// levels; a tile's last one to three units are the same with the line of
// scales padded.
func (l x16Layout) unitAt(u int) (scales, levels int) {
	if l.quad {
		lev := l.rec - 16
		p := u / 4 * 4 * l.rec
		return p + 16*(u%4), p + 64 + lev*(u%4)
	}
	lev := l.rec - 32 // a unit's level bytes
	p := u / 2 * 2 * l.rec
	if u%2 == 1 {
		return p + 32, p + 64 + lev
	}
	return p, p + 64
}

// tileBytes is the bytes of a tile of recs records: with records in pairs
// (each 32 bytes more than whole cache lines), an odd tile's last record
// is padded by 32 bytes to keep its levels, and every tile, on 64-byte
// boundaries; with records in fours (16 bytes more each), the line of
// scales of a last one to three is padded.
func (l x16Layout) tileBytes(recs int) int {
	if l.quad && recs%4 != 0 {
		return recs*l.rec + 64 - 16*(recs%4)
	}
	if (l.pair || l.spair) && recs%2 == 1 {
		return recs*l.rec + 32
	}
	return recs * l.rec
}

// superAt returns where super-unit s of a tile keeps its head (l.head
// bytes: d, and dmin) and its body (the groups of sub-blocks, subK). With
// l.spair (heads of 32 bytes) super-units go in pairs: both heads (one
// cache line), then both bodies, so that every level load is 64-byte
// aligned; an odd tile's last super-unit is its head, 32 bytes of padding,
// then its body (tileBytes).
func (l x16Layout) superAt(s int) (head, body int) {
	p := s * l.rec
	if !l.spair {
		return p, p + l.head
	}
	p = s / 2 * 2 * l.rec
	if s%2 == 1 {
		return p + l.head, p + l.rec + l.head
	}
	return p, p + 2*l.head
}

// subK returns where sub-block j's scales (32 bytes, or l.scb) and its
// levels start in a K-quant body (superAt): groups of l.group sub-blocks
// (2 if 0), all the group's scales (one cache line) then their levels.
func (l x16Layout) subK(j int) (scales, levels int) {
	scb, g := l.scb, l.group
	if scb == 0 {
		scb = 32
	}
	if g == 0 {
		g = 2
	}
	grp := j / g * (g*scb + g*l.lev)
	return grp + scb*(j%g), grp + g*scb + l.lev*(j%g)
}

// actRec is the bytes per activation row of one unit's record.
func (l x16Layout) actRec() int {
	if l.halve {
		return 44
	}
	return 40
}

var x16Layouts = map[tensor.DType]x16Layout{
	tensor.Q4_0:   {cols: qk, rec: 32 + 256, off: 8, pair: true},
	tensor.Q8_0:   {cols: qk, rec: 32 + 512, off: 128, pair: true},
	tensor.Q5_0:   {cols: qk, rec: 32 + 256 + 64, off: 16, pair: true},
	tensor.IQ4_NL: {cols: qk, rec: 32 + 256, off: 128, table: &iq4Values, pair: true},
	tensor.IQ4_XS: {cols: qkK, rec: 32 + 8*(16+256), head: 32, lev: 256, scb: 16, off: 128, k: true, halve: true, table: &iq4Values, spair: true, group: 4},
	tensor.MXFP4:  {cols: qk, rec: 16 + 256, off: 128, table: &mxfp4Values, quad: true},
	tensor.Q4_1:   {cols: qk, rec: 64 + 256, min: true},
	tensor.Q5_1:   {cols: qk, rec: 64 + 256 + 64, min: true},
	tensor.Q4_K:   {cols: qkK, rec: 64 + 8*288, head: 64, lev: 256, min: true, k: true},
	tensor.Q5_K:   {cols: qkK, rec: 64 + 8*352, head: 64, lev: 320, min: true, k: true},
	tensor.Q6_K:   {cols: qkK, rec: 32 + 8*416, head: 32, lev: 384, off: 32, k: true, halve: true, spair: true},
	tensor.Q3_K:   {cols: qkK, rec: 32 + 8*224, head: 32, lev: 192, off: 4, k: true, halve: true, spair: true},
	tensor.Q2_K:   {cols: qkK, rec: 64 + 8*160, head: 64, lev: 128, min: true, k: true, halve: true},
}

// X16Rows is the rows of one x16 tile.
const X16Rows = 16

// X16Supported reports whether wt has an x16 layout.
func X16Supported(wt tensor.DType) bool { _, ok := x16Layouts[wt]; return ok }

// X16TileBytes is the bytes of one tile of 16 rows of cols columns (the
// same as the 16 rows in GGUF blocks; 2.8 % more for Q4_K; 32 more for an
// odd number of paired records, tileBytes).
func X16TileBytes(wt tensor.DType, cols int) int {
	l := x16Layouts[wt]
	if l.cols == 0 {
		return 0
	}
	return l.tileBytes(cols / l.cols)
}

// PackX16 rearranges rows r0..r0+15 of w (GGUF blocks, rows of rowBytes)
// into one tile dst of X16TileBytes(wt, cols). Only the first cols columns
// of each row are read, so w starting at a row's block of column c packs
// the column panel c..c+cols−1 (see X16Cols).
func PackX16(wt tensor.DType, w []byte, rowBytes, r0, cols int, dst []byte) error {
	l, ok := x16Layouts[wt]
	if !ok {
		return fmt.Errorf("kernel: no x16 layout for %s weights", wt)
	}
	ts := wt.TypeSize()
	recs := cols / l.cols
	if cols <= 0 || cols%l.cols != 0 || r0 < 0 || rowBytes < recs*ts || (r0+X16Rows-1)*rowBytes+recs*ts > len(w) || len(dst) < l.tileBytes(recs) {
		return fmt.Errorf("kernel: x16 pack of rows %d..%d of %d-column %s weights over %d bytes into %d",
			r0, r0+X16Rows, cols, wt, len(w), len(dst))
	}
	dst = dst[:l.tileBytes(recs)]
	if recs%2 == 1 && (l.pair || l.spair) {
		clear(dst[(recs-1)*l.rec+32:][:32]) // the last record's padding
	}
	if r := recs % 4; r != 0 && l.quad {
		clear(dst[recs/4*4*l.rec+16*r:][:64-16*r]) // the last line of scales' padding
	}
	for r := range X16Rows {
		row := w[(r0+r)*rowBytes:][:recs*ts]
		switch wt {
		case tensor.Q8_0:
			packQ8_0(row, dst, r)
		case tensor.Q4_0, tensor.IQ4_NL: // the same nibbles and d
			packQ4_0(row, dst, r)
		case tensor.IQ4_XS:
			packIQ4XS(l, row, dst, r)
		case tensor.MXFP4:
			packMXFP4(row, dst, r)
		case tensor.Q5_0, tensor.Q4_1, tensor.Q5_1:
			packQ451(wt, row, dst, r)
		case tensor.Q4_K, tensor.Q5_K:
			packQ45K(l, row, dst, r)
		case tensor.Q6_K:
			packQ6K(l, row, dst, r)
		case tensor.Q3_K:
			packQ3K(l, row, dst, r)
		case tensor.Q2_K:
			packQ2K(l, row, dst, r)
		}
	}
	return nil
}

// The pack functions put row r's blocks, in order, into the records of
// their units in dst (each record 16 rows of one block or super-block).

func packQ8_0(row, dst []byte, r int) {
	const ts = 34
	le := binary.LittleEndian
	l := x16Layouts[tensor.Q8_0]
	for u := range len(row) / ts {
		b := row[u*ts : u*ts+ts]
		so, lo := l.unitAt(u)
		dst[so+2*r], dst[so+2*r+1] = b[0], b[1]
		for g := range 8 {
			le.PutUint32(dst[lo+64*g+4*r:], le.Uint32(b[2+4*g:])^0x80808080)
		}
	}
}

func packQ4_0(row, dst []byte, r int) {
	const ts = 18
	l := x16Layouts[tensor.Q4_0]
	for u := range len(row) / ts {
		b := row[u*ts : u*ts+ts]
		so, co := l.unitAt(u)
		dst[so+2*r], dst[so+2*r+1] = b[0], b[1]
		putNibbles(dst[co:co+256], r, b[2:])
	}
}

// packMXFP4 puts each block's E8M0 byte and its nibbles (IQ4_NL's order)
// into its unit.
func packMXFP4(row, dst []byte, r int) {
	const ts = 17
	l := x16Layouts[tensor.MXFP4]
	for u := range len(row) / ts {
		b := row[u*ts : u*ts+ts]
		so, lo := l.unitAt(u)
		dst[so+r] = b[0]
		putNibbles(dst[lo:lo+256], r, b[1:])
	}
}

// packQ451 packs Q5_0, Q4_1 or Q5_1 blocks: d (and m), the nibbles as
// Q4_0's chunks, then the fifth bits.
func packQ451(wt tensor.DType, row, dst []byte, r int) {
	l := x16Layouts[wt]
	ts := wt.TypeSize()
	le := binary.LittleEndian
	head, qh, qs := 32, -1, 2 // where the rows' d..m end, the fifth bits (-1: none) and the nibbles start; set per type below
	switch wt {
	case tensor.Q5_0:
		qh, qs = 2, 6
	case tensor.Q4_1:
		head, qs = 64, 4
	case tensor.Q5_1:
		head, qh, qs = 64, 4, 8
	}
	for u := range len(row) / ts {
		b := row[u*ts : u*ts+ts]
		so, lo := u*l.rec, u*l.rec+head // the unit's d (and m), its levels
		if l.pair {
			so, lo = l.unitAt(u)
		}
		dst[so+2*r], dst[so+2*r+1] = b[0], b[1]
		if head == 64 {
			dst[so+32+2*r], dst[so+33+2*r] = b[2], b[3]
		}
		putNibbles(dst[lo:], r, b[qs:])
		if qh >= 0 {
			// Column c's fifth bit is bit c of qh; chunk byte 4r+t gets
			// column 4g+t's in bit g.
			h, bits := uint32(0), le.Uint32(b[qh:])
			for g := range 8 {
				for t := range 4 {
					h |= (bits >> uint(4*g+t) & 1) << uint(8*t+g)
				}
			}
			le.PutUint32(dst[lo+256+4*r:], h)
		}
	}
}

// packQ45K packs Q4_K or Q5_K super-blocks (Q5_K: l.lev 320, the fifth
// bits after each sub-block's levels).
func packQ45K(l x16Layout, row, dst []byte, r int) {
	le := binary.LittleEndian
	q5 := l.lev == x16Layouts[tensor.Q5_K].lev
	ts := tensor.Q4_K.TypeSize()
	if q5 {
		ts = tensor.Q5_K.TypeSize()
	}
	for u := range len(row) / ts {
		b := row[u*ts : u*ts+ts]
		h, bo := l.superAt(u)
		hd, du := dst[h:], dst[bo:]
		hd[2*r], hd[2*r+1] = b[0], b[1]
		hd[32+2*r], hd[33+2*r] = b[2], b[3]
		qsOff := 16
		if q5 {
			qsOff = 48
		}
		for j := range 8 {
			so, lo := l.subK(j)
			du[so+r], du[so+16+r] = scaleMinK4(j, b[4:16])
			// Sub-blocks j and j+1 (j even) are the low and high nibbles
			// of bytes 32·(j/2) .. +32 of qs.
			if j%2 == 0 {
				qs := b[qsOff+16*j:][:32]
				var v, w [8]uint32
				for i := range v {
					x := le.Uint32(qs[4*i:])
					v[i], w[i] = x&0x0f0f0f0f, x>>4&0x0f0f0f0f
				}
				_, lo1 := l.subK(j + 1)
				putQ4Chunks(du[lo:], r, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7])
				putQ4Chunks(du[lo1:], r, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7])
			}
			if q5 {
				// Fifth bits: bit j of qh[l] for column l; chunk byte 4r+t
				// gets column 4g+t's in bit g.
				var h uint32
				for g := range 8 {
					h |= (le.Uint32(b[16+4*g:]) >> uint(j) & 0x01010101) << uint(g)
				}
				le.PutUint32(du[lo+256+4*r:], h)
			}
		}
	}
}

func packQ6K(l x16Layout, row, dst []byte, r int) {
	const ts = 210
	le := binary.LittleEndian
	for u := range len(row) / ts {
		b := row[u*ts : u*ts+ts]
		h, bo := l.superAt(u)
		hd, du := dst[h:], dst[bo:]
		hd[2*r], hd[2*r+1] = b[208], b[209]
		for j := range 8 {
			so, lo := l.subK(j)
			du[so+r], du[so+16+r] = b[192+2*j], b[193+2*j]
			// Sub-block j is quarter k of half n (see q6KLevel): low bits in
			// ql[64n+32(k&1)+l] >> 4(k>>1), high bits in qh[32n+l] >> 2k, for
			// column l of the unit.
			n, k := j/4, j%4
			ql, qh := b[64*n+32*(k&1):], b[128+32*n:]
			ls, hs := uint(4*(k>>1)), uint(2*k)
			var low [8]uint32
			var hi [2]uint32
			for g := range 8 {
				low[g] = le.Uint32(ql[4*g:]) >> ls & 0x0f0f0f0f
				hi[g/4] |= (le.Uint32(qh[4*g:]) >> hs & 0x03030303) << (2 * (g % 4))
			}
			putQ4Chunks(du[lo:], r, low[0], low[1], low[2], low[3], low[4], low[5], low[6], low[7])
			le.PutUint32(du[lo+256+4*r:], hi[0])
			le.PutUint32(du[lo+320+4*r:], hi[1])
		}
	}
}

func packQ3K(l x16Layout, row, dst []byte, r int) {
	const ts = 110
	le := binary.LittleEndian
	for u := range len(row) / ts {
		b := row[u*ts : u*ts+ts]
		h, bo := l.superAt(u)
		hd, du := dst[h:], dst[bo:]
		hd[2*r], hd[2*r+1] = b[108], b[109]
		hm, qs, sc := b[0:32], b[32:96], b[96:108]
		for j := range 8 {
			so, lo := l.subK(j)
			du[so+r], du[so+16+r] = byte(int8(scaleQ3K(2*j, sc))), byte(int8(scaleQ3K(2*j+1, sc)))
			// Unit j is quarter k of half n (see dequantQ3K): column c's
			// low bits in qs[32n+c] >> 2k, its high bit in hm[c] bit 4n+k.
			n, k := j/4, j%4
			putLow2(du[lo:], r, qs[32*n:], k)
			var h uint32
			for g := range 8 { // columns 4g..4g+3
				h |= (le.Uint32(hm[4*g:]) >> uint(4*n+k) & 0x01010101) << uint(g)
			}
			le.PutUint32(du[lo+128+4*r:], h)
		}
	}
}

func packQ2K(l x16Layout, row, dst []byte, r int) {
	const ts = 84
	for u := range len(row) / ts {
		b := row[u*ts : u*ts+ts]
		h, bo := l.superAt(u)
		hd, du := dst[h:], dst[bo:]
		hd[2*r], hd[2*r+1] = b[80], b[81]
		hd[32+2*r], hd[33+2*r] = b[82], b[83]
		sc, qs := b[0:16], b[16:80]
		for j := range 8 {
			so, lo := l.subK(j)
			du[so+r], du[so+16+r] = sc[2*j], sc[2*j+1]
			// Unit j is quarter k of half n (see dequantQ2K): column c's
			// level in qs[32n+c] >> 2k.
			putLow2(du[lo:], r, qs[32*(j/4):], j%4)
		}
	}
}

func packIQ4XS(l x16Layout, row, dst []byte, r int) {
	const ts = 136
	for u := range len(row) / ts {
		b := row[u*ts : u*ts+ts]
		h, bo := l.superAt(u)
		hd, du := dst[h:], dst[bo:]
		hd[2*r], hd[2*r+1] = b[0], b[1]
		for j := range 8 {
			so, lo := l.subK(j)
			du[so+r] = byte(int8(iq4XSScale(b, j)))
			putNibbles(du[lo:], r, b[8+16*j:])
		}
	}
}

// putNibbles writes the 16 bytes of nibbles at q (column c < 16 in the low
// nibble of byte c, c+16 in its high nibble: dequantQ4_0's order) as row
// r's four chunks.
func putNibbles(dst []byte, r int, q []byte) {
	le := binary.LittleEndian
	q0, q4, q8, q12 := le.Uint32(q), le.Uint32(q[4:]), le.Uint32(q[8:]), le.Uint32(q[12:])
	putQ4Chunks(dst, r, q0&0x0f0f0f0f, q4&0x0f0f0f0f, q8&0x0f0f0f0f, q12&0x0f0f0f0f,
		q0>>4&0x0f0f0f0f, q4>>4&0x0f0f0f0f, q8>>4&0x0f0f0f0f, q12>>4&0x0f0f0f0f)
}

// putLow2 writes row r's two-bit levels of one unit (column c's in q[c] >>
// 2k) into two 64-byte chunks: chunk H byte 4r+t holds in bits 2i..2i+1
// column 16H+4i+t's (Q3_K's low bits, Q2_K's levels).
func putLow2(dst []byte, r int, q []byte, k int) {
	le := binary.LittleEndian
	var low [2]uint32
	for g := range 8 { // columns 4g..4g+3
		low[g/4] |= (le.Uint32(q[4*g:]) >> uint(2*k) & 0x03030303) << uint(2*(g%4))
	}
	le.PutUint32(dst[4*r:], low[0])
	le.PutUint32(dst[64+4*r:], low[1])
}

// putQ4Chunks writes row r's 32 levels (v[i] = levels of columns 4i..4i+3,
// one per byte) into four 64-byte chunks: chunk L byte 4r+t holds column
// 8L+t in its low nibble and 8L+4+t in its high nibble.
func putQ4Chunks(dst []byte, r int, v0, v1, v2, v3, v4, v5, v6, v7 uint32) {
	le := binary.LittleEndian
	le.PutUint32(dst[4*r:], v0|v1<<4)
	le.PutUint32(dst[64+4*r:], v2|v3<<4)
	le.PutUint32(dst[128+4*r:], v4|v5<<4)
	le.PutUint32(dst[192+4*r:], v6|v7<<4)
}

// XPack holds activation rows quantized and packed in panels of Width rows
// for the x16 kernels (padding rows of the last panel are zero and
// contribute nothing).
type XPack struct {
	Width   int
	N, Cols int
	lay     x16Layout
	Data    []byte
	q8      []byte // [N] Q8_0 or Q8_K rows: each row's quantization scratch
}

// x16Width is the panel width for n activation rows. Panels of 4 up to 24
// rows: a 16-row panel costs about 3.5–5 of them, so with 5–24 rows, whose
// last 16-row panel is mostly padding, the 4-row panels are 1.2–1.6×
// faster on the 1B model (one pass of 5, 8 or 20 tokens; 16 rows alike;
// docs/BENCHMARKS.md, session 19); from about 28 rows the 16-row ones.
func x16Width(n int) int {
	switch {
	case n <= 1:
		return 1
	case n == 2:
		return 2
	case n <= 24:
		return 4
	}
	return 16
}

// Panels returns the number of panels.
func (p *XPack) Panels() int { return (p.N + p.Width - 1) / p.Width }

// panelBytes is the bytes of one panel.
func (p *XPack) panelBytes() int { return p.Cols / qk * p.lay.actRec() * p.Width }

// Reset sizes p for n rows of cols activations against wt weights.
func (p *XPack) Reset(wt tensor.DType, n, cols int) error {
	l, ok := x16Layouts[wt]
	if !ok {
		return fmt.Errorf("kernel: no x16 layout for %s weights", wt)
	}
	if cols <= 0 || cols%l.cols != 0 || n < 0 {
		return fmt.Errorf("kernel: x16 activations of %d columns for %s: need a positive multiple of %d", cols, wt, l.cols)
	}
	p.Width, p.N, p.Cols, p.lay = x16Width(n), n, cols, l
	p.Data = grow(p.Data, p.Panels()*p.panelBytes())
	p.q8 = grow(p.q8, n*p.q8Row())
	if n%p.Width != 0 {
		clear(p.Data[(p.Panels()-1)*p.panelBytes():])
	}
	return nil
}

// q8Row is the scratch bytes of one activation row: its Q8_0 (or Q8_K)
// blocks, or its records at width 1 (the fast paths').
func (p *XPack) q8Row() int {
	recs := p.Cols / qk * p.lay.actRec()
	if p.lay.k {
		return max(p.Cols/qkK*292, recs)
	}
	return max(p.Cols/qk*34, recs)
}

// x16RecQ8_0 is a fast PackRows for one Q8_0 row at width 1 (token
// generation), or nil (impl_amd64.go sets it with AVX2).
var x16RecQ8_0 func(x []float32, rec []byte, l x16Layout)

// x16RecQ8K is the same for the K-quants' Q8_K rows (the layout's record:
// dx·Σq; with halve −off·Σq per 16 columns, or with halve and min dx·Σq
// per 16 columns), or nil.
var x16RecQ8K func(x []float32, rec []byte, l x16Layout)

// PackRows quantizes rows [lo,hi) of x ([N][Cols]) into p; different rows
// can be packed concurrently.
func (p *XPack) PackRows(x []float32, lo, hi int) {
	w := p.Width
	le := binary.LittleEndian
	units := p.Cols / qk
	qr := p.q8Row()
	ar := p.lay.actRec()
	for i := lo; i < hi; i++ {
		pn, k := i/w, i%w
		panel := p.Data[pn*p.panelBytes():]
		blk := p.q8[i*qr : (i+1)*qr] // this row's own scratch
		row := x[i*p.Cols : (i+1)*p.Cols]
		// The fast paths write one row's records as a panel of width 1:
		// straight into the panel when it is one, else into the scratch and
		// from there into row k of the panel.
		fast := x16RecQ8_0 != nil
		if p.lay.k {
			fast = x16RecQ8K != nil
		}
		if fast {
			dst := panel[:units*ar]
			if w > 1 {
				dst = blk[:units*ar]
			}
			if p.lay.k {
				x16RecQ8K(row, dst, p.lay)
			} else {
				x16RecQ8_0(row, dst, p.lay)
			}
			if w > 1 {
				for b := range units {
					src, rec := dst[b*ar:(b+1)*ar], panel[b*ar*w:]
					copy(rec[32*k:32*k+32], src[:32])
					copy(rec[32*w+4*k:32*w+4*k+4], src[32:36])
					copy(rec[36*w+4*k:36*w+4*k+4], src[36:40])
					if p.lay.halve {
						copy(rec[40*w+4*k:40*w+4*k+4], src[40:44])
					}
				}
			}
			continue
		}
		if p.lay.k {
			for s := 0; s < p.Cols; s += qkK {
				quantQ8K(row[s:s+qkK], blk[s/qkK*292:])
			}
		} else {
			quantRowQ8_0(row, blk)
		}
		for b := range units {
			rec := panel[b*ar*w:]
			var q []byte
			var dx float32
			if p.lay.k {
				sb := blk[b/8*292:]
				dx, q = math.Float32frombits(le.Uint32(sb)), sb[4+32*(b%8):4+32*(b%8)+32]
			} else {
				dx, q = f16(blk[34*b:]), blk[34*b+2:34*b+34]
			}
			copy(rec[32*k:32*k+32], q)
			var sum [2]int32
			for c, v := range q {
				sum[c/16] += int32(int8(v))
			}
			le.PutUint32(rec[32*w+4*k:], math.Float32bits(dx))
			switch {
			case p.lay.min && p.lay.halve:
				le.PutUint32(rec[36*w+4*k:], math.Float32bits(dx*float32(sum[0])))
				le.PutUint32(rec[40*w+4*k:], math.Float32bits(dx*float32(sum[1])))
			case p.lay.min && !p.lay.k:
				le.PutUint32(rec[36*w+4*k:], math.Float32bits(q8_1S(row[b*qk:(b+1)*qk], sum[0]+sum[1])))
			case p.lay.min:
				le.PutUint32(rec[36*w+4*k:], math.Float32bits(dx*float32(sum[0]+sum[1])))
			case p.lay.halve:
				le.PutUint32(rec[36*w+4*k:], uint32(-p.lay.off*sum[0]))
				le.PutUint32(rec[40*w+4*k:], uint32(-p.lay.off*sum[1]))
			default:
				le.PutUint32(rec[36*w+4*k:], uint32(-p.lay.off*(sum[0]+sum[1])))
			}
		}
	}
}

// q8_1S is quantQ8_1's s of the block x whose levels sum to sum:
// float32(sum)·d, d = max|x|/127 before its rounding to f16, rounded to f16.
func q8_1S(x []float32, sum int32) float32 {
	_, amax := absMax(x)
	var h [2]byte
	putF16(h[:], float32(sum)*(amax/127))
	return f16(h[:])
}

// X16 computes, for the n consecutive tiles in tiles and the panel's real
// activation rows k (at most Width; the last panel may have fewer),
//
//	out[k*stride + 16t + r] = Σ_c W_t[r][c]·x[Width·panel+k][c]
//
// (t < n, r < 16): a range of tiles' rows for every row of the panel,
// written straight into a [rows][stride] output. cols narrows the sum to
// a column panel (the zero X16Cols is every column).
type X16 func(wt tensor.DType, tiles []byte, n int, a *XPack, panel int, out []float32, stride int, cols X16Cols)

// X16Cols is the columns an X16 call sums over, Lo..Hi−1 (multiples of
// the type's record: 32 columns, 256 for the K-quants): the tiles then hold only those columns of their rows (a
// column panel, X16TileBytes(wt, Hi−Lo) per tile), the activations are read
// at the same columns, and with Add each row's sum continues from the
// value in out instead of from zero. A row whose columns are split into
// panels, summed in order with Add after the first, gets the same bits as
// from one call over all its columns: the kernels accumulate the records
// one after another, so carrying the sum through out changes nothing. The
// zero value is every column, from zero.
type X16Cols struct {
	Lo, Hi int
	Add    bool
}

// X16For returns the fast x16 kernel for wt, if this CPU has one (the
// generic one is only the specification).
func X16For(wt tensor.DType) (X16, bool) {
	if active.Name == Generic.Name {
		return nil, false
	}
	f := active.X16[wt]
	return f, f != nil
}

// checkX16 panics unless tiles, a, panel, out and cols fit together; it
// returns the units (32 columns) per tile, the panel's records of the
// columns and its real rows.
func checkX16(wt tensor.DType, tiles []byte, n int, a *XPack, panel int, out []float32, stride int, cols X16Cols) (units int, ap []byte, rows int) {
	if cols == (X16Cols{}) {
		cols.Hi = a.Cols
	}
	units = (cols.Hi - cols.Lo) / qk
	l := x16Layouts[wt]
	pb := a.panelBytes()
	rows = min(a.Width, a.N-panel*a.Width)
	if l.cols == 0 || a.lay != l || units <= 0 || cols.Lo < 0 || cols.Hi > a.Cols || cols.Lo%l.cols != 0 || cols.Hi%l.cols != 0 ||
		n <= 0 || len(tiles) < n*l.tileBytes((cols.Hi-cols.Lo)/l.cols) || panel < 0 || panel >= a.Panels() ||
		len(a.Data) < (panel+1)*pb || stride < 16*n || len(out) < (rows-1)*stride+16*n {
		panic(fmt.Sprintf("kernel: x16 %s: %d tiles in %d bytes with %d-column activations (width %d), columns %d..%d, panel %d of %d, %d outputs at stride %d",
			wt, n, len(tiles), a.Cols, a.Width, cols.Lo, cols.Hi, panel, a.Panels(), len(out), stride))
	}
	rec := l.actRec() * a.Width // one unit's records
	return units, a.Data[panel*pb+cols.Lo/qk*rec : panel*pb+cols.Hi/qk*rec], rows
}

// x16Generic is the specification of the x16 kernels.
func x16Generic(wt tensor.DType, tiles []byte, n int, a *XPack, panel int, out []float32, stride int, cols X16Cols) {
	units, ap, rows := checkX16(wt, tiles, n, a, panel, out, stride, cols)
	l, w := x16Layouts[wt], a.Width
	ar := l.actRec()
	tb := l.tileBytes(units * qk / l.cols)
	le := binary.LittleEndian
	f32 := func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) }
	fma := func(x, y, z float32) float32 { return float32(math.FMA(float64(x), float64(y), float64(z))) }
	for t := range n {
		tile := tiles[t*tb : (t+1)*tb]
		for k := range rows {
			for r := range X16Rows {
				acc := float32(0)
				if cols.Add {
					acc = out[k*stride+16*t+r]
				}
				for u := range units {
					rec := ap[u*ar*w : (u+1)*ar*w]
					dx := f32(rec[32*w+4*k:])
					s1, s2, levels := x16Unit(wt, l, tile, u, r)
					sum := func(c0, c1 int, corr int32) float32 {
						s := corr
						for c := c0; c < c1; c++ {
							s += int32(levels[c]) * int32(int8(rec[32*k+c]))
						}
						return float32(s)
					}
					switch {
					case l.min && l.halve:
						acc = fma(sum(0, 16, 0), s1[0]*dx, acc)
						acc = fma(-s2[0], f32(rec[36*w+4*k:]), acc)
						acc = fma(sum(16, qk, 0), s1[1]*dx, acc)
						acc = fma(-s2[1], f32(rec[40*w+4*k:]), acc)
					case l.min:
						acc = fma(sum(0, qk, 0), s1[0]*dx, acc)
						acc = fma(-s2[0], f32(rec[36*w+4*k:]), acc)
					case l.halve:
						acc = fma(sum(0, 16, int32(le.Uint32(rec[36*w+4*k:]))), s1[0]*dx, acc)
						acc = fma(sum(16, qk, int32(le.Uint32(rec[40*w+4*k:]))), s1[1]*dx, acc)
					default:
						acc = fma(sum(0, qk, int32(le.Uint32(rec[36*w+4*k:]))), s1[0]*dx, acc)
					}
				}
				out[k*stride+16*t+r] = acc
			}
		}
	}
}

// x16Unit returns row r's scales and mins (of the unit's two halves of 16
// columns; equal but for Q6_K, Q3_K and Q2_K) and its 32 unsigned levels in unit u (32
// columns) of a tile.
func x16Unit(wt tensor.DType, l x16Layout, tile []byte, u, r int) (s1, s2 [2]float32, levels [qk]byte) {
	per := l.cols / qk // units per record
	rec := tile[u/per*l.rec : (u/per+1)*l.rec]
	j := u % per
	var hd, bd []byte // a K-quant super-unit's head and body,
	var so, lo int    // and the unit's scales and levels in the body
	if l.k {
		h, b := l.superAt(u / per)
		hd, bd = tile[h:], tile[b:]
		so, lo = l.subK(j)
	}
	levelAt := func(chunks []byte, c int) byte {
		g, t := c/4, c%4
		return chunks[64*(g/2)+4*r+t] >> (4 * (g % 2)) & 15
	}
	if l.pair || l.quad {
		so, co := l.unitAt(u)
		var d float32
		if l.quad {
			d = e8m0Half(tile[so+r])
		} else {
			d = f16(tile[so+2*r:])
		}
		for c := range qk {
			switch {
			case wt == tensor.Q8_0:
				levels[c] = tile[co+64*(c/4)+4*r+c%4]
			case l.table != nil:
				levels[c] = byte(int(l.table[levelAt(tile[co:], c)]) + 128)
			default:
				levels[c] = levelAt(tile[co:], c)
			}
			if wt == tensor.Q5_0 {
				levels[c] |= (tile[co+256+4*r+c%4] >> (c / 4) & 1) << 4
			}
		}
		return [2]float32{d, d}, [2]float32{}, levels
	}
	if l.k {
		d := f16(hd[2*r:])
		switch wt {
		case tensor.Q4_K, tensor.Q5_K:
			for c := range qk {
				levels[c] = levelAt(bd[lo:], c)
				if wt == tensor.Q5_K {
					levels[c] |= (bd[lo+256+4*r+c%4] >> (c / 4) & 1) << 4
				}
			}
			s, m := d*float32(bd[so+r]), f16(hd[32+2*r:])*float32(bd[so+16+r])
			return [2]float32{s, s}, [2]float32{m, m}, levels
		case tensor.Q6_K:
			for c := range qk {
				hi := bd[lo+256+64*(c/16)+4*r+c%4] >> (2 * (c % 16 / 4)) & 3
				levels[c] = levelAt(bd[lo:], c) | hi<<4
			}
			return [2]float32{d * float32(int8(bd[so+r])), d * float32(int8(bd[so+16+r]))}, [2]float32{}, levels
		case tensor.Q3_K:
			for c := range qk {
				low := bd[lo+64*(c/16)+4*r+c%4] >> (2 * (c % 16 / 4)) & 3
				levels[c] = low | (bd[lo+128+4*r+c%4]>>(c/4)&1)<<2
			}
			return [2]float32{d * float32(int8(bd[so+r])), d * float32(int8(bd[so+16+r]))}, [2]float32{}, levels
		case tensor.IQ4_XS:
			for c := range qk {
				levels[c] = byte(int(l.table[levelAt(bd[lo:], c)]) + 128)
			}
			s := d * float32(int8(bd[so+r]))
			return [2]float32{s, s}, [2]float32{}, levels
		case tensor.Q2_K:
			for c := range qk {
				levels[c] = bd[lo+64*(c/16)+4*r+c%4] >> (2 * (c % 16 / 4)) & 3
			}
			dmin := f16(hd[32+2*r:])
			a, b := bd[so+r], bd[so+16+r]
			return [2]float32{d * float32(a&15), d * float32(b&15)}, [2]float32{dmin * float32(a>>4), dmin * float32(b>>4)}, levels
		}
	}
	d := f16(rec[2*r:])
	head := 32 // Q5_0
	var m float32
	if wt == tensor.Q4_1 || wt == tensor.Q5_1 {
		head, m = 64, f16(rec[32+2*r:])
	}
	for c := range qk {
		levels[c] = levelAt(rec[head:], c)
		if l.table != nil {
			levels[c] = byte(int(l.table[levels[c]]) + 128)
		}
		if wt == tensor.Q5_0 || wt == tensor.Q5_1 {
			levels[c] |= (rec[head+256+4*r+c%4] >> (c / 4) & 1) << 4
		}
	}
	return [2]float32{d, d}, [2]float32{-m, -m}, levels
}
