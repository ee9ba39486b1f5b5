//go:build amd64 && !purego

#include "textflag.h"
#include "vnni_amd64.h"

// Registers of gemmVNNI:
//   Z0..Z15   accumulators: Z(i) lane r = out for activation i, weight row r
//   Z16..Z23  the block's weight levels, group g: lane r = u[r][4g..4g+3]
//   Z24       the 16 weight rows' scales dw[r]
//   Z25       integer sums of one activation row, Z26 its scales dw·dx
//   R8 weight record, SI activation record, CX blocks left, DI tile


// func gemmVNNI(units int, w, a *byte, tile *[256]float32)
TEXT ·gemmVNNI(SB), NOSPLIT, $0-32
	MOVQ units+0(FP), CX
	MOVQ w+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ tile+24(FP), DI
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

loop:
	VMOVDQU32 0(R8), Z16
	VMOVDQU32 64(R8), Z17
	VMOVDQU32 128(R8), Z18
	VMOVDQU32 192(R8), Z19
	VMOVDQU32 256(R8), Z20
	VMOVDQU32 320(R8), Z21
	VMOVDQU32 384(R8), Z22
	VMOVDQU32 448(R8), Z23
	VMOVUPS 512(R8), Z24
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

	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	VMOVUPS Z12, 768(DI)
	VMOVUPS Z13, 832(DI)
	VMOVUPS Z14, 896(DI)
	VMOVUPS Z15, 960(DI)
	VZEROUPPER
	RET

DATA x80g<>+0(SB)/8, $0x8080808080808080
GLOBL x80g<>(SB), RODATA|NOPTR, $8
DATA nibg<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibg<>(SB), RODATA|NOPTR, $8

// GATHER: zd[r] = dword at off(SI) + idx[r] (idx = r·rowBytes), all 16 rows.
#define GATHER(off, zd) \
	KXNORW K1, K1, K1; \
	VPGATHERDD off(SI)(Z31*1), K1, zd

// SCALES: the f16 scale at the start of each row's block → f32 at doff(DI).
#define SCALES(doff) \
	GATHER(0, Z0); \
	VPMOVDW Z0, Y0; \
	VCVTPH2PS Y0, Z0; \
	VMOVUPS Z0, doff(DI)

// func packQ8_0Gather(blocks int, w *byte, idx *[16]int32, dst *byte)
// per block b: dst[g][r] = (w[r][b].qs[4g:4g+4]) ^ 0x80808080; dst.dw[r] = w[r][b].d
TEXT ·packQ8_0Gather(SB), NOSPLIT, $0-32
	MOVQ blocks+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ idx+16(FP), AX
	MOVQ dst+24(FP), DI
	VMOVDQU32 (AX), Z31
	VPBROADCASTQ x80g<>(SB), Z30
loop:
	SCALES(512)
	GATHER(2, Z1)
	GATHER(6, Z2)
	GATHER(10, Z3)
	GATHER(14, Z4)
	GATHER(18, Z5)
	GATHER(22, Z6)
	GATHER(26, Z7)
	GATHER(30, Z8)
	VPXORD Z30, Z1, Z1
	VPXORD Z30, Z2, Z2
	VPXORD Z30, Z3, Z3
	VPXORD Z30, Z4, Z4
	VPXORD Z30, Z5, Z5
	VPXORD Z30, Z6, Z6
	VPXORD Z30, Z7, Z7
	VPXORD Z30, Z8, Z8
	VMOVDQU32 Z1, 0(DI)
	VMOVDQU32 Z2, 64(DI)
	VMOVDQU32 Z3, 128(DI)
	VMOVDQU32 Z4, 192(DI)
	VMOVDQU32 Z5, 256(DI)
	VMOVDQU32 Z6, 320(DI)
	VMOVDQU32 Z7, 384(DI)
	VMOVDQU32 Z8, 448(DI)
	ADDQ $34, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func packQ4_0Gather(blocks int, w *byte, idx *[16]int32, dst *byte)
// per block b: dst[g][r] = nibbles g (g<4: low of qs[4g:], else high of qs[4(g-4):]).
TEXT ·packQ4_0Gather(SB), NOSPLIT, $0-32
	MOVQ blocks+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ idx+16(FP), AX
	MOVQ dst+24(FP), DI
	VMOVDQU32 (AX), Z31
	VPBROADCASTQ nibg<>(SB), Z30
