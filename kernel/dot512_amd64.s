//go:build amd64 && !purego

#include "textflag.h"

DATA nib5<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nib5<>(SB), RODATA|NOPTR, $8
DATA eight5<>+0(SB)/8, $0x0808080808080808
GLOBL eight5<>(SB), RODATA|NOPTR, $8

// Q4PAIR: blocks A (w at woff, x at xoff) and B (w at woff+18, x at xoff+34).
//   acc += float(Σ q·x − Σ 8·x) · [dwA·dxA ×8, dwB·dxB ×8]
#define Q4PAIR(woff, xoff, acc) \
	VMOVDQU32 woff+2(SI), X2; \
	VINSERTI32X4 $1, woff+20(SI), Y2, Y2; \
	VPSRLW $4, Y2, Y3; \
	VPANDD Y28, Y2, Y2; \
	VPANDD Y28, Y3, Y3; \
	VINSERTI64X4 $1, Y3, Z2, Z2; \
	VSHUFI64X2 $0xd8, Z2, Z2, Z2; \
	VMOVDQU32 xoff+2(DI), Y4; \
	VINSERTI64X4 $1, xoff+36(DI), Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPDPBUSD Z4, Z2, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPDPBUSD Z4, Z29, Z6; \
	VPSUBD Z6, Z5, Z5; \
	VCVTDQ2PS Z5, Z5; \
	VPBROADCASTW woff(SI), X7; \
	VPBROADCASTW woff+18(SI), X8; \
	VINSERTI32X4 $1, X8, Y7, Y7; \
	VCVTPH2PS Y7, Z7; \
	VPBROADCASTW xoff(DI), X8; \
	VPBROADCASTW xoff+34(DI), X9; \
	VINSERTI32X4 $1, X9, Y8, Y8; \
	VCVTPH2PS Y8, Z8; \
	VMULPS Z8, Z7, Z7; \
	VFMADD231PS Z7, Z5, acc

// func dotQ4_0Q8_0VNNI(nb int, w, x *byte) float32
// nb is a multiple of 4; same sum as dotQ4_0Q8_0AVX2, two blocks per zmm.
TEXT ·dotQ4_0Q8_0VNNI(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), CX
	SHRQ $2, CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPBROADCASTQ nib5<>(SB), Z28
	VPBROADCASTQ eight5<>(SB), Z29
	TESTQ CX, CX
	JZ   done
loop:
	Q4PAIR(0, 0, Z0)
	Q4PAIR(36, 68, Z1)
	ADDQ $72, SI
	ADDQ $136, DI
	DECQ CX
	JNZ  loop
done:
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Q4PREP: blocks A, B of a weight row (SI) against a prepared activation
// record (DI): q[64] in the order [A0-15 B0-15 A16-31 B16-31], init[16]
// = −8·Σ of each lane's 4 quants, dx[16] = [dxA×4 dxB×4 dxA×4 dxB×4].
//   acc += float(init + Σ q·x) · dw · dx   (lanes in the same order)
#define Q4PREP(woff, xoff, acc) \
	VMOVDQU32 woff+2(SI), X2; \
	VINSERTI32X4 $1, woff+20(SI), Y2, Y2; \
	VPSRLW $4, Y2, Y3; \
	VPANDD Y28, Y2, Y2; \
	VPANDD Y28, Y3, Y3; \
	VINSERTI64X4 $1, Y3, Z2, Z2; \
	VMOVDQU32 xoff+64(DI), Z5; \
	VPDPBUSD xoff(DI), Z2, Z5; \
	VCVTDQ2PS Z5, Z5; \
	VPBROADCASTW woff(SI), X7; \
	VPBROADCASTW woff+18(SI), X8; \
	VPUNPCKLQDQ X8, X7, X7; \
	VCVTPH2PS X7, Y7; \
	VINSERTF64X4 $1, Y7, Z7, Z7; \
	VMULPS xoff+128(DI), Z7, Z7; \
	VFMADD231PS Z7, Z5, acc

