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
