//go:build amd64 && !purego

#include "textflag.h"

// Registers of the float tiles: Z0..Z15 accumulators Z(4i+r) (activation
// i, weight row r); Z16..Z19 16 columns of weight rows 0..3 as float32;
// Z20..Z23 16 columns of activation rows 0..3; R8..R11 weight rows;
// SI, R12, R13, BX activation rows; CX column steps left; DI the tile.

#define FMA4(zx, a0, a1, a2, a3) \
	VFMADD231PS zx, Z16, a0; \
	VFMADD231PS zx, Z17, a1; \
	VFMADD231PS zx, Z18, a2; \
	VFMADD231PS zx, Z19, a3

#define XLOADFMA \
	VMOVUPS (SI), Z20; \
	VMOVUPS (R12), Z21; \
	VMOVUPS (R13), Z22; \
	VMOVUPS (BX), Z23; \
	FMA4(Z20, Z0, Z1, Z2, Z3); \
	FMA4(Z21, Z4, Z5, Z6, Z7); \
	FMA4(Z22, Z8, Z9, Z10, Z11); \
	FMA4(Z23, Z12, Z13, Z14, Z15); \
	ADDQ $64, SI; \
	ADDQ $64, R12; \
	ADDQ $64, R13; \
	ADDQ $64, BX

#define FPROLOGUE \
	MOVQ cols+0(FP), CX; \
	SHRQ $4, CX; \
	MOVQ w+8(FP), R8; \
	MOVQ rowBytes+16(FP), DX; \
	LEAQ (R8)(DX*1), R9; \
	LEAQ (R9)(DX*1), R10; \
	LEAQ (R10)(DX*1), R11; \
	MOVQ x+24(FP), SI; \
	MOVQ xStride+32(FP), DX; \
	SHLQ $2, DX; \
	LEAQ (SI)(DX*1), R12; \
	LEAQ (R12)(DX*1), R13; \
	LEAQ (R13)(DX*1), BX; \
	MOVQ tile+40(FP), DI; \
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

// FREDUCE: tile[k] = Σ lanes of zk.
#define FREDUCE(zk, yk, xk, off) \
	VEXTRACTF64X4 $1, zk, Y30; \
	VADDPS Y30, yk, yk; \
	VEXTRACTF32X4 $1, yk, X30; \
	VADDPS X30, xk, xk; \
	VHADDPS xk, xk, xk; \
	VHADDPS xk, xk, xk; \
	VMOVSS xk, off(DI)

#define FEPILOGUE \
	FREDUCE(Z0, Y0, X0, 0); \
	FREDUCE(Z1, Y1, X1, 4); \
	FREDUCE(Z2, Y2, X2, 8); \
	FREDUCE(Z3, Y3, X3, 12); \
	FREDUCE(Z4, Y4, X4, 16); \
	FREDUCE(Z5, Y5, X5, 20); \
	FREDUCE(Z6, Y6, X6, 24); \
	FREDUCE(Z7, Y7, X7, 28); \
	FREDUCE(Z8, Y8, X8, 32); \
	FREDUCE(Z9, Y9, X9, 36); \
	FREDUCE(Z10, Y10, X10, 40); \
	FREDUCE(Z11, Y11, X11, 44); \
	FREDUCE(Z12, Y12, X12, 48); \
	FREDUCE(Z13, Y13, X13, 52); \
	FREDUCE(Z14, Y14, X14, 56); \
	FREDUCE(Z15, Y15, X15, 60); \
	VZEROUPPER

// func ftileF16(cols int, w *byte, rowBytes int, x *float32, xStride int, tile *[16]float32)
TEXT ·ftileF16(SB), NOSPLIT, $0-48
	FPROLOGUE
loop:
	VCVTPH2PS (R8), Z16
	VCVTPH2PS (R9), Z17
	VCVTPH2PS (R10), Z18
	VCVTPH2PS (R11), Z19
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	XLOADFMA
	DECQ CX
	JNZ  loop
	FEPILOGUE
	RET

// func ftileF32(cols int, w *byte, rowBytes int, x *float32, xStride int, tile *[16]float32)
TEXT ·ftileF32(SB), NOSPLIT, $0-48
	FPROLOGUE
loop:
	VMOVUPS (R8), Z16
	VMOVUPS (R9), Z17
	VMOVUPS (R10), Z18
	VMOVUPS (R11), Z19
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R11
	XLOADFMA
	DECQ CX
	JNZ  loop
	FEPILOGUE
	RET

// func ftileBF16(cols int, w *byte, rowBytes int, x *float32, xStride int, tile *[16]float32)
TEXT ·ftileBF16(SB), NOSPLIT, $0-48
	FPROLOGUE
loop:
	VPMOVZXWD (R8), Z16
	VPMOVZXWD (R9), Z17
	VPMOVZXWD (R10), Z18
	VPMOVZXWD (R11), Z19
	VPSLLD $16, Z16, Z16
	VPSLLD $16, Z17, Z17
	VPSLLD $16, Z18, Z18
	VPSLLD $16, Z19, Z19
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	XLOADFMA
	DECQ CX
	JNZ  loop
	FEPILOGUE
	RET
