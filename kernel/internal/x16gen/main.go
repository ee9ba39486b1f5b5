// Command x16gen writes kernel/x16_amd64.s: the AVX-512 VNNI x16 kernels
// for each weight type and panel width, unrolled
// per width (1, 2, 4 or 16 activation rows), over a range of tiles. The macros are written by hand (the
// prelude below); the kernel bodies are generated so that the fifty-two
// kernels cannot drift apart (a test checks that the committed file is
// this program's output). Run from the kernel folder:
//
//	go generate ./...   (go run ./internal/x16gen x16_amd64.s)
package main

import (
	"fmt"
	"os"
	"strings"
)

// kind is one weight type's kernel family.
type kind struct {
	name   string // Q4, Q8, Q5, Q41, Q51, QI4, QF4, K4, K5, K6, K3, K2, KI4
	unpack string // the unpacking macro (Q4, Q8: per block; K: per sub-block)
	rec    int    // bytes of one record (a block, or a super-block for K)
	mask   string // the byte mask Z31 holds (the nibble mask, or K3's two bits), if any
	head   int    // K: bytes before the first pair of sub-blocks
	lev    int    // K: level bytes of one sub-block (a pair is 64 bytes of scales, then 2·lev)
	actRec int    // activation record bytes per row
	act    string // the macro for one activation row (Q: ACT, ACTM; K: ACTK, ACT6, ACT2)
	heads  int    // K: f16 vectors of the record's head converted once per super-block (d, dmin)
	scb    int    // K: bytes of one sub-block's scales (0: 32)
	table  string // IQ4, MXFP4: the level lookup table Z30 holds (x16iq4, x16fp4), if any
	pair   bool   // Q4_0, IQ4_NL, Q8_0, Q5_0: units in pairs, both scales then both units' levels (x16.go)
	quad   bool   // MXFP4: units in fours, the four units' E8M0 scales then their levels (x16.go)
	spair  bool   // K6, K3, KI4: super-units in pairs, both heads then both bodies (x16.go's superAt)
	group  int    // K: sub-blocks whose scales share a line (0: 2)
	// pf: how far ahead (bytes) the one-row kernel (decode) prefetches
	// every line it will read, 0: not at all (see prefetch).
	pf int
}

// prefetch adds a PREFETCHT0 for each of the n lines at dist bytes on
// from register b: the one-row kernels stream each tile once, and the
// hardware prefetcher alone left the Q4_K matrix × vector at 85-93 % of
// the read probe where every line fetched one super-unit ahead reached
// 106-111 % (docs/BENCHMARKS.md, session 17).
func prefetch(add func(string, ...any), b string, dist, bytes int) {
	for o := 0; o < bytes; o += 64 {
		add("\tPREFETCHT0 %d(%s)", dist+o, b)
	}
}

var kinds = []kind{
	{name: "Q4", unpack: "UNPACK4", rec: 288, mask: "x16nib", actRec: 40, act: "ACT", pair: true},
	{name: "Q8", unpack: "UNPACK8", rec: 544, actRec: 40, act: "ACT", pair: true},
	{name: "Q5", unpack: "UNPACK5", rec: 352, mask: "x16nib", actRec: 40, act: "ACT", pair: true},
	{name: "Q41", unpack: "UNPACK41", rec: 320, mask: "x16nib", actRec: 40, act: "ACTM"},
	{name: "Q51", unpack: "UNPACK51", rec: 384, mask: "x16nib", actRec: 40, act: "ACTM"},
	{name: "QI4", unpack: "UNPACKI4", rec: 288, mask: "x16nib", actRec: 40, act: "ACT", table: "x16iq4", pair: true},
	{name: "QF4", unpack: "UNPACKF4", rec: 272, mask: "x16nib", actRec: 40, act: "ACT", table: "x16fp4", quad: true},
	{name: "K4", unpack: "SUBK", rec: 2368, mask: "x16nib", head: 64, lev: 256, actRec: 40, act: "ACTK", heads: 2, pf: 2368},
	{name: "K5", unpack: "SUBK5", rec: 2880, mask: "x16nib", head: 64, lev: 320, actRec: 40, act: "ACTK", heads: 2, pf: 2880},
	{name: "K6", unpack: "UNIT6", rec: 3360, mask: "x16nib", head: 32, lev: 384, actRec: 44, act: "ACT6", heads: 1, spair: true},
	{name: "K3", unpack: "UNIT3", rec: 1824, mask: "x16m03", head: 32, lev: 192, actRec: 44, act: "ACT6", heads: 1, spair: true},
	{name: "K2", unpack: "UNIT2", rec: 1344, mask: "x16m03", head: 64, lev: 128, actRec: 44, act: "ACT2"},
	{name: "KI4", unpack: "UNITI4", rec: 2208, mask: "x16nib", head: 32, lev: 256, actRec: 44, act: "ACT6", heads: 1, scb: 16, table: "x16iq4", spair: true, group: 4},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: x16gen OUTPUT.s")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], []byte(generate()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "x16gen:", err)
		os.Exit(1)
	}
}

