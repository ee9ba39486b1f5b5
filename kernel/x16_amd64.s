//go:build amd64 && !purego

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

// func x16Q4W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q4W1(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK4(0, 64)
	ACT1(Z0)
	ADDQ $40, SI
	UNPACK4(32, 320)
	ACT1(Z0)
	ADDQ $576, R8
	ADDQ $40, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK4(0, 64)
	ACT1(Z0)
	ADDQ $320, R8
	ADDQ $40, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q4W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q4W2(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK4(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	UNPACK4(32, 320)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $576, R8
	ADDQ $80, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK4(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $320, R8
	ADDQ $80, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q4W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q4W4(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK4(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	UNPACK4(32, 320)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $576, R8
	ADDQ $160, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK4(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $320, R8
	ADDQ $160, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q4W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q4W16(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK4(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	UNPACK4(32, 320)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $576, R8
	ADDQ $640, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK4(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $320, R8
	ADDQ $640, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q8W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q8W1(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK8(0, 64)
	ACT1(Z0)
	ADDQ $40, SI
	UNPACK8(32, 576)
	ACT1(Z0)
	ADDQ $1088, R8
	ADDQ $40, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK8(0, 64)
	ACT1(Z0)
	ADDQ $576, R8
	ADDQ $40, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q8W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q8W2(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK8(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	UNPACK8(32, 576)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $1088, R8
	ADDQ $80, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK8(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $576, R8
	ADDQ $80, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q8W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q8W4(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK8(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	UNPACK8(32, 576)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $1088, R8
	ADDQ $160, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK8(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $576, R8
	ADDQ $160, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q8W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q8W16(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK8(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	UNPACK8(32, 576)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $1088, R8
	ADDQ $640, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK8(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $576, R8
	ADDQ $640, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q5W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q5W1(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK5(0, 64)
	ACT1(Z0)
	ADDQ $40, SI
	UNPACK5(32, 384)
	ACT1(Z0)
	ADDQ $704, R8
	ADDQ $40, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK5(0, 64)
	ACT1(Z0)
	ADDQ $384, R8
	ADDQ $40, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q5W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q5W2(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK5(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	UNPACK5(32, 384)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $704, R8
	ADDQ $80, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK5(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $384, R8
	ADDQ $80, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q5W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q5W4(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK5(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	UNPACK5(32, 384)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $704, R8
	ADDQ $160, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK5(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $384, R8
	ADDQ $160, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q5W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q5W16(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACK5(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	UNPACK5(32, 384)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $704, R8
	ADDQ $640, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACK5(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $384, R8
	ADDQ $640, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q41W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q41W1(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
loop:
	UNPACK41
	ACTM1(Z0)
	ADDQ $320, R8
	ADDQ $40, SI
	DECQ CX
	JNZ  loop
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q41W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q41W2(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
loop:
	UNPACK41
	ACTM(0, 64, 72, Z0)
	ACTM(32, 68, 76, Z1)
	ADDQ $320, R8
	ADDQ $80, SI
	DECQ CX
	JNZ  loop
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q41W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q41W4(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
loop:
	UNPACK41
	ACTM(0, 128, 144, Z0)
	ACTM(32, 132, 148, Z1)
	ACTM(64, 136, 152, Z2)
	ACTM(96, 140, 156, Z3)
	ADDQ $320, R8
	ADDQ $160, SI
	DECQ CX
	JNZ  loop
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q41W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q41W16(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
loop:
	UNPACK41
	ACTM(0, 512, 576, Z0)
	ACTM(32, 516, 580, Z1)
	ACTM(64, 520, 584, Z2)
	ACTM(96, 524, 588, Z3)
	ACTM(128, 528, 592, Z4)
	ACTM(160, 532, 596, Z5)
	ACTM(192, 536, 600, Z6)
	ACTM(224, 540, 604, Z7)
	ACTM(256, 544, 608, Z8)
	ACTM(288, 548, 612, Z9)
	ACTM(320, 552, 616, Z10)
	ACTM(352, 556, 620, Z11)
	ACTM(384, 560, 624, Z12)
	ACTM(416, 564, 628, Z13)
	ACTM(448, 568, 632, Z14)
	ACTM(480, 572, 636, Z15)
	ADDQ $320, R8
	ADDQ $640, SI
	DECQ CX
	JNZ  loop
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q51W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q51W1(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
loop:
	UNPACK51
	ACTM1(Z0)
	ADDQ $384, R8
	ADDQ $40, SI
	DECQ CX
	JNZ  loop
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q51W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q51W2(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
loop:
	UNPACK51
	ACTM(0, 64, 72, Z0)
	ACTM(32, 68, 76, Z1)
	ADDQ $384, R8
	ADDQ $80, SI
	DECQ CX
	JNZ  loop
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q51W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q51W4(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
loop:
	UNPACK51
	ACTM(0, 128, 144, Z0)
	ACTM(32, 132, 148, Z1)
	ACTM(64, 136, 152, Z2)
	ACTM(96, 140, 156, Z3)
	ADDQ $384, R8
	ADDQ $160, SI
	DECQ CX
	JNZ  loop
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16Q51W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16Q51W16(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
loop:
	UNPACK51
	ACTM(0, 512, 576, Z0)
	ACTM(32, 516, 580, Z1)
	ACTM(64, 520, 584, Z2)
	ACTM(96, 524, 588, Z3)
	ACTM(128, 528, 592, Z4)
	ACTM(160, 532, 596, Z5)
	ACTM(192, 536, 600, Z6)
	ACTM(224, 540, 604, Z7)
	ACTM(256, 544, 608, Z8)
	ACTM(288, 548, 612, Z9)
	ACTM(320, 552, 616, Z10)
	ACTM(352, 556, 620, Z11)
	ACTM(384, 560, 624, Z12)
	ACTM(416, 564, 628, Z13)
	ACTM(448, 568, 632, Z14)
	ACTM(480, 572, 636, Z15)
	ADDQ $384, R8
	ADDQ $640, SI
	DECQ CX
	JNZ  loop
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16QI4W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16QI4W1(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16iq4<>(SB), Z30
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACKI4(0, 64)
	ACT1(Z0)
	ADDQ $40, SI
	UNPACKI4(32, 320)
	ACT1(Z0)
	ADDQ $576, R8
	ADDQ $40, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACKI4(0, 64)
	ACT1(Z0)
	ADDQ $320, R8
	ADDQ $40, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16QI4W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16QI4W2(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16iq4<>(SB), Z30
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACKI4(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	UNPACKI4(32, 320)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $576, R8
	ADDQ $80, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACKI4(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $320, R8
	ADDQ $80, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16QI4W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16QI4W4(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16iq4<>(SB), Z30
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACKI4(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	UNPACKI4(32, 320)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $576, R8
	ADDQ $160, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACKI4(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $320, R8
	ADDQ $160, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16QI4W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16QI4W16(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16iq4<>(SB), Z30
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $1, CX
	JZ   lone
loop:
	UNPACKI4(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	UNPACKI4(32, 320)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $576, R8
	ADDQ $640, SI
	DECQ CX
	JNZ  loop
lone:
	TESTQ $1, R13
	JZ   paired
	UNPACKI4(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $320, R8
	ADDQ $640, SI
paired:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16QF4W1(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16QF4W1(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16fp4<>(SB), Z30
	VPBROADCASTD x16e8m0<>(SB), Z29
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $2, CX
	JZ   rest
loop:
	UNPACKF4(0, 64)
	ACT1(Z0)
	ADDQ $40, SI
	UNPACKF4(16, 320)
	ACT1(Z0)
	ADDQ $40, SI
	UNPACKF4(32, 576)
	ACT1(Z0)
	ADDQ $40, SI
	UNPACKF4(48, 832)
	ACT1(Z0)
	ADDQ $40, SI
	ADDQ $1088, R8
	DECQ CX
	JNZ  loop
rest:
	MOVQ R13, CX
	ANDQ $3, CX
	JZ   fours
	UNPACKF4(0, 64)
	ACT1(Z0)
	ADDQ $40, SI
	CMPQ CX, $1
	JEQ  rested
	UNPACKF4(16, 320)
	ACT1(Z0)
	ADDQ $40, SI
	CMPQ CX, $2
	JEQ  rested
	UNPACKF4(32, 576)
	ACT1(Z0)
	ADDQ $40, SI
rested:
	SHLQ $8, CX
	LEAQ 64(R8)(CX*1), R8
fours:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16QF4W2(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16QF4W2(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16fp4<>(SB), Z30
	VPBROADCASTD x16e8m0<>(SB), Z29
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $2, CX
	JZ   rest
loop:
	UNPACKF4(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	UNPACKF4(16, 320)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	UNPACKF4(32, 576)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	UNPACKF4(48, 832)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	ADDQ $1088, R8
	DECQ CX
	JNZ  loop
rest:
	MOVQ R13, CX
	ANDQ $3, CX
	JZ   fours
	UNPACKF4(0, 64)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	CMPQ CX, $1
	JEQ  rested
	UNPACKF4(16, 320)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
	CMPQ CX, $2
	JEQ  rested
	UNPACKF4(32, 576)
	ACT(0, 64, 72, Z0)
	ACT(32, 68, 76, Z1)
	ADDQ $80, SI
rested:
	SHLQ $8, CX
	LEAQ 64(R8)(CX*1), R8
fours:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16QF4W4(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16QF4W4(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16fp4<>(SB), Z30
	VPBROADCASTD x16e8m0<>(SB), Z29
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $2, CX
	JZ   rest
loop:
	UNPACKF4(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	UNPACKF4(16, 320)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	UNPACKF4(32, 576)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	UNPACKF4(48, 832)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	ADDQ $1088, R8
	DECQ CX
	JNZ  loop
rest:
	MOVQ R13, CX
	ANDQ $3, CX
	JZ   fours
	UNPACKF4(0, 64)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	CMPQ CX, $1
	JEQ  rested
	UNPACKF4(16, 320)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
	CMPQ CX, $2
	JEQ  rested
	UNPACKF4(32, 576)
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $160, SI
rested:
	SHLQ $8, CX
	LEAQ 64(R8)(CX*1), R8
fours:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16QF4W16(units, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16QF4W16(SB), NOSPLIT, $0-64
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16fp4<>(SB), Z30
	VPBROADCASTD x16e8m0<>(SB), Z29
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
	SHRQ $2, CX
	JZ   rest
loop:
	UNPACKF4(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	UNPACKF4(16, 320)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	UNPACKF4(32, 576)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	UNPACKF4(48, 832)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	ADDQ $1088, R8
	DECQ CX
	JNZ  loop
rest:
	MOVQ R13, CX
	ANDQ $3, CX
	JZ   fours
	UNPACKF4(0, 64)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	CMPQ CX, $1
	JEQ  rested
	UNPACKF4(16, 320)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
	CMPQ CX, $2
	JEQ  rested
	UNPACKF4(32, 576)
	ACT(0, 512, 576, Z0)
	ACT(32, 516, 580, Z1)
	ACT(64, 520, 584, Z2)
	ACT(96, 524, 588, Z3)
	ACT(128, 528, 592, Z4)
	ACT(160, 532, 596, Z5)
	ACT(192, 536, 600, Z6)
	ACT(224, 540, 604, Z7)
	ACT(256, 544, 608, Z8)
	ACT(288, 548, 612, Z9)
	ACT(320, 552, 616, Z10)
	ACT(352, 556, 620, Z11)
	ACT(384, 560, 624, Z12)
	ACT(416, 564, 628, Z13)
	ACT(448, 568, 632, Z14)
	ACT(480, 572, 636, Z15)
	ADDQ $640, SI
rested:
	SHLQ $8, CX
	LEAQ 64(R8)(CX*1), R8
fours:
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K4W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K4W1(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	VCVTPH2PS 0(R8), Z29
	VCVTPH2PS 32(R8), Z30
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	PREFETCHT0 2368(R11)
	PREFETCHT0 2432(R11)
	PREFETCHT0 2496(R11)
	PREFETCHT0 2560(R11)
	PREFETCHT0 2624(R11)
	PREFETCHT0 2688(R11)
	PREFETCHT0 2752(R11)
	PREFETCHT0 2816(R11)
	PREFETCHT0 2880(R11)
	SUBK(0, 64)
	ACTK1(0, Z0)
	SUBK(32, 320)
	ACTK1(40, Z0)
	ADDQ $80, SI
	ADDQ $576, R11
	DECQ DX
	JNZ  pair
	ADDQ $2368, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K4W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K4W2(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	VCVTPH2PS 0(R8), Z29
	VCVTPH2PS 32(R8), Z30
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	SUBK(0, 64)
	ACTK(0, 64, 72, Z0)
	ACTK(32, 68, 76, Z1)
	SUBK(32, 320)
	ACTK(80, 144, 152, Z0)
	ACTK(112, 148, 156, Z1)
	ADDQ $160, SI
	ADDQ $576, R11
	DECQ DX
	JNZ  pair
	ADDQ $2368, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K4W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K4W4(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	VCVTPH2PS 0(R8), Z29
	VCVTPH2PS 32(R8), Z30
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	SUBK(0, 64)
	ACTK(0, 128, 144, Z0)
	ACTK(32, 132, 148, Z1)
	ACTK(64, 136, 152, Z2)
	ACTK(96, 140, 156, Z3)
	SUBK(32, 320)
	ACTK(160, 288, 304, Z0)
	ACTK(192, 292, 308, Z1)
	ACTK(224, 296, 312, Z2)
	ACTK(256, 300, 316, Z3)
	ADDQ $320, SI
	ADDQ $576, R11
	DECQ DX
	JNZ  pair
	ADDQ $2368, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K4W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K4W16(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	VCVTPH2PS 0(R8), Z29
	VCVTPH2PS 32(R8), Z30
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	SUBK(0, 64)
	ACTK(0, 512, 576, Z0)
	ACTK(32, 516, 580, Z1)
	ACTK(64, 520, 584, Z2)
	ACTK(96, 524, 588, Z3)
	ACTK(128, 528, 592, Z4)
	ACTK(160, 532, 596, Z5)
	ACTK(192, 536, 600, Z6)
	ACTK(224, 540, 604, Z7)
	ACTK(256, 544, 608, Z8)
	ACTK(288, 548, 612, Z9)
	ACTK(320, 552, 616, Z10)
	ACTK(352, 556, 620, Z11)
	ACTK(384, 560, 624, Z12)
	ACTK(416, 564, 628, Z13)
	ACTK(448, 568, 632, Z14)
	ACTK(480, 572, 636, Z15)
	SUBK(32, 320)
	ACTK(640, 1152, 1216, Z0)
	ACTK(672, 1156, 1220, Z1)
	ACTK(704, 1160, 1224, Z2)
	ACTK(736, 1164, 1228, Z3)
	ACTK(768, 1168, 1232, Z4)
	ACTK(800, 1172, 1236, Z5)
	ACTK(832, 1176, 1240, Z6)
	ACTK(864, 1180, 1244, Z7)
	ACTK(896, 1184, 1248, Z8)
	ACTK(928, 1188, 1252, Z9)
	ACTK(960, 1192, 1256, Z10)
	ACTK(992, 1196, 1260, Z11)
	ACTK(1024, 1200, 1264, Z12)
	ACTK(1056, 1204, 1268, Z13)
	ACTK(1088, 1208, 1272, Z14)
	ACTK(1120, 1212, 1276, Z15)
	ADDQ $1280, SI
	ADDQ $576, R11
	DECQ DX
	JNZ  pair
	ADDQ $2368, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K5W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K5W1(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	VCVTPH2PS 0(R8), Z29
	VCVTPH2PS 32(R8), Z30
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	PREFETCHT0 2880(R11)
	PREFETCHT0 2944(R11)
	PREFETCHT0 3008(R11)
	PREFETCHT0 3072(R11)
	PREFETCHT0 3136(R11)
	PREFETCHT0 3200(R11)
	PREFETCHT0 3264(R11)
	PREFETCHT0 3328(R11)
	PREFETCHT0 3392(R11)
	PREFETCHT0 3456(R11)
	PREFETCHT0 3520(R11)
	SUBK5(0, 64)
	ACTK1(0, Z0)
	SUBK5(32, 384)
	ACTK1(40, Z0)
	ADDQ $80, SI
	ADDQ $704, R11
	DECQ DX
	JNZ  pair
	ADDQ $2880, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K5W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K5W2(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	VCVTPH2PS 0(R8), Z29
	VCVTPH2PS 32(R8), Z30
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	SUBK5(0, 64)
	ACTK(0, 64, 72, Z0)
	ACTK(32, 68, 76, Z1)
	SUBK5(32, 384)
	ACTK(80, 144, 152, Z0)
	ACTK(112, 148, 156, Z1)
	ADDQ $160, SI
	ADDQ $704, R11
	DECQ DX
	JNZ  pair
	ADDQ $2880, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K5W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K5W4(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	VCVTPH2PS 0(R8), Z29
	VCVTPH2PS 32(R8), Z30
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	SUBK5(0, 64)
	ACTK(0, 128, 144, Z0)
	ACTK(32, 132, 148, Z1)
	ACTK(64, 136, 152, Z2)
	ACTK(96, 140, 156, Z3)
	SUBK5(32, 384)
	ACTK(160, 288, 304, Z0)
	ACTK(192, 292, 308, Z1)
	ACTK(224, 296, 312, Z2)
	ACTK(256, 300, 316, Z3)
	ADDQ $320, SI
	ADDQ $704, R11
	DECQ DX
	JNZ  pair
	ADDQ $2880, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K5W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K5W16(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	VCVTPH2PS 0(R8), Z29
	VCVTPH2PS 32(R8), Z30
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	SUBK5(0, 64)
	ACTK(0, 512, 576, Z0)
	ACTK(32, 516, 580, Z1)
	ACTK(64, 520, 584, Z2)
	ACTK(96, 524, 588, Z3)
	ACTK(128, 528, 592, Z4)
	ACTK(160, 532, 596, Z5)
	ACTK(192, 536, 600, Z6)
	ACTK(224, 540, 604, Z7)
	ACTK(256, 544, 608, Z8)
	ACTK(288, 548, 612, Z9)
	ACTK(320, 552, 616, Z10)
	ACTK(352, 556, 620, Z11)
	ACTK(384, 560, 624, Z12)
	ACTK(416, 564, 628, Z13)
	ACTK(448, 568, 632, Z14)
	ACTK(480, 572, 636, Z15)
	SUBK5(32, 384)
	ACTK(640, 1152, 1216, Z0)
	ACTK(672, 1156, 1220, Z1)
	ACTK(704, 1160, 1224, Z2)
	ACTK(736, 1164, 1228, Z3)
	ACTK(768, 1168, 1232, Z4)
	ACTK(800, 1172, 1236, Z5)
	ACTK(832, 1176, 1240, Z6)
	ACTK(864, 1180, 1244, Z7)
	ACTK(896, 1184, 1248, Z8)
	ACTK(928, 1188, 1252, Z9)
	ACTK(960, 1192, 1256, Z10)
	ACTK(992, 1196, 1260, Z11)
	ACTK(1024, 1200, 1264, Z12)
	ACTK(1056, 1204, 1268, Z13)
	ACTK(1088, 1208, 1272, Z14)
	ACTK(1120, 1212, 1276, Z15)
	ADDQ $1280, SI
	ADDQ $704, R11
	DECQ DX
	JNZ  pair
	ADDQ $2880, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K6W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K6W1(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -3360(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $4, DX
pair:
	UNIT6(0, 64)
	ACT6(0, 32, 36, 40, Z0)
	UNIT6(32, 448)
	ACT6(44, 76, 80, 84, Z0)
	ADDQ $88, SI
	ADDQ $832, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K6W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K6W2(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -3360(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $4, DX
pair:
	UNIT6(0, 64)
	ACT6(0, 64, 72, 80, Z0)
	ACT6(32, 68, 76, 84, Z1)
	UNIT6(32, 448)
	ACT6(88, 152, 160, 168, Z0)
	ACT6(120, 156, 164, 172, Z1)
	ADDQ $176, SI
	ADDQ $832, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K6W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K6W4(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -3360(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $4, DX
pair:
	UNIT6(0, 64)
	ACT6(0, 128, 144, 160, Z0)
	ACT6(32, 132, 148, 164, Z1)
	ACT6(64, 136, 152, 168, Z2)
	ACT6(96, 140, 156, 172, Z3)
	UNIT6(32, 448)
	ACT6(176, 304, 320, 336, Z0)
	ACT6(208, 308, 324, 340, Z1)
	ACT6(240, 312, 328, 344, Z2)
	ACT6(272, 316, 332, 348, Z3)
	ADDQ $352, SI
	ADDQ $832, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K6W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K6W16(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -3360(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $4, DX
pair:
	UNIT6(0, 64)
	ACT6(0, 512, 576, 640, Z0)
	ACT6(32, 516, 580, 644, Z1)
	ACT6(64, 520, 584, 648, Z2)
	ACT6(96, 524, 588, 652, Z3)
	ACT6(128, 528, 592, 656, Z4)
	ACT6(160, 532, 596, 660, Z5)
	ACT6(192, 536, 600, 664, Z6)
	ACT6(224, 540, 604, 668, Z7)
	ACT6(256, 544, 608, 672, Z8)
	ACT6(288, 548, 612, 676, Z9)
	ACT6(320, 552, 616, 680, Z10)
	ACT6(352, 556, 620, 684, Z11)
	ACT6(384, 560, 624, 688, Z12)
	ACT6(416, 564, 628, 692, Z13)
	ACT6(448, 568, 632, 696, Z14)
	ACT6(480, 572, 636, 700, Z15)
	UNIT6(32, 448)
	ACT6(704, 1216, 1280, 1344, Z0)
	ACT6(736, 1220, 1284, 1348, Z1)
	ACT6(768, 1224, 1288, 1352, Z2)
	ACT6(800, 1228, 1292, 1356, Z3)
	ACT6(832, 1232, 1296, 1360, Z4)
	ACT6(864, 1236, 1300, 1364, Z5)
	ACT6(896, 1240, 1304, 1368, Z6)
	ACT6(928, 1244, 1308, 1372, Z7)
	ACT6(960, 1248, 1312, 1376, Z8)
	ACT6(992, 1252, 1316, 1380, Z9)
	ACT6(1024, 1256, 1320, 1384, Z10)
	ACT6(1056, 1260, 1324, 1388, Z11)
	ACT6(1088, 1264, 1328, 1392, Z12)
	ACT6(1120, 1268, 1332, 1396, Z13)
	ACT6(1152, 1272, 1336, 1400, Z14)
	ACT6(1184, 1276, 1340, 1404, Z15)
	ADDQ $1408, SI
	ADDQ $832, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K3W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K3W1(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16m03<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -1824(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $4, DX
pair:
	UNIT3(0, 64)
	ACT6(0, 32, 36, 40, Z0)
	UNIT3(32, 256)
	ACT6(44, 76, 80, 84, Z0)
	ADDQ $88, SI
	ADDQ $448, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K3W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K3W2(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16m03<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -1824(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $4, DX
pair:
	UNIT3(0, 64)
	ACT6(0, 64, 72, 80, Z0)
	ACT6(32, 68, 76, 84, Z1)
	UNIT3(32, 256)
	ACT6(88, 152, 160, 168, Z0)
	ACT6(120, 156, 164, 172, Z1)
	ADDQ $176, SI
	ADDQ $448, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K3W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K3W4(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16m03<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -1824(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $4, DX
pair:
	UNIT3(0, 64)
	ACT6(0, 128, 144, 160, Z0)
	ACT6(32, 132, 148, 164, Z1)
	ACT6(64, 136, 152, 168, Z2)
	ACT6(96, 140, 156, 172, Z3)
	UNIT3(32, 256)
	ACT6(176, 304, 320, 336, Z0)
	ACT6(208, 308, 324, 340, Z1)
	ACT6(240, 312, 328, 344, Z2)
	ACT6(272, 316, 332, 348, Z3)
	ADDQ $352, SI
	ADDQ $448, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K3W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K3W16(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16m03<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -1824(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $4, DX
pair:
	UNIT3(0, 64)
	ACT6(0, 512, 576, 640, Z0)
	ACT6(32, 516, 580, 644, Z1)
	ACT6(64, 520, 584, 648, Z2)
	ACT6(96, 524, 588, 652, Z3)
	ACT6(128, 528, 592, 656, Z4)
	ACT6(160, 532, 596, 660, Z5)
	ACT6(192, 536, 600, 664, Z6)
	ACT6(224, 540, 604, 668, Z7)
	ACT6(256, 544, 608, 672, Z8)
	ACT6(288, 548, 612, 676, Z9)
	ACT6(320, 552, 616, 680, Z10)
	ACT6(352, 556, 620, 684, Z11)
	ACT6(384, 560, 624, 688, Z12)
	ACT6(416, 564, 628, 692, Z13)
	ACT6(448, 568, 632, 696, Z14)
	ACT6(480, 572, 636, 700, Z15)
	UNIT3(32, 256)
	ACT6(704, 1216, 1280, 1344, Z0)
	ACT6(736, 1220, 1284, 1348, Z1)
	ACT6(768, 1224, 1288, 1352, Z2)
	ACT6(800, 1228, 1292, 1356, Z3)
	ACT6(832, 1232, 1296, 1360, Z4)
	ACT6(864, 1236, 1300, 1364, Z5)
	ACT6(896, 1240, 1304, 1368, Z6)
	ACT6(928, 1244, 1308, 1372, Z7)
	ACT6(960, 1248, 1312, 1376, Z8)
	ACT6(992, 1252, 1316, 1380, Z9)
	ACT6(1024, 1256, 1320, 1384, Z10)
	ACT6(1056, 1260, 1324, 1388, Z11)
	ACT6(1088, 1264, 1328, 1392, Z12)
	ACT6(1120, 1268, 1332, 1396, Z13)
	ACT6(1152, 1272, 1336, 1400, Z14)
	ACT6(1184, 1276, 1340, 1404, Z15)
	ADDQ $1408, SI
	ADDQ $448, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K2W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K2W1(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16m03<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	UNIT2(0, 64)
	ACT2(0, 32, 36, 40, Z0)
	UNIT2(32, 192)
	ACT2(44, 76, 80, 84, Z0)
	ADDQ $88, SI
	ADDQ $320, R11
	DECQ DX
	JNZ  pair
	ADDQ $1344, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K2W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K2W2(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16m03<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	UNIT2(0, 64)
	ACT2(0, 64, 72, 80, Z0)
	ACT2(32, 68, 76, 84, Z1)
	UNIT2(32, 192)
	ACT2(88, 152, 160, 168, Z0)
	ACT2(120, 156, 164, 172, Z1)
	ADDQ $176, SI
	ADDQ $320, R11
	DECQ DX
	JNZ  pair
	ADDQ $1344, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K2W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K2W4(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16m03<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	UNIT2(0, 64)
	ACT2(0, 128, 144, 160, Z0)
	ACT2(32, 132, 148, 164, Z1)
	ACT2(64, 136, 152, 168, Z2)
	ACT2(96, 140, 156, 172, Z3)
	UNIT2(32, 192)
	ACT2(176, 304, 320, 336, Z0)
	ACT2(208, 308, 324, 340, Z1)
	ACT2(240, 312, 328, 344, Z2)
	ACT2(272, 316, 332, 348, Z3)
	ADDQ $352, SI
	ADDQ $320, R11
	DECQ DX
	JNZ  pair
	ADDQ $1344, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16K2W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16K2W16(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16m03<>(SB), Z31
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	LEAQ 64(R8), R11
	MOVQ $4, DX
pair:
	UNIT2(0, 64)
	ACT2(0, 512, 576, 640, Z0)
	ACT2(32, 516, 580, 644, Z1)
	ACT2(64, 520, 584, 648, Z2)
	ACT2(96, 524, 588, 652, Z3)
	ACT2(128, 528, 592, 656, Z4)
	ACT2(160, 532, 596, 660, Z5)
	ACT2(192, 536, 600, 664, Z6)
	ACT2(224, 540, 604, 668, Z7)
	ACT2(256, 544, 608, 672, Z8)
	ACT2(288, 548, 612, 676, Z9)
	ACT2(320, 552, 616, 680, Z10)
	ACT2(352, 556, 620, 684, Z11)
	ACT2(384, 560, 624, 688, Z12)
	ACT2(416, 564, 628, 692, Z13)
	ACT2(448, 568, 632, 696, Z14)
	ACT2(480, 572, 636, 700, Z15)
	UNIT2(32, 192)
	ACT2(704, 1216, 1280, 1344, Z0)
	ACT2(736, 1220, 1284, 1348, Z1)
	ACT2(768, 1224, 1288, 1352, Z2)
	ACT2(800, 1228, 1292, 1356, Z3)
	ACT2(832, 1232, 1296, 1360, Z4)
	ACT2(864, 1236, 1300, 1364, Z5)
	ACT2(896, 1240, 1304, 1368, Z6)
	ACT2(928, 1244, 1308, 1372, Z7)
	ACT2(960, 1248, 1312, 1376, Z8)
	ACT2(992, 1252, 1316, 1380, Z9)
	ACT2(1024, 1256, 1320, 1384, Z10)
	ACT2(1056, 1260, 1324, 1388, Z11)
	ACT2(1088, 1264, 1328, 1392, Z12)
	ACT2(1120, 1268, 1332, 1396, Z13)
	ACT2(1152, 1272, 1336, 1400, Z14)
	ACT2(1184, 1276, 1340, 1404, Z15)
	ADDQ $1408, SI
	ADDQ $320, R11
	DECQ DX
	JNZ  pair
	ADDQ $1344, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16KI4W1(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16KI4W1(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16iq4<>(SB), Z30
tile:
	VPXORD Z0, Z0, Z0
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -2208(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $2, DX
pair:
	UNITI4(0, 64)
	ACT6(0, 32, 36, 40, Z0)
	UNITI4(16, 320)
	ACT6(44, 76, 80, 84, Z0)
	UNITI4(32, 576)
	ACT6(88, 120, 124, 128, Z0)
	UNITI4(48, 832)
	ACT6(132, 164, 168, 172, Z0)
	ADDQ $176, SI
	ADDQ $1088, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16KI4W2(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16KI4W2(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16iq4<>(SB), Z30
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -2208(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $2, DX
pair:
	UNITI4(0, 64)
	ACT6(0, 64, 72, 80, Z0)
	ACT6(32, 68, 76, 84, Z1)
	UNITI4(16, 320)
	ACT6(88, 152, 160, 168, Z0)
	ACT6(120, 156, 164, 172, Z1)
	UNITI4(32, 576)
	ACT6(176, 240, 248, 256, Z0)
	ACT6(208, 244, 252, 260, Z1)
	UNITI4(48, 832)
	ACT6(264, 328, 336, 344, Z0)
	ACT6(296, 332, 340, 348, Z1)
	ADDQ $352, SI
	ADDQ $1088, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16KI4W4(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16KI4W4(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16iq4<>(SB), Z30
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -2208(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $2, DX
pair:
	UNITI4(0, 64)
	ACT6(0, 128, 144, 160, Z0)
	ACT6(32, 132, 148, 164, Z1)
	ACT6(64, 136, 152, 168, Z2)
	ACT6(96, 140, 156, 172, Z3)
	UNITI4(16, 320)
	ACT6(176, 304, 320, 336, Z0)
	ACT6(208, 308, 324, 340, Z1)
	ACT6(240, 312, 328, 344, Z2)
	ACT6(272, 316, 332, 348, Z3)
	UNITI4(32, 576)
	ACT6(352, 480, 496, 512, Z0)
	ACT6(384, 484, 500, 516, Z1)
	ACT6(416, 488, 504, 520, Z2)
	ACT6(448, 492, 508, 524, Z3)
	UNITI4(48, 832)
	ACT6(528, 656, 672, 688, Z0)
	ACT6(560, 660, 676, 692, Z1)
	ACT6(592, 664, 680, 696, Z2)
	ACT6(624, 668, 684, 700, Z3)
	ADDQ $704, SI
	ADDQ $1088, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET

// func x16KI4W16(supers, tiles int, w, a *byte, out *float32, stride, rows, add int)
TEXT ·x16KI4W16(SB), NOSPLIT, $0-64
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ rows+48(FP), BX
	MOVQ add+56(FP), R12
	VPBROADCASTQ x16nib<>(SB), Z31
	VBROADCASTI32X4 x16iq4<>(SB), Z30
tile:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ R12, R12
	JZ   started
	MOVQ DI, R10
	VMOVUPS (R10), Z0
	CMPQ BX, $2
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z1
	CMPQ BX, $3
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z2
	CMPQ BX, $4
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z3
	CMPQ BX, $5
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z4
	CMPQ BX, $6
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z5
	CMPQ BX, $7
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z6
	CMPQ BX, $8
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z7
	CMPQ BX, $9
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z8
	CMPQ BX, $10
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z9
	CMPQ BX, $11
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z10
	CMPQ BX, $12
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z11
	CMPQ BX, $13
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z12
	CMPQ BX, $14
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z13
	CMPQ BX, $15
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z14
	CMPQ BX, $16
	JLT  started
	ADDQ R9, R10
	VMOVUPS (R10), Z15
started:
	MOVQ AX, SI
	MOVQ R13, CX
super:
	MOVQ R13, DX
	SUBQ CX, DX
	TESTQ $1, DX
	JNZ  second
	VCVTPH2PS 0(R8), Z29
	LEAQ 64(R8), R11
	JMP  body
second:
	VCVTPH2PS -2208(R8), Z29
	MOVQ R8, R11
body:
	MOVQ $2, DX
pair:
	UNITI4(0, 64)
	ACT6(0, 512, 576, 640, Z0)
	ACT6(32, 516, 580, 644, Z1)
	ACT6(64, 520, 584, 648, Z2)
	ACT6(96, 524, 588, 652, Z3)
	ACT6(128, 528, 592, 656, Z4)
	ACT6(160, 532, 596, 660, Z5)
	ACT6(192, 536, 600, 664, Z6)
	ACT6(224, 540, 604, 668, Z7)
	ACT6(256, 544, 608, 672, Z8)
	ACT6(288, 548, 612, 676, Z9)
	ACT6(320, 552, 616, 680, Z10)
	ACT6(352, 556, 620, 684, Z11)
	ACT6(384, 560, 624, 688, Z12)
	ACT6(416, 564, 628, 692, Z13)
	ACT6(448, 568, 632, 696, Z14)
	ACT6(480, 572, 636, 700, Z15)
	UNITI4(16, 320)
	ACT6(704, 1216, 1280, 1344, Z0)
	ACT6(736, 1220, 1284, 1348, Z1)
	ACT6(768, 1224, 1288, 1352, Z2)
	ACT6(800, 1228, 1292, 1356, Z3)
	ACT6(832, 1232, 1296, 1360, Z4)
	ACT6(864, 1236, 1300, 1364, Z5)
	ACT6(896, 1240, 1304, 1368, Z6)
	ACT6(928, 1244, 1308, 1372, Z7)
	ACT6(960, 1248, 1312, 1376, Z8)
	ACT6(992, 1252, 1316, 1380, Z9)
	ACT6(1024, 1256, 1320, 1384, Z10)
	ACT6(1056, 1260, 1324, 1388, Z11)
	ACT6(1088, 1264, 1328, 1392, Z12)
	ACT6(1120, 1268, 1332, 1396, Z13)
	ACT6(1152, 1272, 1336, 1400, Z14)
	ACT6(1184, 1276, 1340, 1404, Z15)
	UNITI4(32, 576)
	ACT6(1408, 1920, 1984, 2048, Z0)
	ACT6(1440, 1924, 1988, 2052, Z1)
	ACT6(1472, 1928, 1992, 2056, Z2)
	ACT6(1504, 1932, 1996, 2060, Z3)
	ACT6(1536, 1936, 2000, 2064, Z4)
	ACT6(1568, 1940, 2004, 2068, Z5)
	ACT6(1600, 1944, 2008, 2072, Z6)
	ACT6(1632, 1948, 2012, 2076, Z7)
	ACT6(1664, 1952, 2016, 2080, Z8)
	ACT6(1696, 1956, 2020, 2084, Z9)
	ACT6(1728, 1960, 2024, 2088, Z10)
	ACT6(1760, 1964, 2028, 2092, Z11)
	ACT6(1792, 1968, 2032, 2096, Z12)
	ACT6(1824, 1972, 2036, 2100, Z13)
	ACT6(1856, 1976, 2040, 2104, Z14)
	ACT6(1888, 1980, 2044, 2108, Z15)
	UNITI4(48, 832)
	ACT6(2112, 2624, 2688, 2752, Z0)
	ACT6(2144, 2628, 2692, 2756, Z1)
	ACT6(2176, 2632, 2696, 2760, Z2)
	ACT6(2208, 2636, 2700, 2764, Z3)
	ACT6(2240, 2640, 2704, 2768, Z4)
	ACT6(2272, 2644, 2708, 2772, Z5)
	ACT6(2304, 2648, 2712, 2776, Z6)
	ACT6(2336, 2652, 2716, 2780, Z7)
	ACT6(2368, 2656, 2720, 2784, Z8)
	ACT6(2400, 2660, 2724, 2788, Z9)
	ACT6(2432, 2664, 2728, 2792, Z10)
	ACT6(2464, 2668, 2732, 2796, Z11)
	ACT6(2496, 2672, 2736, 2800, Z12)
	ACT6(2528, 2676, 2740, 2804, Z13)
	ACT6(2560, 2680, 2744, 2808, Z14)
	ACT6(2592, 2684, 2748, 2812, Z15)
	ADDQ $2816, SI
	ADDQ $1088, R11
	DECQ DX
	JNZ  pair
	MOVQ R11, R8
	DECQ CX
	JNZ  super
	MOVQ DI, R10
	VMOVUPS Z0, (R10)
	CMPQ BX, $2
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	CMPQ BX, $3
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	CMPQ BX, $4
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	CMPQ BX, $5
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	CMPQ BX, $6
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	CMPQ BX, $7
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	CMPQ BX, $8
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	CMPQ BX, $9
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	CMPQ BX, $10
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	CMPQ BX, $11
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	CMPQ BX, $12
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	CMPQ BX, $13
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	CMPQ BX, $14
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	CMPQ BX, $15
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	CMPQ BX, $16
	JLT  stored
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
stored:
	ADDQ $64, DI
	DECQ R14
	JNZ  tile
	VZEROUPPER
	RET