loop:
	SCALES(512)
	GATHER(2, Z1)
	GATHER(6, Z2)
	GATHER(10, Z3)
	GATHER(14, Z4)
	VPSRLW $4, Z1, Z5
	VPSRLW $4, Z2, Z6
	VPSRLW $4, Z3, Z7
	VPSRLW $4, Z4, Z8
	VPANDD Z30, Z1, Z1
	VPANDD Z30, Z2, Z2
	VPANDD Z30, Z3, Z3
	VPANDD Z30, Z4, Z4
	VPANDD Z30, Z5, Z5
	VPANDD Z30, Z6, Z6
	VPANDD Z30, Z7, Z7
	VPANDD Z30, Z8, Z8
	VMOVDQU32 Z1, 0(DI)
	VMOVDQU32 Z2, 64(DI)
	VMOVDQU32 Z3, 128(DI)
	VMOVDQU32 Z4, 192(DI)
	VMOVDQU32 Z5, 256(DI)
	VMOVDQU32 Z6, 320(DI)
	VMOVDQU32 Z7, 384(DI)
	VMOVDQU32 Z8, 448(DI)
	ADDQ $18, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// Q4_K: units of 32, weight record 640 (levels, s1 at 512, s2 at 576),
// activation record 640 (q[16][32], dx at 512, xs at 576).
//   t = float(Σ u·x)·s1 − s2·xs[i];  acc[i] += t·dx[i]
#define ACTK4(qoff, doff, xoff, acc) \
	VPXORD Z25, Z25, Z25; \
	VPDPBUSD.BCST qoff+0(SI), Z16, Z25; \
	VPDPBUSD.BCST qoff+4(SI), Z17, Z25; \
	VPDPBUSD.BCST qoff+8(SI), Z18, Z25; \
	VPDPBUSD.BCST qoff+12(SI), Z19, Z25; \
	VPDPBUSD.BCST qoff+16(SI), Z20, Z25; \
	VPDPBUSD.BCST qoff+20(SI), Z21, Z25; \
	VPDPBUSD.BCST qoff+24(SI), Z22, Z25; \
	VPDPBUSD.BCST qoff+28(SI), Z23, Z25; \
	VCVTDQ2PS Z25, Z25; \
	VMULPS Z24, Z25, Z25; \
	VFNMADD231PS.BCST xoff(SI), Z27, Z25; \
	VFMADD231PS.BCST doff(SI), Z25, acc

#define ZERO16 \
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

#define STORE16 \
	VMOVUPS Z0, 0(DI); \
	VMOVUPS Z1, 64(DI); \
	VMOVUPS Z2, 128(DI); \
	VMOVUPS Z3, 192(DI); \
	VMOVUPS Z4, 256(DI); \
	VMOVUPS Z5, 320(DI); \
	VMOVUPS Z6, 384(DI); \
	VMOVUPS Z7, 448(DI); \
	VMOVUPS Z8, 512(DI); \
	VMOVUPS Z9, 576(DI); \
	VMOVUPS Z10, 640(DI); \
	VMOVUPS Z11, 704(DI); \
	VMOVUPS Z12, 768(DI); \
	VMOVUPS Z13, 832(DI); \
	VMOVUPS Z14, 896(DI); \
	VMOVUPS Z15, 960(DI); \
	VZEROUPPER

// func gemmK4VNNI(units int, w, a *byte, tile *[256]float32)
TEXT ·gemmK4VNNI(SB), NOSPLIT, $0-32
	MOVQ units+0(FP), CX
	MOVQ w+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ tile+24(FP), DI
	ZERO16
loop:
	VMOVDQU32 0(R8), Z16
	VMOVDQU32 64(R8), Z17
	VMOVDQU32 128(R8), Z18
	VMOVDQU32 192(R8), Z19
	VMOVDQU32 256(R8), Z20
	VMOVDQU32 320(R8), Z21
	VMOVDQU32 384(R8), Z22
	VMOVDQU32 448(R8), Z23
	VMOVUPS 512(R8), Z24
	VMOVUPS 576(R8), Z27
	ACTK4(0, 512, 576, Z0)
	ACTK4(32, 516, 580, Z1)
	ACTK4(64, 520, 584, Z2)
	ACTK4(96, 524, 588, Z3)
	ACTK4(128, 528, 592, Z4)
	ACTK4(160, 532, 596, Z5)
	ACTK4(192, 536, 600, Z6)
	ACTK4(224, 540, 604, Z7)
	ACTK4(256, 544, 608, Z8)
	ACTK4(288, 548, 612, Z9)
	ACTK4(320, 552, 616, Z10)
	ACTK4(352, 556, 620, Z11)
	ACTK4(384, 560, 624, Z12)
	ACTK4(416, 564, 628, Z13)
	ACTK4(448, 568, 632, Z14)
	ACTK4(480, 572, 636, Z15)
	ADDQ $640, R8
	ADDQ $640, SI
	DECQ CX
	JNZ  loop
	STORE16
	RET

