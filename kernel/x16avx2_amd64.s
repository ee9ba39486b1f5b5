//go:build amd64 && !purego

#include "textflag.h"

// AVX2 x16 kernels (x16.go has the layout and the specification): a ymm
// register holds 8 of a tile's 16 rows, so each unit is done in two halves;
// VPMADDUBSW + VPMADDWD stand in for VPDPBUSD (levels ≤ 63 times int8
// activations: the 16-bit pair sums cannot saturate). The panel's width is
// a run-time loop and the accumulators live in acc ([width][16]f32), so
// one kernel serves every width.
// Registers: Y0..Y7 the half-unit's levels (group g: lane r = u[r][4g..4g+3]),
// Y8 an activation row's integer sums, Y9 a product, Y10 int16 ones,
// Y11 the nibble mask, Y12 the half's row scales, Y13 a broadcast
// quad of activations, Y14 its scale, Y15 a temporary.
// AX the panel, SI the unit's record, R8 the weights, DI the tile's
// outputs, R9 the output stride, DX the width, R12 acc, R13 units per tile,
// R14 tiles left; in the activation loop CX counts rows, R10 their quants,
// R11 their dx (corr 4·width bytes on), BX their accumulators.

DATA x16ones<>+0(SB)/8, $0x0001000100010001
GLOBL x16ones<>(SB), RODATA|NOPTR, $8

DATA x16nib2<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL x16nib2<>(SB), RODATA|NOPTR, $8

// GRP(g, reg): Y8 += Σ_{t<4} u[r][4g+t]·q[4g+t] per lane.
#define GRP(g, reg) \
	VPBROADCASTD (g*4)(R10), Y13; \
	VPMADDUBSW Y13, reg, Y9; \
	VPMADDWD Y10, Y9, Y9; \
	VPADDD Y9, Y8, Y8

// ACTS(hoff): every activation row of the panel against the half-unit in
// Y0..Y7 (scales Y12), accumulated at acc + 64k + hoff.
#define ACTS(hoff, lbl) \
	MOVQ SI, R10; \
	IMUL3Q $32, DX, R11; \
	ADDQ SI, R11; \
	MOVQ R12, BX; \
	MOVQ DX, CX; \
lbl: \
	VPBROADCASTD (R11)(DX*4), Y8; \
	GRP(0, Y0); \
	GRP(1, Y1); \
	GRP(2, Y2); \
	GRP(3, Y3); \
	GRP(4, Y4); \
	GRP(5, Y5); \
	GRP(6, Y6); \
	GRP(7, Y7); \
	VCVTDQ2PS Y8, Y8; \
	VBROADCASTSS (R11), Y14; \
	VMULPS Y14, Y12, Y14; \
	VMOVUPS hoff(BX), Y15; \
	VFMADD231PS Y14, Y8, Y15; \
	VMOVUPS Y15, hoff(BX); \
	ADDQ $32, R10; \
	ADDQ $4, R11; \
	ADDQ $64, BX; \
	DECQ CX; \
	JNZ  lbl

// HALF4(hoff, so, lo): a Q4_0 unit's half (rows 8·hoff/32 on): its 8
// scales (the unit's scales so bytes on from R8) and the 32-byte halves
// of its four chunks (lo bytes on) split into eight groups. Q4_0 units
// are paired (x16.go): the scales of both, then the chunks of both.
#define HALF4(hoff, so, lo) \
	VCVTPH2PS (so+hoff/2)(R8), Y12; \
	VMOVDQU (lo+hoff)(R8), Y15; \
	VPAND Y15, Y11, Y0; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y1; \
	VMOVDQU (lo+64+hoff)(R8), Y15; \
	VPAND Y15, Y11, Y2; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y3; \
	VMOVDQU (lo+128+hoff)(R8), Y15; \
	VPAND Y15, Y11, Y4; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y5; \
	VMOVDQU (lo+192+hoff)(R8), Y15; \
	VPAND Y15, Y11, Y6; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y7

// UNITP(HALF, so, lo, la, lb): one unit's two halves (HALF4, HALF5)
// against the panel, then the next unit's activation records.
#define UNITP(HALF, so, lo, la, lb) \
	HALF(0, so, lo); \
	ACTS(0, la); \
	HALF(32, so, lo); \
	ACTS(32, lb); \
	IMUL3Q $40, DX, R10; \
	ADDQ R10, SI

