//go:build amd64 && !purego

#include "textflag.h"

// x16 kernels (x16.go has the layout and the specification, x16Generic).
// Registers:
//   Z0..Z15   accumulators: Z(k) lane r = out[k][r] (activation k, weight row r)
//   Z16..Z23  the unit's weight levels, group g: lane r = u[r][4g..4g+3]
//   Z24       the 16 rows' scales d[r] as float32
//   Z25       integer sums of one activation row, Z26 its scales d·dx
//   Z27       a loaded Q4_0 chunk, Z31 the nibble mask
//   R8 weight unit, SI activation record, CX units left, DI out

// ACT: activation row k of the panel (quants at qoff, scale at doff,
// correction at coff): s[r] = corr + Σ_g u[r][g]·q[g]; acc[r] += float(s[r])·d[r]·dx.
#define ACT(qoff, doff, coff, acc) \
	VPBROADCASTD coff(SI), Z25; \
	VPDPBUSD.BCST qoff+0(SI), Z16, Z25; \
	VPDPBUSD.BCST qoff+4(SI), Z17, Z25; \
	VPDPBUSD.BCST qoff+8(SI), Z18, Z25; \
	VPDPBUSD.BCST qoff+12(SI), Z19, Z25; \
	VPDPBUSD.BCST qoff+16(SI), Z20, Z25; \
	VPDPBUSD.BCST qoff+20(SI), Z21, Z25; \
	VPDPBUSD.BCST qoff+24(SI), Z22, Z25; \
	VPDPBUSD.BCST qoff+28(SI), Z23, Z25; \
	VCVTDQ2PS Z25, Z25; \
	VMULPS.BCST doff(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc

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

// UNPACK4: a Q4_0 unit's scales and its four chunks split into eight
// groups of levels (chunk L: low nibbles group 2L, high nibbles 2L+1).
#define UNPACK4 \
	VCVTPH2PS 0(R8), Z24; \
	VMOVDQU64 32(R8), Z27; \
	VPANDQ Z27, Z31, Z16; \
	VPSRLW $4, Z27, Z27; \
	VPANDQ Z27, Z31, Z17; \
	VMOVDQU64 96(R8), Z27; \
	VPANDQ Z27, Z31, Z18; \
	VPSRLW $4, Z27, Z27; \
	VPANDQ Z27, Z31, Z19; \
	VMOVDQU64 160(R8), Z27; \
	VPANDQ Z27, Z31, Z20; \
	VPSRLW $4, Z27, Z27; \
	VPANDQ Z27, Z31, Z21; \
	VMOVDQU64 224(R8), Z27; \
	VPANDQ Z27, Z31, Z22; \
	VPSRLW $4, Z27, Z27; \
	VPANDQ Z27, Z31, Z23

// UNPACK8: a Q8_0 unit's scales and eight groups of levels.
#define UNPACK8 \
	VCVTPH2PS 0(R8), Z24; \
	VMOVDQU64 32(R8), Z16; \
	VMOVDQU64 96(R8), Z17; \
	VMOVDQU64 160(R8), Z18; \
	VMOVDQU64 224(R8), Z19; \
	VMOVDQU64 288(R8), Z20; \
	VMOVDQU64 352(R8), Z21; \
	VMOVDQU64 416(R8), Z22; \
	VMOVDQU64 480(R8), Z23

DATA x16nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL x16nib<>(SB), RODATA|NOPTR, $8

// func x16Q4W1(units int, w, a *byte, out *[16]float32)
TEXT ·x16Q4W1(SB), NOSPLIT, $0-32
	MOVQ units+0(FP), CX
	MOVQ w+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ out+24(FP), DI
	VPBROADCASTQ x16nib<>(SB), Z31
	VPXORD Z0, Z0, Z0
	TESTQ CX, CX
	JZ   done
loop:
	UNPACK4
	ACT1(Z0)
	ADDQ $288, R8
	ADDQ $40, SI
	DECQ CX
	JNZ  loop
done:
	VMOVUPS Z0, 0(DI)
	VZEROUPPER
	RET

// func x16Q4W4(units int, w, a *byte, out *[64]float32)
TEXT ·x16Q4W4(SB), NOSPLIT, $0-32
	MOVQ units+0(FP), CX
	MOVQ w+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ out+24(FP), DI
	VPBROADCASTQ x16nib<>(SB), Z31
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ CX, CX
	JZ   done
loop:
	UNPACK4
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $288, R8
	ADDQ $160, SI
	DECQ CX
	JNZ  loop
done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VZEROUPPER
	RET

// func x16Q4W16(units int, w, a *byte, out *[256]float32)
TEXT ·x16Q4W16(SB), NOSPLIT, $0-32
	MOVQ units+0(FP), CX
	MOVQ w+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ out+24(FP), DI
	VPBROADCASTQ x16nib<>(SB), Z31
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
	TESTQ CX, CX
	JZ   done
loop:
	UNPACK4
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
	ADDQ $288, R8
	ADDQ $640, SI
	DECQ CX
	JNZ  loop
done:
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

// func x16Q8W1(units int, w, a *byte, out *[16]float32)
TEXT ·x16Q8W1(SB), NOSPLIT, $0-32
	MOVQ units+0(FP), CX
	MOVQ w+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ out+24(FP), DI
	VPXORD Z0, Z0, Z0
	TESTQ CX, CX
	JZ   done
loop:
	UNPACK8
	ACT1(Z0)
	ADDQ $544, R8
	ADDQ $40, SI
	DECQ CX
	JNZ  loop
done:
	VMOVUPS Z0, 0(DI)
	VZEROUPPER
	RET

// func x16Q8W4(units int, w, a *byte, out *[64]float32)
TEXT ·x16Q8W4(SB), NOSPLIT, $0-32
	MOVQ units+0(FP), CX
	MOVQ w+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ out+24(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ CX, CX
	JZ   done
loop:
	UNPACK8
	ACT(0, 128, 144, Z0)
	ACT(32, 132, 148, Z1)
	ACT(64, 136, 152, Z2)
	ACT(96, 140, 156, Z3)
	ADDQ $544, R8
	ADDQ $160, SI
	DECQ CX
	JNZ  loop
done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VZEROUPPER
	RET

// func x16Q8W16(units int, w, a *byte, out *[256]float32)
TEXT ·x16Q8W16(SB), NOSPLIT, $0-32
	MOVQ units+0(FP), CX
	MOVQ w+8(FP), R8
	MOVQ a+16(FP), SI
	MOVQ out+24(FP), DI
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
	TESTQ CX, CX
	JZ   done
loop:
	UNPACK8
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
	ADDQ $544, R8
	ADDQ $640, SI
	DECQ CX
	JNZ  loop
done:
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
