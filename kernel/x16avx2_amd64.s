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

// HALF4(hoff): a Q4_0 unit's half (rows 8·hoff/32 on): its 8 scales and
// the 32-byte halves of its four chunks split into eight groups.
#define HALF4(hoff) \
	VCVTPH2PS (hoff/2)(R8), Y12; \
	VMOVDQU (32+hoff)(R8), Y15; \
	VPAND Y15, Y11, Y0; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y1; \
	VMOVDQU (96+hoff)(R8), Y15; \
	VPAND Y15, Y11, Y2; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y3; \
	VMOVDQU (160+hoff)(R8), Y15; \
	VPAND Y15, Y11, Y4; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y5; \
	VMOVDQU (224+hoff)(R8), Y15; \
	VPAND Y15, Y11, Y6; \
	VPSRLW $4, Y15, Y15; \
	VPAND Y15, Y11, Y7

// TILESTART zeroes acc and points SI at the panel; TILEEND stores the real
// rows and moves to the next tile (jumping to tile).
#define TILESTART(zl) \
	MOVQ R12, R10; \
	MOVQ DX, CX; \
	VPXOR Y9, Y9, Y9; \
zl: \
	VMOVUPS Y9, (R10); \
	VMOVUPS Y9, 32(R10); \
	ADDQ $64, R10; \
	DECQ CX; \
	JNZ  zl; \
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

// func x16Q4AVX2(units, tiles int, w, a *byte, out *float32, stride, rows, width int, acc *float32)
TEXT ·x16Q4AVX2(SB), NOSPLIT, $8-72
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
tile:
	TILESTART(zero)
	MOVQ R13, ucnt-8(SP)
unit:
	HALF4(0)
	ACTS(0, acts0)
	HALF4(32)
	ACTS(32, acts1)
	ADDQ $288, R8
	IMUL3Q $40, DX, R10
	ADDQ R10, SI
	DECQ ucnt-8(SP)
	JNZ  unit
	TILEEND(store)
	JNZ  tile
	VZEROUPPER
	RET