// QBODYP is the loops of a kernel whose units of rec bytes go in pairs
// (Q4_0, Q5_0): per tile, pairs of units (both units' 32 bytes of scales,
// then both units' levels), then an odd tile's last unit (its scales, 32
// bytes of padding, then its levels); the l* arguments name the labels.
#define QBODYP(HALF, rec, ltile, lzero, lload, lloaded, lpair, la0, la1, la2, la3, la4, la5, llone, lpaired, lstore) \
ltile: \
	TILESTART(lzero, lload, lloaded); \
	MOVQ R13, ucnt-8(SP); \
	SHRQ $1, ucnt-8(SP); \
	JZ   llone; \
lpair: \
	UNITP(HALF, 0, 64, la0, la1); \
	UNITP(HALF, 32, rec+32, la2, la3); \
	ADDQ $(2*rec), R8; \
	DECQ ucnt-8(SP); \
	JNZ  lpair; \
llone: \
	TESTQ $1, R13; \
	JZ   lpaired; \
	UNITP(HALF, 0, 64, la4, la5); \
	ADDQ $(rec+32), R8; \
lpaired: \
	TILEEND(lstore); \
	JNZ  ltile; \
	VZEROUPPER; \
	RET

// TILESTART zeroes acc, then with the add flag loads the real rows' sums
// from out (X16Cols), and points SI at the panel; TILEEND stores the real
// rows and moves to the next tile (jumping to tile).
#define TILESTART(zl, al, dl) \
	MOVQ R12, R10; \
	MOVQ DX, CX; \
	VPXOR Y9, Y9, Y9; \
zl: \
	VMOVUPS Y9, (R10); \
	VMOVUPS Y9, 32(R10); \
	ADDQ $64, R10; \
	DECQ CX; \
	JNZ  zl; \
	CMPQ add+72(FP), $0; \
	JEQ  dl; \
	MOVQ R12, R10; \
	MOVQ DI, R11; \
	MOVQ rows+48(FP), CX; \
al: \
	VMOVUPS (R11), Y9; \
	VMOVUPS Y9, (R10); \
	VMOVUPS 32(R11), Y9; \
	VMOVUPS Y9, 32(R10); \
	ADDQ $64, R10; \
	ADDQ R9, R11; \
	DECQ CX; \
	JNZ  al; \
dl: \
	MOVQ AX, SI

#define TILEEND(sl) \
	MOVQ R12, R10; \
	MOVQ DI, R11; \
	MOVQ rows+48(FP), CX; \
sl: \
	VMOVUPS (R10), Y9; \
	VMOVUPS Y9, (R11); \
	VMOVUPS 32(R10), Y9; \
	VMOVUPS Y9, 32(R11); \
	ADDQ $64, R10; \
	ADDQ R9, R11; \
	DECQ CX; \
	JNZ  sl; \
	ADDQ $64, DI; \
	DECQ R14

// SUPER1 points R8 at a super-block's head (it is) and scp at its first
// pair of units, head bytes on; NEXT1 moves R8 to the next super-block.
#define SUPER1(head, rec, lodd, lset) \
	LEAQ head(R8), R10; \
	MOVQ R10, scp-24(SP)

#define NEXT1(rec) \
	ADDQ $rec, R8

// SUPER2 for super-blocks in pairs (both heads of head bytes, then both
// bodies): super-block i = R13 − ucnt of the tile, R8 the end of the last
// body. An even i is a pair's first or the tile's lone last (its body two
// heads on: a lone one's head is padded); an odd i's body starts at R8 and
// its head is rec bytes before. NEXT2 moves R8 to the end of the body.
#define SUPER2(head, rec, lodd, lset) \
	MOVQ R13, R10; \
	SUBQ ucnt-8(SP), R10; \
	TESTQ $1, R10; \
	JNZ  lodd; \
	LEAQ (2*head)(R8), R10; \
	JMP  lset; \
lodd: \
	MOVQ R8, R10; \
	SUBQ $rec, R8; \
lset: \
	MOVQ R10, scp-24(SP)

#define NEXT2(rec) \
	MOVQ scp-24(SP), R8

// KBODY is a K-quant kernel's loops (after its arguments are loaded as
// x16Q4AVX2 loads them): per tile, per super-block of rec bytes, four
// pairs of units (the pair's 64 bytes of scales, 32 per unit, then each
// unit's lev bytes of levels; the first pair head bytes into the record),
// each unit's two halves unpacked by HALF (R10 its scales, R11 its levels)
// and run against the panel's rows by ACTS; arec is the activation
// record's bytes per row; SUPER and NEXT place each super-block (SUPER1,
// NEXT1: one after another; SUPER2, NEXT2: in pairs, x16.go's superAt);
// the l* arguments name the labels.
#define KBODY(HALF, ACTS, SUPER, NEXT, head, lev, arec, rec, ltile, lzero, lload, lloaded, lsuper, lodd, lset, lsub, lacts0, lacts1, lacts2, lacts3, lstore) \
ltile: \
	TILESTART(lzero, lload, lloaded); \
	MOVQ R13, ucnt-8(SP); \