// scales is the bytes of one sub-block's scales in a K record.
func (k kind) scales() int {
	if k.scb == 0 {
		return 32
	}
	return k.scb
}

// groupOf is the sub-blocks in one group of a K body (their scales, then
// their levels).
func (k kind) groupOf() int {
	if k.group == 0 {
		return 2
	}
	return k.group
}

// generate returns the whole assembly file.
func generate() string {
	var b strings.Builder
	b.WriteString(prelude)
	var texts []string
	for _, k := range kinds {
		for _, w := range []int{1, 2, 4, 16} {
			texts = append(texts, kernel(k, w))
		}
	}
	b.WriteString(strings.Join(texts, "\n"))
	return b.String()
}

// kernel returns one TEXT body for width w.
func kernel(k kind, w int) string {
	var o []string
	add := func(format string, a ...any) { o = append(o, fmt.Sprintf(format, a...)) }
	name := fmt.Sprintf("x16%sW%d", k.name, w)
	units := "units"
	if k.name[0] == 'K' {
		units = "supers"
	}
	args := units + ", tiles int, w, a *byte, out *float32, stride, rows, add int"
	add("// func %s(%s)", name, args)
	add("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	add("\tMOVQ %s+0(FP), R13\n\tMOVQ tiles+8(FP), R14\n\tMOVQ w+16(FP), R8\n\tMOVQ a+24(FP), AX\n\tMOVQ out+32(FP), DI\n\tMOVQ stride+40(FP), R9\n\tMOVQ rows+48(FP), BX\n\tMOVQ add+56(FP), R12", units)
	if k.mask != "" {
		add("\tVPBROADCASTQ %s<>(SB), Z31", k.mask)
	}
	if k.table != "" {
		add("\tVBROADCASTI32X4 %s<>(SB), Z30", k.table)
	}
	if k.quad {
		add("\tVPBROADCASTD x16e8m0<>(SB), Z29")
	}
	add("tile:")
	for j := range w {
		add("\tVPXORD Z%d, Z%d, Z%d", j, j, j)
	}
	// With add, the real rows' sums continue from out (the columns before
	// these, X16Cols).
	add("\tTESTQ R12, R12\n\tJZ   started\n\tMOVQ DI, R10\n\tVMOVUPS (R10), Z0")
	for j := 1; j < w; j++ {
		add("\tCMPQ BX, $%d\n\tJLT  started\n\tADDQ R9, R10\n\tVMOVUPS (R10), Z%d", j+1, j)
	}
	add("started:")
	add("\tMOVQ AX, SI\n\tMOVQ R13, CX")
	acts := func() {
		if w == 1 {
			add("\t%s1(Z0)", k.act)
		} else {
			for j := range w {
				add("\t%s(%d, %d, %d, Z%d)", k.act, 32*j, 32*w+4*j, 36*w+4*j, j)
			}
		}
	}
	switch {
	case k.quad:
		// Fours of units (the four units' scales, one line, then their
		// levels), then a tile's last one to three units (the same, their
		// line of scales padded).
		lev := k.rec - 16
		add("\tSHRQ $2, CX\n\tJZ   rest")
		add("loop:")
		for j := range 4 {
			add("\t%s(%d, %d)", k.unpack, 16*j, 64+lev*j)
			acts()
			add("\tADDQ $%d, SI", 40*w)
		}
		add("\tADDQ $%d, R8\n\tDECQ CX\n\tJNZ  loop", 4*k.rec)
		add("rest:\n\tMOVQ R13, CX\n\tANDQ $3, CX\n\tJZ   fours")
		for j := range 3 {
			add("\t%s(%d, %d)", k.unpack, 16*j, 64+lev*j)
			acts()
			add("\tADDQ $%d, SI", 40*w)
			if j < 2 {
				add("\tCMPQ CX, $%d\n\tJEQ  rested", j+1)
			}
		}
		add("rested:")
		add("\tSHLQ $8, CX\n\tLEAQ 64(R8)(CX*1), R8") // past the rest: 64 + 256·rest bytes
		add("fours:")
	case k.pair:
		// Pairs of units (both units' scales, then both units' chunks),
		// then an odd tile's last unit (its scales, 32 bytes of padding,
		// then its chunks).
		add("\tSHRQ $1, CX\n\tJZ   lone")
		add("loop:")
		if w == 1 && k.pf > 0 {
			prefetch(add, "R8", k.pf, 2*k.rec)
		}
		add("\t%s(0, 64)", k.unpack) // levels: k.rec − 32 bytes a unit
		acts()
		add("\tADDQ $%d, SI", 40*w)
		add("\t%s(32, %d)", k.unpack, 64+k.rec-32)
		acts()
		add("\tADDQ $%d, R8\n\tADDQ $%d, SI\n\tDECQ CX\n\tJNZ  loop", 2*k.rec, 40*w)
		add("lone:\n\tTESTQ $1, R13\n\tJZ   paired")
		add("\t%s(0, 64)", k.unpack) // 32 bytes of padding after the scales
		acts()
		add("\tADDQ $%d, R8\n\tADDQ $%d, SI", k.rec+32, 40*w)
		add("paired:")
	case k.name[0] == 'Q':
		add("loop:")
		add("\t%s", k.unpack)
		acts()
		add("\tADDQ $%d, R8\n\tADDQ $%d, SI\n\tDECQ CX\n\tJNZ  loop", k.rec, 40*w)
	default:
		g := k.groupOf()
		add("super:")
		if k.spair {
			// Super-unit i = R13−CX of the tile: an even one is the first
			// of a pair, or the tile's lone last one (head at R8, body two
			// heads on: a lone one's head is padded); an odd one has its
			// head in the pair's first line, rec bytes before R8, the end
			// of the first's body, where its own body starts. R8 moves to
			// the end of each body.
			add("\tMOVQ R13, DX\n\tSUBQ CX, DX\n\tTESTQ $1, DX\n\tJNZ  second")
			add("\tVCVTPH2PS 0(R8), Z29\n\tLEAQ %d(R8), R11\n\tJMP  body", 2*k.head)
			add("second:\n\tVCVTPH2PS -%d(R8), Z29\n\tMOVQ R8, R11", k.rec)
			add("body:")
		} else {
			if k.heads > 0 {
				add("\tVCVTPH2PS 0(R8), Z29")
			}
			if k.heads > 1 {
				add("\tVCVTPH2PS 32(R8), Z30")
			}
			add("\tLEAQ %d(R8), R11", k.head)
		}
		add("\tMOVQ $%d, DX", 8/g)
		add("pair:")
		if w == 1 && k.pf > 0 {
			prefetch(add, "R11", k.pf, g*k.scales()+g*k.lev)
		}
		for h := range g {
			// Sub-block h of the group: its scales h·scales bytes into the
			// group, its levels after the group's scales; its activation
			// records h sub-blocks' records on.
			add("\t%s(%d, %d)", k.unpack, k.scales()*h, g*k.scales()+k.lev*h)
			o := k.actRec * w * h
			for j := range w {
				switch {
				case k.actRec == 44:
					add("\t%s(%d, %d, %d, %d, Z%d)", k.act, o+32*j, o+32*w+4*j, o+36*w+4*j, o+40*w+4*j, j)
				case w == 1:
					add("\tACTK1(%d, Z0)", o)
				default:
					add("\tACTK(%d, %d, %d, Z%d)", o+32*j, o+32*w+4*j, o+36*w+4*j, j)
				}
			}
		}
		add("\tADDQ $%d, SI\n\tADDQ $%d, R11\n\tDECQ DX\n\tJNZ  pair", g*k.actRec*w, g*k.scales()+g*k.lev)
		if k.spair {
			add("\tMOVQ R11, R8\n\tDECQ CX\n\tJNZ  super")
		} else {
			add("\tADDQ $%d, R8\n\tDECQ CX\n\tJNZ  super", k.rec)
		}
	}
	// Store the panel's real rows (BX of them) of this tile.
	add("\tMOVQ DI, R10\n\tVMOVUPS Z0, (R10)")
	for j := 1; j < w; j++ {
		add("\tCMPQ BX, $%d\n\tJLT  stored\n\tADDQ R9, R10\n\tVMOVUPS Z%d, (R10)", j+1, j)
	}
	if w > 1 {
		add("stored:")
	}
	add("\tADDQ $64, DI\n\tDECQ R14\n\tJNZ  tile")
	add("\tVZEROUPPER\n\tRET\n")
	return strings.Join(o, "\n")
}

// prelude is the file's hand-written part: build tag, register map and
// the macros the bodies use.
const prelude = `//go:build amd64 && !purego

#include "textflag.h"
#include "vnni_amd64.h" // ACT

// x16 kernels (x16.go has the layout and the specification, x16Generic).
// Registers:
//   Z0..Z15   accumulators: Z(k) lane r = out[k][r] (activation k, weight row r)
//   Z16..Z23  the unit's weight levels, group g: lane r = u[r][4g..4g+3]
//   Z24       the 16 rows' scales d[r] as float32
//   Z25       integer sums of one activation row, Z26 its scales d·dx
//   Z27       a loaded Q4_0 chunk, Z31 the nibble mask
//   R8 weight unit, SI activation record, CX units left in the tile
//   Each kernel runs over consecutive tiles: R13 units (or super-blocks)
//   per tile, R14 tiles left, AX the panel's first record, DI the tile's
//   first output, R9 the bytes between activation rows' outputs, BX the
//   panel's real rows (padding rows are not stored), R12 the add flag
//   (sums start from out, X16Cols).


// ACT1: ACT for a panel of one row, its integer sum split over two chains
// (Z25, Z28) so that one unit's latency is half as long (the sum is exact,
// so the bits are ACT's).
#define ACT1(acc) \
	VPBROADCASTD 36(SI), Z25; \
	VPXORD Z28, Z28, Z28; \
	VPDPBUSD.BCST 0(SI), Z16, Z25; \
	VPDPBUSD.BCST 4(SI), Z17, Z28; \
	VPDPBUSD.BCST 8(SI), Z18, Z25; \
	VPDPBUSD.BCST 12(SI), Z19, Z28; \
	VPDPBUSD.BCST 16(SI), Z20, Z25; \
	VPDPBUSD.BCST 20(SI), Z21, Z28; \
	VPDPBUSD.BCST 24(SI), Z22, Z25; \
	VPDPBUSD.BCST 28(SI), Z23, Z28; \
	VPADDD Z28, Z25, Z25; \
	VCVTDQ2PS Z25, Z25; \
	VMULPS.BCST 32(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc

// CHUNKS(b, lo): the four chunks of nibbles lo bytes on from register b
// split into the eight groups of levels Z16..Z23 (chunk L: low nibbles
// group 2L, high nibbles 2L+1). Each chunk is read twice, by the AND and
// by the shift: in the kernels whose levels are the nibbles (Q4_0, Q4_1,
// Q4_K, IQ4) these load-operand forms stream faster than one load into
// Z27 that three instructions wait on (1B decode 1.03-1.05x). CHUNKSR is
// that one-load form, which the kernels that merge more bits into the
// levels keep (Q5_0, Q5_1, Q5_K, Q6_K: CHUNKS made their decode 4 %
// slower).
#define CHUNKS(b, lo) \
	VPANDQ lo(b), Z31, Z16; \
	VPSRLW $4, lo(b), Z27; \
	VPANDQ Z27, Z31, Z17; \
	VPANDQ lo+64(b), Z31, Z18; \
	VPSRLW $4, lo+64(b), Z27; \
	VPANDQ Z27, Z31, Z19; \
	VPANDQ lo+128(b), Z31, Z20; \
	VPSRLW $4, lo+128(b), Z27; \
	VPANDQ Z27, Z31, Z21; \
	VPANDQ lo+192(b), Z31, Z22; \
	VPSRLW $4, lo+192(b), Z27; \
	VPANDQ Z27, Z31, Z23

#define CHUNKSR(b, lo) \
	VMOVDQU64 lo(b), Z27; \
	VPANDQ Z27, Z31, Z16; \
	VPSRLW $4, Z27, Z27; \
	VPANDQ Z27, Z31, Z17; \
	VMOVDQU64 lo+64(b), Z27; \
	VPANDQ Z27, Z31, Z18; \
	VPSRLW $4, Z27, Z27; \
	VPANDQ Z27, Z31, Z19; \
	VMOVDQU64 lo+128(b), Z27; \
	VPANDQ Z27, Z31, Z20; \
	VPSRLW $4, Z27, Z27; \
	VPANDQ Z27, Z31, Z21; \
	VMOVDQU64 lo+192(b), Z27; \
	VPANDQ Z27, Z31, Z22; \
	VPSRLW $4, Z27, Z27; \
	VPANDQ Z27, Z31, Z23

// UNPACK4(so, lo): a Q4_0 unit's scales (so bytes on from R8) and its
// four chunks (lo bytes on): units are paired (x16.go).
#define UNPACK4(so, lo) \
	VCVTPH2PS so(R8), Z24; \
	CHUNKS(R8, lo)

// UNPACK8(so, lo): a Q8_0 unit's scales (so bytes on from R8) and its
// eight groups of levels (lo bytes on): units are paired (x16.go).
#define UNPACK8(so, lo) \
	VCVTPH2PS so(R8), Z24; \
	VMOVDQU64 lo(R8), Z16; \
	VMOVDQU64 lo+64(R8), Z17; \
	VMOVDQU64 lo+128(R8), Z18; \
	VMOVDQU64 lo+192(R8), Z19; \
	VMOVDQU64 lo+256(R8), Z20; \
	VMOVDQU64 lo+320(R8), Z21; \
	VMOVDQU64 lo+384(R8), Z22; \
	VMOVDQU64 lo+448(R8), Z23

// Q5_0, Q4_1, Q5_1 (x16Q5W*, x16Q41W*, x16Q51W*): Q4_0's registers; Z28
// the rows' mins m (Q4_1, Q5_1). FIFTH(lo): the chunk of fifth bits lo
// bytes on from R8 merged into the levels (SUBK5's merge).
#define FIFTH(lo) \
	VMOVDQU64 lo(R8), Z27; \
	HI5(VPSLLW, 4, Z16); \
	HI5(VPSLLW, 3, Z17); \
	HI5(VPSLLW, 2, Z18); \
	HI5(VPSLLW, 1, Z19); \
	VPTERNLOGD.BCST $0xF8, x16m10<>(SB), Z27, Z20; \
	HI5(VPSRLW, 1, Z21); \
	HI5(VPSRLW, 2, Z22); \
	HI5(VPSRLW, 3, Z23)

// UNPACK5(so, lo): a Q5_0 unit's scales (so bytes on from R8), its four
// chunks (lo bytes on) and its chunk of fifth bits: units are paired.
#define UNPACK5(so, lo) \
	VCVTPH2PS so(R8), Z24; \
	CHUNKSR(R8, lo); \
	FIFTH(lo+256)

#define UNPACK41 \
	VCVTPH2PS 0(R8), Z24; \
	VCVTPH2PS 32(R8), Z28; \
	CHUNKS(R8, 64)

#define UNPACK51 \
	VCVTPH2PS 0(R8), Z24; \
	VCVTPH2PS 32(R8), Z28; \
	CHUNKSR(R8, 64); \
	FIFTH(320)

// ACTM: activation row k against a Q4_1/Q5_1 unit (s at soff: Q8_1's
// dx·Σq): acc[r] += float(Σ_g u[r][g]·q[g])·d[r]·dx, then acc[r] += m[r]·s.
#define ACTM(qoff, doff, soff, acc) \
	DOT8(qoff); \
	VMULPS.BCST doff(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc; \
	VFMADD231PS.BCST soff(SI), Z28, acc

// ACTM1: ACTM for a panel of one row, the integer sum over two chains.
#define ACTM1(acc) \
	DOT8X2(0); \
	VMULPS.BCST 32(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc; \
	VFMADD231PS.BCST 36(SI), Z28, acc

// IQ4_NL, IQ4_XS (x16QI4W*, x16KI4W*): Z30 holds the IQ4 table, kv+128
// as bytes, in every 128-bit lane; LOOKUP4 maps the eight groups of
// indices to levels.
DATA x16iq4<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA x16iq4<>+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL x16iq4<>(SB), RODATA|NOPTR, $16

#define LOOKUP4 \
	VPSHUFB Z16, Z30, Z16; \
	VPSHUFB Z17, Z30, Z17; \
	VPSHUFB Z18, Z30, Z18; \
	VPSHUFB Z19, Z30, Z19; \
	VPSHUFB Z20, Z30, Z20; \
	VPSHUFB Z21, Z30, Z21; \
	VPSHUFB Z22, Z30, Z22; \
	VPSHUFB Z23, Z30, Z23

#define UNPACKI4(so, lo) \
	UNPACK4(so, lo); \
	LOOKUP4

// MXFP4 (x16QF4W*): Z30 holds the MXFP4 table, kv+128 as bytes; Z29 the
// float32 2^−128 in every lane. UNPACKF4(so, lo): a unit's E8M0 scale
// bytes (so bytes on from R8) as d[r] = 2^−128·2^e[r] (VSCALEFPS: exact,
// subnormal for e < 2) and its levels (lo bytes on).
DATA x16fp4<>+0(SB)/8, $0x8c88868483828180
DATA x16fp4<>+8(SB)/8, $0x74787a7c7d7e7f80
GLOBL x16fp4<>(SB), RODATA|NOPTR, $16
DATA x16e8m0<>+0(SB)/4, $0x00200000
GLOBL x16e8m0<>(SB), RODATA|NOPTR, $4

#define UNPACKF4(so, lo) \
	VPMOVZXBD so(R8), Z24; \
	VCVTDQ2PS Z24, Z24; \
	VSCALEFPS Z24, Z29, Z24; \
	CHUNKS(R8, lo); \
	LOOKUP4

// UNITI4(so, lo): an IQ4_XS unit's scale (so bytes on from R11, signed,
// for both halves) and its 32 levels (lo bytes on).
#define UNITI4(so, lo) \
	VPMOVSXBD so(R11), Z24; \
	VCVTDQ2PS Z24, Z24; \
	VMULPS Z29, Z24, Z24; \
	VMOVAPS Z24, Z28; \
	CHUNKS(R11, lo); \
	LOOKUP4

DATA x16nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL x16nib<>(SB), RODATA|NOPTR, $8

// K-quant registers (x16K4W*): Z24 the sub-block's s1 = d·sc, Z28 its
// s2 = dmin·m, Z29 the rows' d, Z30 their dmin; R8 the super-block record,
// R11 the pair of sub-blocks (scales and mins of each, 32 bytes per
// sub-block, then the levels of each), DX pairs left in the super-block.

// DOT8(qoff): Z25 = float(Σ_g u[r][g]·q[g]) over the unit's eight groups
// against the activation quads at qoff(SI).
#define DOT8(qoff) \
	VPXORD Z25, Z25, Z25; \
	VPDPBUSD.BCST qoff+0(SI), Z16, Z25; \
	VPDPBUSD.BCST qoff+4(SI), Z17, Z25; \
	VPDPBUSD.BCST qoff+8(SI), Z18, Z25; \
	VPDPBUSD.BCST qoff+12(SI), Z19, Z25; \
	VPDPBUSD.BCST qoff+16(SI), Z20, Z25; \
	VPDPBUSD.BCST qoff+20(SI), Z21, Z25; \
	VPDPBUSD.BCST qoff+24(SI), Z22, Z25; \
	VPDPBUSD.BCST qoff+28(SI), Z23, Z25; \
	VCVTDQ2PS Z25, Z25

// DOT8X2(o): DOT8 with the integer sum over two chains (Z25, Z27; exact,
// so the same value), for panels of one row.
#define DOT8X2(o) \
	VPXORD Z25, Z25, Z25; \
	VPXORD Z27, Z27, Z27; \
	VPDPBUSD.BCST o+0(SI), Z16, Z25; \
	VPDPBUSD.BCST o+4(SI), Z17, Z27; \
	VPDPBUSD.BCST o+8(SI), Z18, Z25; \
	VPDPBUSD.BCST o+12(SI), Z19, Z27; \
	VPDPBUSD.BCST o+16(SI), Z20, Z25; \
	VPDPBUSD.BCST o+20(SI), Z21, Z27; \
	VPDPBUSD.BCST o+24(SI), Z22, Z25; \
	VPDPBUSD.BCST o+28(SI), Z23, Z27; \
	VPADDD Z27, Z25, Z25; \
	VCVTDQ2PS Z25, Z25

// ACTK: activation row k against a Q4_K sub-block:
//   acc[r] += float(Σ_g u[r][g]·q[g])·s1[r]·dx − s2[r]·(dx·Σq)
#define ACTK(qoff, doff, soff, acc) \
	DOT8(qoff); \
	VMULPS.BCST doff(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc; \
	VFNMADD231PS.BCST soff(SI), Z28, acc

// ACTK1: ACTK for a panel of one row (its record o bytes on), the integer
// sum over two chains.
#define ACTK1(o, acc) \
	DOT8X2(o); \
	VMULPS.BCST o+32(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc; \
	VFNMADD231PS.BCST o+36(SI), Z28, acc

// SUBK(so, lo): a Q4_K sub-block's scales and mins (SUBKSC: so bytes on
// from R11, the mins 16 bytes after the scales) and its levels (lo bytes
// on).
#define SUBKSC(so) \
	VPMOVZXBD so(R11), Z24; \
	VCVTDQ2PS Z24, Z24; \
	VMULPS Z29, Z24, Z24; \
	VPMOVZXBD so+16(R11), Z28; \
	VCVTDQ2PS Z28, Z28; \
	VMULPS Z30, Z28, Z28

#define SUBK(so, lo) \
	SUBKSC(so); \
	CHUNKS(R11, lo)

// Q6_K registers (x16K6W*): Z24 and Z28 the unit's two halves' scales
// d·sc, Z29 the rows' d; Z25 and Z27 the halves' integer sums; Z30 a
// chunk of high bits; R8 the super-block record, R11 the pair of units
// (the two halves' scales of each, 32 bytes per unit, then the levels of
// each), DX pairs left in the record.

DATA x16m30<>+0(SB)/4, $0x30303030
GLOBL x16m30<>(SB), RODATA|NOPTR, $4

// DOTHALVES(qoff): the two 16-column halves' integer sums added into Z25
// (groups 0..3) and Z27 (groups 4..7), then made float.
#define DOTHALVES(qoff) \
	VPDPBUSD.BCST qoff+0(SI), Z16, Z25; \
	VPDPBUSD.BCST qoff+16(SI), Z20, Z27; \
	VPDPBUSD.BCST qoff+4(SI), Z17, Z25; \
	VPDPBUSD.BCST qoff+20(SI), Z21, Z27; \
	VPDPBUSD.BCST qoff+8(SI), Z18, Z25; \
	VPDPBUSD.BCST qoff+24(SI), Z22, Z27; \
	VPDPBUSD.BCST qoff+12(SI), Z19, Z25; \
	VPDPBUSD.BCST qoff+28(SI), Z23, Z27; \
	VCVTDQ2PS Z25, Z25; \
	VCVTDQ2PS Z27, Z27

// ACT6: activation row k against a Q6_K unit, each half of 16 columns
// with its correction (caoff, cboff) and scale:
//   acc[r] += float(ca + Σ_{g<4} u·q)·s1a[r]·dx, then the same for the second half
#define ACT6(qoff, doff, caoff, cboff, acc) \
	VPBROADCASTD caoff(SI), Z25; \
	VPBROADCASTD cboff(SI), Z27; \
	DOTHALVES(qoff); \
	VMULPS.BCST doff(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc; \
	VMULPS.BCST doff(SI), Z28, Z26; \
	VFMADD231PS Z26, Z27, acc

// HI6(shift, g): group register g |= (high-bit chunk Z30 shifted so that
// field i lands in bits 4..5) & 0x30.
#define HI6L(sh, g) \
	VPSLLW $sh, Z30, Z26; \
	VPTERNLOGD.BCST $0xF8, x16m30<>(SB), Z26, g

// HALVES(so): the two halves' signed scales (so bytes on from R11) times
// the rows' d into Z24 and Z28 (Q6_K, Q3_K).
#define HALVES(so) \
	VPMOVSXBD so(R11), Z24; \
	VCVTDQ2PS Z24, Z24; \
	VMULPS Z29, Z24, Z24; \
	VPMOVSXBD so+16(R11), Z28; \
	VCVTDQ2PS Z28, Z28; \
	VMULPS Z29, Z28, Z28

// UNIT6(so, lo): a Q6_K unit's two scales (so bytes on from R11) and 32
// six-bit levels (lo bytes on: low bits, then two chunks of high bits).
#define UNIT6(so, lo) \
	HALVES(so); \
	CHUNKSR(R11, lo); \
	VMOVDQU64 lo+256(R11), Z30; \
	HI6L(4, Z16); \
	HI6L(2, Z17); \
	VPTERNLOGD.BCST $0xF8, x16m30<>(SB), Z30, Z18; \
	VPSRLW $2, Z30, Z26; \
	VPTERNLOGD.BCST $0xF8, x16m30<>(SB), Z26, Z19; \
	VMOVDQU64 lo+320(R11), Z30; \
	HI6L(4, Z20); \
	HI6L(2, Z21); \
	VPTERNLOGD.BCST $0xF8, x16m30<>(SB), Z30, Z22; \
	VPSRLW $2, Z30, Z26; \
	VPTERNLOGD.BCST $0xF8, x16m30<>(SB), Z26, Z23

// Q3_K (x16K3W*): as Q6_K's registers; Z31 holds the two-bit mask, Z30 a
// chunk of high bits.

DATA x16m03<>+0(SB)/8, $0x0303030303030303
GLOBL x16m03<>(SB), RODATA|NOPTR, $8
DATA x16m04<>+0(SB)/4, $0x04040404
GLOBL x16m04<>(SB), RODATA|NOPTR, $4

// LOW3(b, lo, g0, g1, g2, g3): the 64-byte chunk of two-bit fields lo
// bytes on from b split into four groups of levels (field i: group gi).
#define LOW3(b, lo, g0, g1, g2, g3) \
	VMOVDQU64 lo(b), Z27; \
	VPANDQ Z27, Z31, g0; \
	VPSRLW $2, Z27, Z26; \
	VPANDQ Z26, Z31, g1; \
	VPSRLW $4, Z27, Z26; \
	VPANDQ Z26, Z31, g2; \
	VPSRLW $6, Z27, Z26; \
	VPANDQ Z26, Z31, g3

// HI3(op, sh, g): group register g |= (high-bit chunk Z30 shifted so that
// bit g lands in bit 2) & 0x04.
#define HI3(op, sh, g) \
	op $sh, Z30, Z26; \
	VPTERNLOGD.BCST $0xF8, x16m04<>(SB), Z26, g

// UNIT3(so, lo): a Q3_K unit's two scales (so bytes on from R11, signed)
// and 32 three-bit levels (lo bytes on: two chunks of low bits, then one
// of high bits).
#define UNIT3(so, lo) \
	HALVES(so); \
	LOW3(R11, lo, Z16, Z17, Z18, Z19); \
	LOW3(R11, lo+64, Z20, Z21, Z22, Z23); \
	VMOVDQU64 lo+128(R11), Z30; \
	HI3(VPSLLW, 2, Z16); \
	HI3(VPSLLW, 1, Z17); \
	VPTERNLOGD.BCST $0xF8, x16m04<>(SB), Z30, Z18; \
	HI3(VPSRLW, 1, Z19); \
	HI3(VPSRLW, 2, Z20); \
	HI3(VPSRLW, 3, Z21); \
	HI3(VPSRLW, 4, Z22); \
	HI3(VPSRLW, 5, Z23)

// Q2_K (x16K2W*): Z24 and Z28 the unit's two halves' s1 = d·sc, Z29 and
// Z30 their s2 = dmin·m (d and dmin converted again for each unit, as the
// registers are full); Z25 and Z27 the halves' integer sums.

DATA x16m0f<>+0(SB)/4, $0x0000000f
GLOBL x16m0f<>(SB), RODATA|NOPTR, $4

// SCALES2(so, s1, s2): one half's GGUF scale bytes (so bytes on from R11)
// as s1 = d·(byte & 15) and s2 = dmin·(byte >> 4); Z26 is clobbered.
#define SCALES2(so, s1, s2) \
	VPMOVZXBD so(R11), s1; \
	VPSRLD $4, s1, s2; \
	VPANDD.BCST x16m0f<>(SB), s1, s1; \
	VCVTDQ2PS s1, s1; \
	VCVTDQ2PS s2, s2; \
	VCVTPH2PS 0(R8), Z26; \
	VMULPS Z26, s1, s1; \
	VCVTPH2PS 32(R8), Z26; \
	VMULPS Z26, s2, s2

// UNIT2(so, lo): a Q2_K unit's two halves' scales and mins and its 32
// two-bit levels (lo bytes on, two chunks).
#define UNIT2(so, lo) \
	SCALES2(so, Z24, Z29); \
	SCALES2(so+16, Z28, Z30); \
	LOW3(R11, lo, Z16, Z17, Z18, Z19); \
	LOW3(R11, lo+64, Z20, Z21, Z22, Z23)

// ACT2: activation row k against a Q2_K unit, each half of 16 columns with
// its scale and min (maoff, mboff: dx·Σq of each half):
//   acc[r] += float(Σa)·s1a[r]·dx, acc[r] −= s2a[r]·(dx·Σa q), then the second half
#define ACT2(qoff, doff, maoff, mboff, acc) \
	VPXORD Z25, Z25, Z25; \
	VPXORD Z27, Z27, Z27; \
	DOTHALVES(qoff); \
	VMULPS.BCST doff(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc; \
	VFNMADD231PS.BCST maoff(SI), Z29, acc; \
	VMULPS.BCST doff(SI), Z28, Z26; \
	VFMADD231PS Z26, Z27, acc; \
	VFNMADD231PS.BCST mboff(SI), Z30, acc

DATA x16m10<>+0(SB)/4, $0x10101010
GLOBL x16m10<>(SB), RODATA|NOPTR, $4

// HI5(op, sh, g): group register g |= (fifth-bit chunk Z27 shifted so that
// bit g lands in bit 4) & 0x10.
#define HI5(op, sh, g) \
	op $sh, Z27, Z26; \
	VPTERNLOGD.BCST $0xF8, x16m10<>(SB), Z26, g

// SUBK5(so, lo): SUBK, then the fifth bits (256 bytes after the low
// nibbles) merged into the levels.
#define SUBK5(so, lo) \
	SUBKSC(so); \
	CHUNKSR(R11, lo); \
	VMOVDQU64 lo+256(R11), Z27; \
	HI5(VPSLLW, 4, Z16); \
	HI5(VPSLLW, 3, Z17); \
	HI5(VPSLLW, 2, Z18); \
	HI5(VPSLLW, 1, Z19); \
	VPTERNLOGD.BCST $0xF8, x16m10<>(SB), Z27, Z20; \
	HI5(VPSRLW, 1, Z21); \
	HI5(VPSRLW, 2, Z22); \
	HI5(VPSRLW, 3, Z23)

`