// Q6_K: units of 16, weight record 320 (levels, s1 at 256), activation
// record 384 (q[16][16], dx at 256, corr at 320).
//   acc[i] += float(corr[i] + Σ u·x)·s1·dx[i]
#define ACTK6(qoff, doff, coff, acc) \
	VPBROADCASTD coff(SI), Z25; \
	VPDPBUSD.BCST qoff+0(SI), Z16, Z25; \
	VPDPBUSD.BCST qoff+4(SI), Z17, Z25; \
	VPDPBUSD.BCST qoff+8(SI), Z18, Z25; \
	VPDPBUSD.BCST qoff+12(SI), Z19, Z25; \
	VCVTDQ2PS Z25, Z25; \
	VMULPS.BCST doff(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc

// func gemmK6VNNI(units int, w, a *byte, tile *[256]float32)
TEXT ·gemmK6VNNI(SB), NOSPLIT, $0-32
	MOVQ units+0(FP), CX
	MOVQ w+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ tile+24(FP), DI
	ZERO16
loop:
	VMOVDQU32 0(R8), Z16
	VMOVDQU32 64(R8), Z17
	VMOVDQU32 128(R8), Z18
	VMOVDQU32 192(R8), Z19
	VMOVUPS 256(R8), Z24
	ACTK6(0, 256, 320, Z0)
	ACTK6(16, 260, 324, Z1)
	ACTK6(32, 264, 328, Z2)
	ACTK6(48, 268, 332, Z3)
	ACTK6(64, 272, 336, Z4)
	ACTK6(80, 276, 340, Z5)
	ACTK6(96, 280, 344, Z6)
	ACTK6(112, 284, 348, Z7)
	ACTK6(128, 288, 352, Z8)
	ACTK6(144, 292, 356, Z9)
	ACTK6(160, 296, 360, Z10)
	ACTK6(176, 300, 364, Z11)
	ACTK6(192, 304, 368, Z12)
	ACTK6(208, 308, 372, Z13)
	ACTK6(224, 312, 376, Z14)
	ACTK6(240, 316, 380, Z15)
	ADDQ $320, R8
	ADDQ $384, SI
	DECQ CX
	JNZ  loop
	STORE16
	RET

// Q4KPAIR: sub-blocks 2jj and 2jj+1 of the super-block at SI (qs at
// 16+32·jj): group g's dwords gathered from the 16 rows, low nibbles to
// unit 2jj's record (DI + 1280·jj), high nibbles to unit 2jj+1's.
#define Q4KGROUP(qoff, doff) \
	GATHER(qoff, Z1); \
	VPSRLW $4, Z1, Z2; \
	VPANDD Z30, Z1, Z1; \
	VPANDD Z30, Z2, Z2; \
	VMOVDQU32 Z1, doff(DI); \
	VMOVDQU32 Z2, doff+640(DI)

#define Q4KPAIR(qoff, doff) \
	Q4KGROUP(qoff, doff); \
	Q4KGROUP(qoff+4, doff+64); \
	Q4KGROUP(qoff+8, doff+128); \
	Q4KGROUP(qoff+12, doff+192); \
	Q4KGROUP(qoff+16, doff+256); \
	Q4KGROUP(qoff+20, doff+320); \
	Q4KGROUP(qoff+24, doff+384); \
	Q4KGROUP(qoff+28, doff+448)

// func packQ4KGather(blocks int, w *byte, idx *[16]int32, dst *byte)
// the levels of Q4_K super-blocks into 8 unit records each (scales are
// filled in by the caller).
TEXT ·packQ4KGather(SB), NOSPLIT, $0-32
	MOVQ blocks+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ idx+16(FP), AX
	MOVQ dst+24(FP), DI
	VMOVDQU32 (AX), Z31
	VPBROADCASTQ nibg<>(SB), Z30
	TESTQ CX, CX
	JZ   done
loop:
	Q4KPAIR(16, 0)
	Q4KPAIR(48, 1280)
	Q4KPAIR(80, 2560)
	Q4KPAIR(112, 3840)
	ADDQ $144, SI
	ADDQ $5120, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET
