//go:build amd64 && !purego

#include "textflag.h"

// Rows of siluConsts (32 bytes each).
#define SIGN 0(CX)
#define LOG2E 32(CX)
#define ROUND 64(CX)
#define LN2HI 96(CX)
#define LN2LO 128(CX)
#define ONE 160(CX)
#define HALF 192(CX)
#define C6 224(CX)
#define C24 256(CX)
#define C120 288(CX)
#define C720 320(CX)
#define C5040 352(CX)
#define LO 384(CX)
#define HI 416(CX)
#define I127 448(CX)

// EXP sets Y8 = Exp(Y1) with Exp's operations in Exp's order
// (kernel/exp.go), for lanes in its fast range; it uses Y2-Y11.
// INRANGE jumps to out unless every lane of Y1 is in Exp's fast range,
// -87 <= xx <= 88 (GE_OQ and LE_OQ: false for NaN); clobbers Y2, Y3, BX.
#define INRANGE(out) \
	VCMPPS  $0x1d, LO, Y1, Y2; \
	VCMPPS  $0x12, HI, Y1, Y3; \
	VANDPS  Y3, Y2, Y2; \
	VMOVMSKPS Y2, BX; \
	CMPQ    BX, $0xff; \
	JNE     out

#define EXP \
	VMULPS  LOG2E, Y1, Y2; \
	VADDPS  ROUND, Y2, Y2; \
	VPSUBD  ROUND, Y2, Y3; \
	VSUBPS  ROUND, Y2, Y4; \
	VMULPS  LN2HI, Y4, Y6; \
	VSUBPS  Y6, Y1, Y5; \
	VMULPS  LN2LO, Y4, Y6; \
	VSUBPS  Y6, Y5, Y5; \
	VMULPS  Y5, Y5, Y7; \
	VADDPS  ONE, Y5, Y8; \
	VMULPS  C6, Y5, Y9; \
	VADDPS  HALF, Y9, Y9; \
	VMULPS  C120, Y5, Y10; \
	VADDPS  C24, Y10, Y10; \
	VMULPS  C5040, Y5, Y11; \
	VADDPS  C720, Y11, Y11; \
	VMULPS  Y11, Y7, Y11; \
	VADDPS  Y11, Y10, Y10; \
	VMULPS  Y10, Y7, Y10; \
	VADDPS  Y10, Y9, Y9; \
	VMULPS  Y9, Y7, Y9; \
	VADDPS  Y9, Y8, Y8; \
	VPADDD  I127, Y3, Y3; \
	VPSLLD  $23, Y3, Y3; \
	VMULPS  Y3, Y8, Y8

// func siluAVX2(n int, x, u *float32, c *[15][8]uint32) int
// x[i] = x[i] / (1 + Exp(-x[i])), times u[i] when u is not nil, over
// blocks of 8, with Exp's operations in its order (kernel/exp.go): stops
// before the first block with a lane outside Exp's fast range (-x not in
// [-87, 88], or NaN) and returns how many floats it did (a multiple of 8
// ≤ n).
TEXT ·siluAVX2(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), DX
	MOVQ x+8(FP), DI
	MOVQ u+16(FP), SI
	MOVQ c+24(FP), CX
	XORQ AX, AX
	SHRQ $3, DX
	JZ   done
loop:
	VMOVUPS (DI)(AX*4), Y0          // v
	VXORPS  SIGN, Y0, Y1             // xx = -v
	INRANGE(done)
	EXP
	VADDPS  ONE, Y8, Y8              // 1 + e
	VDIVPS  Y8, Y0, Y0               // v / (1 + e)
	TESTQ   SI, SI
	JZ      store
	VMULPS  (SI)(AX*4), Y0, Y0       // · u
store:
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	DECQ    DX
	JNZ     loop
done:
	MOVQ    AX, ret+32(FP)
	VZEROUPPER
	RET

// func expShiftAVX2(n int, x *float32, m *[8]float32, c *[15][8]uint32) int
// x[i] = Exp(x[i] - m) over blocks of 8 (softmax's exponentials): stops
// before the first block with a lane outside Exp's fast range and returns
// how many floats it did (a multiple of 8 ≤ n).
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), DX
	MOVQ x+8(FP), DI
	MOVQ m+16(FP), SI
	MOVQ c+24(FP), CX
	VMOVUPS (SI), Y12
	XORQ AX, AX
	SHRQ $3, DX
	JZ   edone
eloop:
	VMOVUPS (DI)(AX*4), Y0
	VSUBPS  Y12, Y0, Y1              // xx = x - m
	INRANGE(edone)
	EXP
	VMOVUPS Y8, (DI)(AX*4)
	ADDQ    $8, AX
	DECQ    DX
	JNZ     eloop
edone:
	MOVQ    AX, ret+32(FP)
	VZEROUPPER
	RET

// INRANGE512 and EXP512: INRANGE and EXP over 16 lanes (Z1 in, Z8 out,
// Z2-Z11 and K1, K2 clobbered), the same operations in the same order;
// the constants broadcast from their rows' first lanes.
#define INRANGE512(out) \
	VCMPPS.BCST $0x1d, LO, Z1, K1; \
	VCMPPS.BCST $0x12, HI, Z1, K2; \
	KANDW   K2, K1, K1; \
	KMOVW   K1, BX; \
	CMPQ    BX, $0xffff; \
	JNE     out

#define EXP512 \
	VMULPS.BCST  LOG2E, Z1, Z2; \
	VADDPS.BCST  ROUND, Z2, Z2; \
	VPSUBD.BCST  ROUND, Z2, Z3; \
	VSUBPS.BCST  ROUND, Z2, Z4; \
	VMULPS.BCST  LN2HI, Z4, Z6; \
	VSUBPS  Z6, Z1, Z5; \
	VMULPS.BCST  LN2LO, Z4, Z6; \
	VSUBPS  Z6, Z5, Z5; \
	VMULPS  Z5, Z5, Z7; \
	VADDPS.BCST  ONE, Z5, Z8; \
	VMULPS.BCST  C6, Z5, Z9; \
	VADDPS.BCST  HALF, Z9, Z9; \
	VMULPS.BCST  C120, Z5, Z10; \
	VADDPS.BCST  C24, Z10, Z10; \
	VMULPS.BCST  C5040, Z5, Z11; \
	VADDPS.BCST  C720, Z11, Z11; \
	VMULPS  Z11, Z7, Z11; \
	VADDPS  Z11, Z10, Z10; \
	VMULPS  Z10, Z7, Z10; \
	VADDPS  Z10, Z9, Z9; \
	VMULPS  Z9, Z7, Z9; \
	VADDPS  Z9, Z8, Z8; \
	VPADDD.BCST  I127, Z3, Z3; \
	VPSLLD  $23, Z3, Z3; \
	VMULPS  Z3, Z8, Z8

// func siluAVX512(n int, x, u *float32, c *[15][8]uint32) int
// siluAVX2 over blocks of 16: stops before the first block with a lane
// outside Exp's fast range and returns how many floats it did (a multiple
// of 16 ≤ n).
TEXT ·siluAVX512(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), DX
	MOVQ x+8(FP), DI
	MOVQ u+16(FP), SI
	MOVQ c+24(FP), CX
	XORQ AX, AX
	SHRQ $4, DX
	JZ   done512
loop512:
	VMOVUPS (DI)(AX*4), Z0           // v
	VXORPS.BCST SIGN, Z0, Z1         // xx = -v
	INRANGE512(done512)
	EXP512
	VADDPS.BCST ONE, Z8, Z8          // 1 + e
	VDIVPS  Z8, Z0, Z0               // v / (1 + e)
	TESTQ   SI, SI
	JZ      store512
	VMULPS  (SI)(AX*4), Z0, Z0       // · u
store512:
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	DECQ    DX
	JNZ     loop512
done512:
	MOVQ    AX, ret+32(FP)
	VZEROUPPER
	RET

// func expShiftAVX512(n int, x *float32, m *[8]float32, c *[15][8]uint32) int
// expShiftAVX2 over blocks of 16 (m's first lane broadcast): stops before
// the first block with a lane outside Exp's fast range and returns how
// many floats it did (a multiple of 16 ≤ n).
TEXT ·expShiftAVX512(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), DX
	MOVQ x+8(FP), DI
	MOVQ m+16(FP), SI
	MOVQ c+24(FP), CX
	VBROADCASTSS (SI), Z12
	XORQ AX, AX
	SHRQ $4, DX
	JZ   edone512
eloop512:
	VMOVUPS (DI)(AX*4), Z0
	VSUBPS  Z12, Z0, Z1              // xx = x - m
	INRANGE512(edone512)
	EXP512
	VMOVUPS Z8, (DI)(AX*4)
	ADDQ    $16, AX
	DECQ    DX
	JNZ     eloop512
edone512:
	MOVQ    AX, ret+32(FP)
	VZEROUPPER
	RET