lsuper: \
	MOVQ $4, sub-16(SP); \
	SUPER(head, rec, lodd, lset); \
lsub: \
	MOVQ scp-24(SP), R10; \
	LEAQ 64(R10), R11; \
	HALF(0); \
	ACTS(0, lacts0); \
	MOVQ scp-24(SP), R10; \
	LEAQ 64(R10), R11; \
	HALF(32); \
	ACTS(32, lacts1); \
	IMUL3Q $arec, DX, R10; \
	ADDQ R10, SI; \
	MOVQ scp-24(SP), R10; \
	LEAQ (64+lev)(R10), R11; \
	ADDQ $32, R10; \
	HALF(0); \
	ACTS(0, lacts2); \
	MOVQ scp-24(SP), R10; \
	LEAQ (64+lev)(R10), R11; \
	ADDQ $32, R10; \
	HALF(32); \
	ACTS(32, lacts3); \
	IMUL3Q $arec, DX, R10; \
	ADDQ R10, SI; \
	ADDQ $(64+2*lev), scp-24(SP); \
	DECQ sub-16(SP); \
	JNZ  lsub; \
	NEXT(rec); \
	DECQ ucnt-8(SP); \
	JNZ  lsuper; \
	TILEEND(lstore); \
	JNZ  ltile; \
	VZEROUPPER; \
	RET

// QBODY is a Q-family kernel's loops (after its arguments are loaded): per
// tile, per unit of rec bytes, its two halves unpacked by HALF and run
// against the panel's rows by ACTS (activation records of 40 bytes per
// row); the l* arguments name the labels.
#define QBODY(HALF, ACTS, rec, ltile, lzero, lload, lloaded, lunit, lacts0, lacts1, lstore) \
ltile: \
	TILESTART(lzero, lload, lloaded); \
	MOVQ R13, ucnt-8(SP); \
lunit: \
	HALF(0); \
	ACTS(0, lacts0); \
	HALF(32); \
	ACTS(32, lacts1); \
	ADDQ $rec, R8; \
	IMUL3Q $40, DX, R10; \
	ADDQ R10, SI; \
	DECQ ucnt-8(SP); \
	JNZ  lunit; \
	TILEEND(lstore); \
	JNZ  ltile; \
	VZEROUPPER; \
	RET

// func x16Q4AVX2(units, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)
TEXT ·x16Q4AVX2(SB), NOSPLIT, $8-80
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ width+56(FP), DX
	MOVQ acc+64(FP), R12
	VPBROADCASTQ x16ones<>(SB), Y10
	VPBROADCASTQ x16nib2<>(SB), Y11
	QBODYP(HALF4, 288, q4tile, q4zero, q4load, q4loaded, q4pair, q4a0, q4a1, q4a2, q4a3, q4a4, q4a5, q4lone, q4paired, q4store)

// The K-quant kernels keep the sub-block's second scale (Q4_K/Q5_K: the
// min s2 = dmin·m; Q6_K: the second half's d·sc) in the frame, as
// there is no register left for it.

// GRPS(g, reg, acc): acc += Σ_{t<4} u[r][4g+t]·q[4g+t] per lane.
#define GRPS(g, reg, acc) \
	VPBROADCASTD (g*4)(R10), Y13; \
	VPMADDUBSW Y13, reg, Y9; \
	VPMADDWD Y10, Y9, Y9; \
	VPADDD Y9, acc, acc

// ACTSK(hoff): as ACTS for a Q4_K/Q5_K sub-block: no correction; after
// the scaled sum, acc −= s2·(dx·Σq) with s2 at s2-64(SP).
#define ACTSK(hoff, lbl) \
	MOVQ SI, R10; \
	IMUL3Q $32, DX, R11; \
	ADDQ SI, R11; \
	MOVQ R12, BX; \
	MOVQ DX, CX; \
lbl: \
	VPXOR Y8, Y8, Y8; \
	GRPS(0, Y0, Y8); \
	GRPS(1, Y1, Y8); \
	GRPS(2, Y2, Y8); \
	GRPS(3, Y3, Y8); \
	GRPS(4, Y4, Y8); \
	GRPS(5, Y5, Y8); \
	GRPS(6, Y6, Y8); \
	GRPS(7, Y7, Y8); \
	VCVTDQ2PS Y8, Y8; \
	VBROADCASTSS (R11), Y14; \
	VMULPS Y14, Y12, Y14; \
	VMOVUPS hoff(BX), Y15; \
	VFMADD231PS Y14, Y8, Y15; \
	VBROADCASTSS (R11)(DX*4), Y14; \
	VFNMADD231PS s2-64(SP), Y14, Y15; \
	VMOVUPS Y15, hoff(BX); \
	ADDQ $32, R10; \
	ADDQ $4, R11; \
	ADDQ $64, BX; \
	DECQ CX; \
	JNZ  lbl

