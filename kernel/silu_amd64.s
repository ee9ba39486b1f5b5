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
