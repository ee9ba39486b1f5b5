//go:build amd64 && !purego

#include "textflag.h"

DATA x80<>+0(SB)/8, $0x8080808080808080
GLOBL x80<>(SB), RODATA|NOPTR, $8
DATA nibt<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibt<>(SB), RODATA|NOPTR, $8

// Register use in the tile kernels:
//   Z0..Z15   accumulators, Z(4i+r) for activation row i, weight row r
//   Z16..Z19  two blocks of weight row r as unsigned levels u
//   Z20..Z23  their scales [dw_b ×8, dw_b+1 ×8]
//   Z24 quants of activation row i, Z25 its scales, Z26 integer sums
//   Z28 constant, Z30/Z31 temporaries
//   R8..R11 weight rows, SI the packed activation record, CX pairs left

// WQ8: weight row at reg → u = w+128 in zu, scales in zs.
#define WQ8(reg, zu, yu, zs) \
	VMOVDQU32 2(reg), yu; \
	VINSERTI64X4 $1, 36(reg), zu, zu; \
	VPXORD Z28, zu, zu; \
	VPBROADCASTW 0(reg), X30; \
	VPBROADCASTW 34(reg), X31; \
	VINSERTI32X4 $1, X31, Y30, Y30; \
	VCVTPH2PS Y30, zs

// WQ4: weight row at reg → nibbles in block order [A_lo A_hi B_lo B_hi].
#define WQ4(reg, zu, zs) \
	VMOVDQU32 2(reg), X30; \
	VINSERTI32X4 $1, 20(reg), Y30, Y30; \
	VPSRLW $4, Y30, Y31; \
	VPANDD Y28, Y30, Y30; \
	VPANDD Y28, Y31, Y31; \
	VINSERTI64X4 $1, Y31, Z30, Z30; \
	VSHUFI64X2 $0xd8, Z30, Z30, zu; \
	VPBROADCASTW 0(reg), X30; \
	VPBROADCASTW 18(reg), X31; \
	VINSERTI32X4 $1, X31, Y30, Y30; \
	VCVTPH2PS Y30, zs

// PAIR: acc += float(c + u·x) · dx · dw for one (activation, weight) row pair.
#define PAIR(coff, zu, zs, acc) \
	VMOVDQU32 coff(SI), Z26; \
	VPDPBUSD Z24, zu, Z26; \
	VCVTDQ2PS Z26, Z26; \
	VMULPS Z25, Z26, Z26; \
	VFMADD231PS zs, Z26, acc

// ROW: activation row i of the record against the four weight rows.
#define ROW(qoff, coff, doff, a0, a1, a2, a3) \
	VMOVDQU64 qoff(SI), Z24; \
	VBROADCASTSS doff(SI), Y25; \
	VBROADCASTSS doff+4(SI), Y31; \
	VINSERTF64X4 $1, Y31, Z25, Z25; \
	PAIR(coff, Z16, Z20, a0); \
	PAIR(coff, Z17, Z21, a1); \
	PAIR(coff, Z18, Z22, a2); \
	PAIR(coff, Z19, Z23, a3)

#define RECORD \
	ROW(0, 256, 512, Z0, Z1, Z2, Z3); \
	ROW(64, 320, 520, Z4, Z5, Z6, Z7); \
	ROW(128, 384, 528, Z8, Z9, Z10, Z11); \
	ROW(192, 448, 536, Z12, Z13, Z14, Z15)

// HREDUCE: tile[k] = Σ lanes of zk.
#define HREDUCE(zk, yk, xk, off) \
	VEXTRACTF64X4 $1, zk, Y30; \
	VADDPS Y30, yk, yk; \
	VEXTRACTF32X4 $1, yk, X30; \
	VADDPS X30, xk, xk; \
	VHADDPS xk, xk, xk; \
	VHADDPS xk, xk, xk; \
	VMOVSS xk, off(DI)

#define PROLOGUE \
	MOVQ pairs+0(FP), CX; \
	MOVQ w+8(FP), R8; \
	MOVQ wStride+16(FP), DX; \
	LEAQ (R8)(DX*1), R9; \
	LEAQ (R9)(DX*1), R10; \
	LEAQ (R10)(DX*1), R11; \
	MOVQ a+24(FP), SI; \
	MOVQ tile+32(FP), DI; \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15

#define EPILOGUE \
	HREDUCE(Z0, Y0, X0, 0); \
	HREDUCE(Z1, Y1, X1, 4); \
	HREDUCE(Z2, Y2, X2, 8); \
	HREDUCE(Z3, Y3, X3, 12); \
	HREDUCE(Z4, Y4, X4, 16); \
	HREDUCE(Z5, Y5, X5, 20); \
	HREDUCE(Z6, Y6, X6, 24); \
	HREDUCE(Z7, Y7, X7, 28); \
	HREDUCE(Z8, Y8, X8, 32); \
	HREDUCE(Z9, Y9, X9, 36); \
	HREDUCE(Z10, Y10, X10, 40); \
	HREDUCE(Z11, Y11, X11, 44); \
	HREDUCE(Z12, Y12, X12, 48); \
	HREDUCE(Z13, Y13, X13, 52); \
	HREDUCE(Z14, Y14, X14, 56); \
	HREDUCE(Z15, Y15, X15, 60); \
	VZEROUPPER

// func tileQ8_0VNNI(pairs int, w *byte, wStride int, a *byte, tile *[16]float32)
TEXT ·tileQ8_0VNNI(SB), NOSPLIT, $0-40
	PROLOGUE
	VPBROADCASTQ x80<>(SB), Z28
loop:
	WQ8(R8, Z16, Y16, Z20)
	WQ8(R9, Z17, Y17, Z21)
	WQ8(R10, Z18, Y18, Z22)
	WQ8(R11, Z19, Y19, Z23)
	RECORD
	ADDQ $68, R8
	ADDQ $68, R9
	ADDQ $68, R10
	ADDQ $68, R11
	ADDQ $544, SI
	DECQ CX
	JNZ  loop
	EPILOGUE
	RET

// func tileQ4_0VNNI(pairs int, w *byte, wStride int, a *byte, tile *[16]float32)
TEXT ·tileQ4_0VNNI(SB), NOSPLIT, $0-40
	PROLOGUE
	VPBROADCASTQ nibt<>(SB), Z28
loop:
	WQ4(R8, Z16, Z20)
	WQ4(R9, Z17, Z21)
	WQ4(R10, Z18, Z22)
	WQ4(R11, Z19, Z23)
	RECORD
	ADDQ $36, R8
	ADDQ $36, R9
	ADDQ $36, R10
	ADDQ $36, R11
	ADDQ $544, SI
	DECQ CX
	JNZ  loop
	EPILOGUE
	RET