// CHUNKSR(reg, base, hoff): the 32-byte halves of four chunks of nibbles
// (base bytes on from reg: a K-quant's sub-block at R11, a Q-family unit
// at R8) split into Y0..Y7, each chunk loaded once into Y15.
#define CHUNKSR(reg, base, hoff) \
	VMOVDQU (base+hoff)(reg), Y15; \
	VPAND Y15, Y11, Y0; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y1; \
	VMOVDQU (base+64+hoff)(reg), Y15; \
	VPAND Y15, Y11, Y2; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y3; \
	VMOVDQU (base+128+hoff)(reg), Y15; \
	VPAND Y15, Y11, Y4; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y5; \
	VMOVDQU (base+192+hoff)(reg), Y15; \
	VPAND Y15, Y11, Y6; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y7

// CHUNKS4(base, hoff): the 32-byte halves of four chunks of low nibbles at
// base into Y0..Y7, the low nibbles ANDed straight from memory, so that
// the chunk's register load feeds only the shift (Q4_K: 1B Q4_K_M decode
// 1.01-1.06x in five in-process A/B runs). CHUNKSR is the one-load form,
// which Q5_K and Q6_K keep, as their AVX-512 twins keep CHUNKSR: they
// merge more bits into the levels (one run with CHUNKS4 there: Q5_K_M
// 4 % slower, about the spread between identical kernels).
#define CHUNKS4(base, hoff) \
	VPAND (base+hoff)(R11), Y11, Y0; \
	VMOVDQU (base+hoff)(R11), Y15; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y1; \
	VPAND (base+64+hoff)(R11), Y11, Y2; \
	VMOVDQU (base+64+hoff)(R11), Y15; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y3; \
	VPAND (base+128+hoff)(R11), Y11, Y4; \
	VMOVDQU (base+128+hoff)(R11), Y15; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y5; \
	VPAND (base+192+hoff)(R11), Y11, Y6; \
	VMOVDQU (base+192+hoff)(R11), Y15; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y7

// HALFK(hoff): a Q4_K sub-block's half (R8 the super-block, R10 its
// scales sc[j] and mins 16 bytes on, R11 its chunks): s1 = d·sc into Y12,
// s2 = dmin·m into the frame (HALFKSC), the levels into Y0..Y7.
#define HALFKSC(hoff) \
	VCVTPH2PS (hoff/2)(R8), Y12; \
	VPMOVZXBD (hoff/4)(R10), Y15; \
	VCVTDQ2PS Y15, Y15; \
	VMULPS Y15, Y12, Y12; \
	VCVTPH2PS (32+hoff/2)(R8), Y14; \
	VPMOVZXBD (16+hoff/4)(R10), Y15; \
	VCVTDQ2PS Y15, Y15; \
	VMULPS Y15, Y14, Y14; \
	VMOVUPS Y14, s2-64(SP)

#define HALFK(hoff) \
	HALFKSC(hoff); \
	CHUNKS4(0, hoff)

// func x16K4AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)
TEXT ·x16K4AVX2(SB), NOSPLIT, $64-80
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ width+56(FP), DX
	MOVQ acc+64(FP), R12
	VPBROADCASTQ x16ones<>(SB), Y10
	VPBROADCASTQ x16nib2<>(SB), Y11
	KBODY(HALFK, ACTSK, SUPER1, NEXT1, 64, 256, 40, 2368, k4tile, k4zero, k4load, k4loaded, k4super, k4odd, k4set, k4sub, k4acts0, k4acts1, k4acts2, k4acts3, k4store)

DATA x16m30y<>+0(SB)/8, $0x3030303030303030
DATA x16m30y<>+8(SB)/8, $0x3030303030303030
DATA x16m30y<>+16(SB)/8, $0x3030303030303030
DATA x16m30y<>+24(SB)/8, $0x3030303030303030
GLOBL x16m30y<>(SB), RODATA|NOPTR, $32

// HI6(op, sh, reg): reg |= (the high-bit chunk half in Y14, shifted so
// that field reg's bits land in bits 4..5) & 0x30.
#define HI6(op, sh, reg) \
	op $sh, Y14, Y15; \
	VPAND x16m30y<>(SB), Y15, Y15; \
	VPOR Y15, reg, reg