// func dotQ4_0PrepVNNI(pairs int, w, xp *byte) float32
// pairs is even; xp holds one 192-byte record per pair of blocks.
TEXT ·dotQ4_0PrepVNNI(SB), NOSPLIT, $0-28
	MOVQ pairs+0(FP), CX
	SHRQ $1, CX
	MOVQ w+8(FP), SI
	MOVQ xp+16(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPBROADCASTQ nib5<>(SB), Z28
	TESTQ CX, CX
	JZ   done
loop:
	Q4PREP(0, 0, Z0)
	Q4PREP(36, 192, Z1)
	ADDQ $72, SI
	ADDQ $384, DI
	DECQ CX
	JNZ  loop
done:
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Q4W: unpack blocks A, B of a weight row (SI) once: Z2 = levels in the
// prepared record's lane order, Z7 = [dwA×4 dwB×4 dwA×4 dwB×4].
#define Q4W(woff) \
	VMOVDQU32 woff+2(SI), X2; \
	VINSERTI32X4 $1, woff+20(SI), Y2, Y2; \
	VPSRLW $4, Y2, Y3; \
	VPANDD Y28, Y2, Y2; \
	VPANDD Y28, Y3, Y3; \
	VINSERTI64X4 $1, Y3, Z2, Z2; \
	VPBROADCASTW woff(SI), X7; \
	VPBROADCASTW woff+18(SI), X8; \
	VPUNPCKLQDQ X8, X7, X7; \
	VCVTPH2PS X7, Y7; \
	VINSERTF64X4 $1, Y7, Z7, Z7

// Q4X: one activation's record (base xr) against Z2/Z7, as Q4PREP does:
//   acc += float(init + Σ q·x) · (dw · dx)
#define Q4X(xr, xoff, acc) \
	VMOVDQU32 xoff+64(xr), Z5; \
	VPDPBUSD xoff(xr), Z2, Z5; \
	VCVTDQ2PS Z5, Z5; \
	VMULPS xoff+128(xr), Z7, Z6; \
	VFMADD231PS Z6, Z5, acc

// HSUM: acc0 + acc1 summed across lanes into X0 (Z0, Z1, X1 clobbered), in
// dotQ4_0PrepVNNI's order.
#define HSUM(acc0, acc1) \
	VADDPS acc1, acc0, Z0; \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS Y1, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VHADDPS X0, X0, X0; \
	VHADDPS X0, X0, X0

// func dotQ4_0PrepVNNI4(pairs int, w, x0, x1, x2, x3 *byte, out *[4]float32)
// out[k] = dotQ4_0PrepVNNI(pairs, w, xk): each weight pair is unpacked
// once for the four prepared activation rows.
TEXT ·dotQ4_0PrepVNNI4(SB), NOSPLIT, $0-56
	MOVQ pairs+0(FP), CX
	SHRQ $1, CX
	MOVQ w+8(FP), SI
	MOVQ x0+16(FP), DI
	MOVQ x1+24(FP), R9
	MOVQ x2+32(FP), R10
	MOVQ x3+40(FP), R11
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPBROADCASTQ nib5<>(SB), Z28
	TESTQ CX, CX
	JZ   done4
loop4:
	Q4W(0)
	Q4X(DI, 0, Z10)
	Q4X(R9, 0, Z12)
	Q4X(R10, 0, Z14)
	Q4X(R11, 0, Z16)
	Q4W(36)
	Q4X(DI, 192, Z11)
	Q4X(R9, 192, Z13)
	Q4X(R10, 192, Z15)
	Q4X(R11, 192, Z17)
	ADDQ $72, SI
	ADDQ $384, DI
	ADDQ $384, R9
	ADDQ $384, R10
	ADDQ $384, R11
	DECQ CX
	JNZ  loop4
done4:
	MOVQ out+48(FP), AX
	HSUM(Z10, Z11)
	MOVSS X0, 0(AX)
	HSUM(Z12, Z13)
	MOVSS X0, 4(AX)
	HSUM(Z14, Z15)
	MOVSS X0, 8(AX)
	HSUM(Z16, Z17)
	MOVSS X0, 12(AX)
	VZEROUPPER
	RET

// func dotQ4_0PrepVNNI2(pairs int, w, x0, x1 *byte, out *[2]float32)
// dotQ4_0PrepVNNI4 for two activation rows.
TEXT ·dotQ4_0PrepVNNI2(SB), NOSPLIT, $0-40
	MOVQ pairs+0(FP), CX
	SHRQ $1, CX
	MOVQ w+8(FP), SI
	MOVQ x0+16(FP), DI
	MOVQ x1+24(FP), R9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPBROADCASTQ nib5<>(SB), Z28
	TESTQ CX, CX
	JZ   done2
loop2:
	Q4W(0)
	Q4X(DI, 0, Z10)
	Q4X(R9, 0, Z12)
	Q4W(36)
	Q4X(DI, 192, Z11)
	Q4X(R9, 192, Z13)
	ADDQ $72, SI
	ADDQ $384, DI
	ADDQ $384, R9
	DECQ CX
	JNZ  loop2
done2:
	MOVQ out+32(FP), AX
	HSUM(Z10, Z11)
	MOVSS X0, 0(AX)
	HSUM(Z12, Z13)
	MOVSS X0, 4(AX)
	VZEROUPPER
	RET

// The F16 dot's parts (dotF16AVX512, dotF16RowsAVX512): four
// accumulators Z0..Z3 of 16 lanes; F16STEP multiplies 64 weights at SI
// (halves) by 64 activations at DI and advances both; F16SUM leaves the
// accumulators' total in X0.
#define F16ZERO \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3

#define F16STEP \
	VCVTPH2PS (SI), Z4; \
	VCVTPH2PS 32(SI), Z5; \
	VCVTPH2PS 64(SI), Z6; \
	VCVTPH2PS 96(SI), Z7; \
	VFMADD231PS (DI), Z4, Z0; \
	VFMADD231PS 64(DI), Z5, Z1; \
	VFMADD231PS 128(DI), Z6, Z2; \
	VFMADD231PS 192(DI), Z7, Z3; \
	ADDQ $128, SI; \
	ADDQ $256, DI

// F16BLOCK is four F16STEPs (512 weight bytes) with all 16 conversions
// issued before the multiply-adds: each accumulator takes the same chunks
// in the same order, so the bits are F16STEP's. In a 1B F16 decode it
// streamed 1.05× faster than the one-step loop (see docs/BENCHMARKS.md).
#define F16BLOCK \
	VCVTPH2PS 0(SI), Z4; \
	VCVTPH2PS 32(SI), Z5; \
	VCVTPH2PS 64(SI), Z6; \
	VCVTPH2PS 96(SI), Z7; \
	VCVTPH2PS 128(SI), Z8; \
	VCVTPH2PS 160(SI), Z9; \
	VCVTPH2PS 192(SI), Z10; \
	VCVTPH2PS 224(SI), Z11; \
	VCVTPH2PS 256(SI), Z12; \
	VCVTPH2PS 288(SI), Z13; \
	VCVTPH2PS 320(SI), Z14; \
	VCVTPH2PS 352(SI), Z15; \
	VCVTPH2PS 384(SI), Z16; \
	VCVTPH2PS 416(SI), Z17; \
	VCVTPH2PS 448(SI), Z18; \
	VCVTPH2PS 480(SI), Z19; \
	VFMADD231PS 0(DI), Z4, Z0; \
	VFMADD231PS 64(DI), Z5, Z1; \
	VFMADD231PS 128(DI), Z6, Z2; \
	VFMADD231PS 192(DI), Z7, Z3; \
	VFMADD231PS 256(DI), Z8, Z0; \
	VFMADD231PS 320(DI), Z9, Z1; \
	VFMADD231PS 384(DI), Z10, Z2; \
	VFMADD231PS 448(DI), Z11, Z3; \
	VFMADD231PS 512(DI), Z12, Z0; \
	VFMADD231PS 576(DI), Z13, Z1; \
	VFMADD231PS 640(DI), Z14, Z2; \
	VFMADD231PS 704(DI), Z15, Z3; \
	VFMADD231PS 768(DI), Z16, Z0; \
	VFMADD231PS 832(DI), Z17, Z1; \
	VFMADD231PS 896(DI), Z18, Z2; \
	VFMADD231PS 960(DI), Z19, Z3; \
	ADDQ $512, SI; \
	ADDQ $1024, DI

#define F16SUM \
	VADDPS Z1, Z0, Z0; \
	VADDPS Z3, Z2, Z2; \
	HSUM(Z0, Z2)

// func dotF16AVX512(n int, w *byte, x *float32) float32
// Σ float(w[i])·x[i] for i < n, n a multiple of 64: dotF16AVX2 at twice
// the width, so one iteration streams 128 weight bytes (deeper lookahead
// into DRAM for the same instruction window).
TEXT ·dotF16AVX512(SB), NOSPLIT, $0-28
	MOVQ n+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	F16ZERO
	SHRQ $6, CX
	JZ   f16done
f16loop:
	F16STEP
	DECQ CX
	JNZ  f16loop
f16done:
	F16SUM
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotF16RowsAVX512(n, rows int, w *byte, rowBytes int, x *float32, out *float32, add bool)
// out[r] = dotF16AVX512(n, w + r·rowBytes, x) for r < rows, or out[r] +=
// it when add is set. Each row runs F16BLOCKs, then F16STEPs for the
// last n mod 256 columns.
TEXT ·dotF16RowsAVX512(SB), NOSPLIT, $0-49
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), R8
	MOVQ rowBytes+24(FP), R10
	MOVQ out+40(FP), AX
	TESTQ R9, R9
	JZ   frdone
frrow:
	MOVQ n+0(FP), CX
	MOVQ R8, SI
	MOVQ x+32(FP), DI
	F16ZERO
	SHRQ $6, CX
	MOVQ CX, DX
	ANDQ $3, CX
	SHRQ $2, DX
	JZ   frtail
frblock:
	F16BLOCK
	DECQ DX
	JNZ  frblock
frtail:
	TESTQ CX, CX
	JZ   frsum
frloop:
	F16STEP
	DECQ CX
	JNZ  frloop
frsum:
	F16SUM
	CMPB add+48(FP), $0
	JEQ  frstore
	VADDSS (AX), X0, X0
frstore:
	VMOVSS X0, (AX)
	ADDQ $4, AX
	ADDQ R10, R8
	DECQ R9
	JNZ  frrow
frdone:
	VZEROUPPER
	RET