// HALF6(hoff): a Q6_K unit's half (R8 the super-block, R10 the unit's two
// scale rows, R11 its levels): s1a = d·sc[2u] into Y12, s1b = d·sc[2u+1]
// into the frame, the six-bit levels into Y0..Y7.
#define HALF6(hoff) \
	VCVTPH2PS (hoff/2)(R8), Y14; \
	VPMOVSXBD (hoff/4)(R10), Y15; \
	VCVTDQ2PS Y15, Y15; \
	VMULPS Y15, Y14, Y12; \
	VPMOVSXBD (16+hoff/4)(R10), Y15; \
	VCVTDQ2PS Y15, Y15; \
	VMULPS Y15, Y14, Y15; \
	VMOVUPS Y15, s1b-64(SP); \
	CHUNKSR(R11, 0, hoff); \
	VMOVDQU (256+hoff)(R11), Y14; \
	HI6(VPSLLW, 4, Y0); \
	HI6(VPSLLW, 2, Y1); \
	VPAND x16m30y<>(SB), Y14, Y15; \
	VPOR Y15, Y2, Y2; \
	HI6(VPSRLW, 2, Y3); \
	VMOVDQU (320+hoff)(R11), Y14; \
	HI6(VPSLLW, 4, Y4); \
	HI6(VPSLLW, 2, Y5); \
	VPAND x16m30y<>(SB), Y14, Y15; \
	VPOR Y15, Y6, Y6; \
	HI6(VPSRLW, 2, Y7)

// ACTS6(hoff): every activation row against a Q6_K unit's half: the two
// 16-column halves with their corrections (4·width and 8·width bytes past
// dx) and scales.
#define ACTS6(hoff, lbl) \
	MOVQ SI, R10; \
	IMUL3Q $32, DX, R11; \
	ADDQ SI, R11; \
	MOVQ R12, BX; \
	MOVQ DX, CX; \
lbl: \
	VPBROADCASTD (R11)(DX*4), Y8; \
	GRPS(0, Y0, Y8); \
	GRPS(1, Y1, Y8); \
	GRPS(2, Y2, Y8); \
	GRPS(3, Y3, Y8); \
	VCVTDQ2PS Y8, Y8; \
	VBROADCASTSS (R11), Y14; \
	VMULPS Y14, Y12, Y13; \
	VMOVUPS hoff(BX), Y15; \
	VFMADD231PS Y13, Y8, Y15; \
	VPBROADCASTD (R11)(DX*8), Y8; \
	GRPS(4, Y4, Y8); \
	GRPS(5, Y5, Y8); \
	GRPS(6, Y6, Y8); \
	GRPS(7, Y7, Y8); \
	VCVTDQ2PS Y8, Y8; \
	VMULPS s1b-64(SP), Y14, Y13; \
	VFMADD231PS Y13, Y8, Y15; \
	VMOVUPS Y15, hoff(BX); \
	ADDQ $32, R10; \
	ADDQ $4, R11; \
	ADDQ $64, BX; \
	DECQ CX; \
	JNZ  lbl

// func x16K6AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)
TEXT ·x16K6AVX2(SB), NOSPLIT, $64-80
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ width+56(FP), DX
	MOVQ acc+64(FP), R12
	VPBROADCASTQ x16ones<>(SB), Y10
	VPBROADCASTQ x16nib2<>(SB), Y11
	KBODY(HALF6, ACTS6, SUPER2, NEXT2, 32, 384, 44, 3360, k6tile, k6zero, k6load, k6loaded, k6super, k6odd, k6set, k6sub, k6acts0, k6acts1, k6acts2, k6acts3, k6store)

DATA x16m10y<>+0(SB)/8, $0x1010101010101010
DATA x16m10y<>+8(SB)/8, $0x1010101010101010
DATA x16m10y<>+16(SB)/8, $0x1010101010101010
DATA x16m10y<>+24(SB)/8, $0x1010101010101010
GLOBL x16m10y<>(SB), RODATA|NOPTR, $32

// HI5(op, sh, reg): reg |= (the fifth-bit chunk half in Y14, shifted so
// that bit g lands in bit 4) & 0x10.
#define HI5(op, sh, reg) \
	op $sh, Y14, Y15; \
	VPAND x16m10y<>(SB), Y15, Y15; \
	VPOR Y15, reg, reg

// HALFK5(hoff): HALFK for Q5_K (chunks 320 bytes apart), then the fifth
// bits (256 bytes into the sub-block) merged into Y0..Y7.
#define HALFK5(hoff) \
	HALFKSC(hoff); \
	CHUNKSR(R11, 0, hoff); \
	VMOVDQU (256+hoff)(R11), Y14; \
	HI5(VPSLLW, 4, Y0); \
	HI5(VPSLLW, 3, Y1); \
	HI5(VPSLLW, 2, Y2); \
	HI5(VPSLLW, 1, Y3); \
	VPAND x16m10y<>(SB), Y14, Y15; \
	VPOR Y15, Y4, Y4; \
	HI5(VPSRLW, 1, Y5); \
	HI5(VPSRLW, 2, Y6); \
	HI5(VPSRLW, 3, Y7)

// func x16K5AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)
TEXT ·x16K5AVX2(SB), NOSPLIT, $64-80
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ width+56(FP), DX
	MOVQ acc+64(FP), R12
	VPBROADCASTQ x16ones<>(SB), Y10
	VPBROADCASTQ x16nib2<>(SB), Y11
	KBODY(HALFK5, ACTSK, SUPER1, NEXT1, 64, 320, 40, 2880, k5tile, k5zero, k5load, k5loaded, k5super, k5odd, k5set, k5sub, k5acts0, k5acts1, k5acts2, k5acts3, k5store)

DATA x16m03y<>+0(SB)/8, $0x0303030303030303
GLOBL x16m03y<>(SB), RODATA|NOPTR, $8
DATA x16m04y<>+0(SB)/8, $0x0404040404040404
DATA x16m04y<>+8(SB)/8, $0x0404040404040404
DATA x16m04y<>+16(SB)/8, $0x0404040404040404
DATA x16m04y<>+24(SB)/8, $0x0404040404040404
GLOBL x16m04y<>(SB), RODATA|NOPTR, $32

// LOW3Y(off, r0, r1, r2, r3): the 32-byte half of a chunk of two-bit
// fields at off(R11) split into four groups (field i: ri); Y11 holds 0x03.
#define LOW3Y(off, r0, r1, r2, r3) \
	VMOVDQU off(R11), Y15; \
	VPAND Y15, Y11, r0; \
	VPSRLW $2, Y15, Y13; \
	VPAND Y13, Y11, r1; \
	VPSRLW $4, Y15, Y13; \
	VPAND Y13, Y11, r2; \
	VPSRLW $6, Y15, Y13; \
	VPAND Y13, Y11, r3

// HI3Y(op, sh, reg): reg |= (the high-bit chunk half in Y14, shifted so
// that bit g lands in bit 2) & 0x04.
#define HI3Y(op, sh, reg) \
	op $sh, Y14, Y15; \
	VPAND x16m04y<>(SB), Y15, Y15; \
	VPOR Y15, reg, reg

// HALF3(hoff): a Q3_K unit's half, as HALF6 (its two halves' signed
// scales, Y12 and the frame), the three-bit levels into Y0..Y7.
#define HALF3(hoff) \
	VCVTPH2PS (hoff/2)(R8), Y14; \
	VPMOVSXBD (hoff/4)(R10), Y15; \
	VCVTDQ2PS Y15, Y15; \
	VMULPS Y15, Y14, Y12; \
	VPMOVSXBD (16+hoff/4)(R10), Y15; \
	VCVTDQ2PS Y15, Y15; \
	VMULPS Y15, Y14, Y15; \
	VMOVUPS Y15, s1b-64(SP); \
	LOW3Y(hoff, Y0, Y1, Y2, Y3); \
	LOW3Y(64+hoff, Y4, Y5, Y6, Y7); \
	VMOVDQU (128+hoff)(R11), Y14; \
	HI3Y(VPSLLW, 2, Y0); \
	HI3Y(VPSLLW, 1, Y1); \
	VPAND x16m04y<>(SB), Y14, Y15; \
	VPOR Y15, Y2, Y2; \
	HI3Y(VPSRLW, 1, Y3); \
	HI3Y(VPSRLW, 2, Y4); \
	HI3Y(VPSRLW, 3, Y5); \
	HI3Y(VPSRLW, 4, Y6); \
	HI3Y(VPSRLW, 5, Y7)

// func x16K3AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)
TEXT ·x16K3AVX2(SB), NOSPLIT, $64-80
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ width+56(FP), DX
	MOVQ acc+64(FP), R12
	VPBROADCASTQ x16ones<>(SB), Y10
	VPBROADCASTQ x16m03y<>(SB), Y11
	KBODY(HALF3, ACTS6, SUPER2, NEXT2, 32, 192, 44, 1824, k3tile, k3zero, k3load, k3loaded, k3super, k3odd, k3set, k3sub, k3acts0, k3acts1, k3acts2, k3acts3, k3store)

DATA x16m0fy<>+0(SB)/8, $0x0000000f0000000f
DATA x16m0fy<>+8(SB)/8, $0x0000000f0000000f
DATA x16m0fy<>+16(SB)/8, $0x0000000f0000000f
DATA x16m0fy<>+24(SB)/8, $0x0000000f0000000f
GLOBL x16m0fy<>(SB), RODATA|NOPTR, $32

// SCALES2Y(soff, hoff, s1, s2): one 16-column half's scale/min bytes of the
// half-unit's 8 rows (soff(R10)) as s1 = d·(byte & 15) into register s1
// and s2 = dmin·(byte >> 4) into the frame slot s2.
#define SCALES2Y(soff, hoff, s1, s2) \
	VPMOVZXBD soff(R10), Y15; \
	VPSRLD $4, Y15, Y13; \
	VPAND x16m0fy<>(SB), Y15, Y15; \
	VCVTDQ2PS Y15, Y15; \
	VCVTDQ2PS Y13, Y13; \
	VCVTPH2PS (hoff/2)(R8), Y14; \
	VMULPS Y15, Y14, s1; \
	VCVTPH2PS (32+hoff/2)(R8), Y14; \
	VMULPS Y13, Y14, Y13; \
	VMOVUPS Y13, s2

// HALF2(hoff): a Q2_K unit's half: s1a into Y12, s1b, s2a and s2b into the
// frame, the two-bit levels into Y0..Y7.
#define HALF2(hoff) \
	SCALES2Y(hoff/4, hoff, Y12, s2a-96(SP)); \
	SCALES2Y(16+hoff/4, hoff, Y9, s2b-128(SP)); \
	VMOVUPS Y9, s1b-64(SP); \
	LOW3Y(hoff, Y0, Y1, Y2, Y3); \
	LOW3Y(64+hoff, Y4, Y5, Y6, Y7)

// ACTS2(hoff): every activation row against a Q2_K unit's half: per
// 16-column half, acc += float(Σ)·s1·dx, then acc −= s2·(dx·Σq) (the
// record's two floats, 4·width and 8·width bytes past dx).
#define ACTS2(hoff, lbl) \
	MOVQ SI, R10; \
	IMUL3Q $32, DX, R11; \
	ADDQ SI, R11; \
	MOVQ R12, BX; \
	MOVQ DX, CX; \
lbl: \
	VPXOR Y8, Y8, Y8; \
	GRPS(0, Y0, Y8); \
	GRPS(1, Y1, Y8); \
	GRPS(2, Y2, Y8); \
	GRPS(3, Y3, Y8); \
	VCVTDQ2PS Y8, Y8; \
	VBROADCASTSS (R11), Y14; \
	VMULPS Y14, Y12, Y13; \
	VMOVUPS hoff(BX), Y15; \
	VFMADD231PS Y13, Y8, Y15; \
	VBROADCASTSS (R11)(DX*4), Y13; \
	VMOVUPS s2a-96(SP), Y9; \
	VFNMADD231PS Y13, Y9, Y15; \
	VPXOR Y8, Y8, Y8; \
	GRPS(4, Y4, Y8); \
	GRPS(5, Y5, Y8); \
	GRPS(6, Y6, Y8); \
	GRPS(7, Y7, Y8); \
	VCVTDQ2PS Y8, Y8; \
	VMULPS s1b-64(SP), Y14, Y13; \
	VFMADD231PS Y13, Y8, Y15; \
	VBROADCASTSS (R11)(DX*8), Y13; \
	VMOVUPS s2b-128(SP), Y9; \
	VFNMADD231PS Y13, Y9, Y15; \
	VMOVUPS Y15, hoff(BX); \
	ADDQ $32, R10; \
	ADDQ $4, R11; \
	ADDQ $64, BX; \
	DECQ CX; \
	JNZ  lbl

// func x16K2AVX2(supers, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)
TEXT ·x16K2AVX2(SB), NOSPLIT, $128-80
	MOVQ supers+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ width+56(FP), DX
	MOVQ acc+64(FP), R12
	VPBROADCASTQ x16ones<>(SB), Y10
	VPBROADCASTQ x16m03y<>(SB), Y11
	KBODY(HALF2, ACTS2, SUPER1, NEXT1, 64, 128, 44, 1344, k2tile, k2zero, k2load, k2loaded, k2super, k2odd, k2set, k2sub, k2acts0, k2acts1, k2acts2, k2acts3, k2store)

// FIFTHQ(off): the fifth bits' chunk half at off(R8) merged into Y0..Y7.
#define FIFTHQ(off) \
	VMOVDQU off(R8), Y14; \
	HI5(VPSLLW, 4, Y0); \
	HI5(VPSLLW, 3, Y1); \
	HI5(VPSLLW, 2, Y2); \
	HI5(VPSLLW, 1, Y3); \
	VPAND x16m10y<>(SB), Y14, Y15; \
	VPOR Y15, Y4, Y4; \
	HI5(VPSRLW, 1, Y5); \
	HI5(VPSRLW, 2, Y6); \
	HI5(VPSRLW, 3, Y7)

// HALF5(hoff, so, lo): a Q5_0 unit's half (paired as Q4_0's: its scales
// so bytes on from R8, its levels lo bytes on): its scales, its chunk
// halves, then the fifth bits.
#define HALF5(hoff, so, lo) \
	VCVTPH2PS (so+hoff/2)(R8), Y12; \
	CHUNKSR(R8, lo, hoff); \
	FIFTHQ(lo+256+hoff)

// HALF41(hoff): a Q4_1 unit's half: d into Y12, the rows' mins into the
// frame, the nibbles.
#define HALF41(hoff) \
	VCVTPH2PS (hoff/2)(R8), Y12; \
	VCVTPH2PS (32+hoff/2)(R8), Y15; \
	VMOVUPS Y15, mrow-64(SP); \
	CHUNKSR(R8, 64, hoff)

#define HALF51(hoff) \
	HALF41(hoff); \
	FIFTHQ(320+hoff)

// ACTSM(hoff): every activation row against a Q4_1/Q5_1 unit's half:
// acc += float(Σ)·d·dx, then acc += m·s (Q8_1's s, 4·width bytes past dx).
#define ACTSM(hoff, lbl) \
	MOVQ SI, R10; \
	IMUL3Q $32, DX, R11; \
	ADDQ SI, R11; \
	MOVQ R12, BX; \
	MOVQ DX, CX; \
lbl: \
	VPXOR Y8, Y8, Y8; \
	GRP(0, Y0); \
	GRP(1, Y1); \
	GRP(2, Y2); \
	GRP(3, Y3); \
	GRP(4, Y4); \
	GRP(5, Y5); \
	GRP(6, Y6); \
	GRP(7, Y7); \
	VCVTDQ2PS Y8, Y8; \
	VBROADCASTSS (R11), Y14; \
	VMULPS Y14, Y12, Y14; \
	VMOVUPS hoff(BX), Y15; \
	VFMADD231PS Y14, Y8, Y15; \
	VBROADCASTSS (R11)(DX*4), Y13; \
	VMOVUPS mrow-64(SP), Y9; \
	VFMADD231PS Y13, Y9, Y15; \
	VMOVUPS Y15, hoff(BX); \
	ADDQ $32, R10; \
	ADDQ $4, R11; \
	ADDQ $64, BX; \
	DECQ CX; \
	JNZ  lbl

// func x16Q5AVX2(units, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)
TEXT ·x16Q5AVX2(SB), NOSPLIT, $8-80
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ width+56(FP), DX
	MOVQ acc+64(FP), R12
	VPBROADCASTQ x16ones<>(SB), Y10
	VPBROADCASTQ x16nib2<>(SB), Y11
	QBODYP(HALF5, 352, q5tile, q5zero, q5load, q5loaded, q5pair, q5a0, q5a1, q5a2, q5a3, q5a4, q5a5, q5lone, q5paired, q5store)

// func x16Q41AVX2(units, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)
TEXT ·x16Q41AVX2(SB), NOSPLIT, $64-80
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ width+56(FP), DX
	MOVQ acc+64(FP), R12
	VPBROADCASTQ x16ones<>(SB), Y10
	VPBROADCASTQ x16nib2<>(SB), Y11
	QBODY(HALF41, ACTSM, 320, q41tile, q41zero, q41load, q41loaded, q41unit, q41acts0, q41acts1, q41store)

// func x16Q51AVX2(units, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32, add int)
TEXT ·x16Q51AVX2(SB), NOSPLIT, $64-80
	MOVQ units+0(FP), R13
	MOVQ tiles+8(FP), R14
	MOVQ w+16(FP), R8
	MOVQ a+24(FP), AX
	MOVQ out+32(FP), DI
	MOVQ stride+40(FP), R9
	MOVQ width+56(FP), DX
	MOVQ acc+64(FP), R12
	VPBROADCASTQ x16ones<>(SB), Y10
	VPBROADCASTQ x16nib2<>(SB), Y11
	QBODY(HALF51, ACTSM, 384, q51tile, q51zero, q51load, q51loaded, q51unit, q51acts0, q51acts1, q51store)
