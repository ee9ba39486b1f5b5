//go:build amd64 && !purego

#include "textflag.h"

// func maxLanesAVX2(n int, x *float32, lanes *[8]float32)
// lanes[j] = MAXPS(lanes[j], x[i+j]) over blocks of 8 (n a multiple of 8).
TEXT ·maxLanesAVX2(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ lanes+16(FP), DI
	VMOVUPS (DI), Y0
	SHRQ $3, CX
mloop:
	VMOVUPS (SI), Y1
	VMAXPS Y1, Y0, Y0                // Y0 = Y0 > Y1 ? Y0 : Y1
	ADDQ $32, SI
	DECQ CX
	JNZ  mloop
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET

// func sumLanesAVX2(n int, x *float32, lanes *[8]float64)
// lanes[j] += float64(x[i+j]) over blocks of 8 (n a multiple of 8).
TEXT ·sumLanesAVX2(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ lanes+16(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	SHRQ $3, CX
sloop:
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VADDPD Y2, Y0, Y0
	VADDPD Y3, Y1, Y1
	ADDQ $32, SI
	DECQ CX
	JNZ  sloop
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func scaleF32AVX2(n int, x *float32, s float32)
// x[i] *= s for i < n (a multiple of 8).
TEXT ·scaleF32AVX2(SB), NOSPLIT, $0-20
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	VBROADCASTSS s+16(FP), Y1
	SHRQ $3, CX
xloop:
	VMULPS (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ  xloop
	VZEROUPPER
	RET

// func sumSqLanesAVX2(n int, x *float32, lanes *[8]float64)
// lanes[j] += float64(x[i+j]·x[i+j]) over blocks of 8 (n a multiple of
// 8), each square rounded to float32 before it is widened.
TEXT ·sumSqLanesAVX2(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ lanes+16(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	SHRQ $3, CX
qloop:
	VMOVUPS (SI), Y4
	VMULPS Y4, Y4, Y4                // squares, float32
	VCVTPS2PD X4, Y2                 // lanes 0..3
	VEXTRACTF128 $1, Y4, X5
	VCVTPS2PD X5, Y3                 // lanes 4..7
	VADDPD Y2, Y0, Y0
	VADDPD Y3, Y1, Y1
	ADDQ $32, SI
	DECQ CX
	JNZ  qloop
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func scaleMulF32AVX2(n int, out, x, w *float32, s float32)
// out[i] = (x[i]·s)·w[i] for i < n (a multiple of 8).
TEXT ·scaleMulF32AVX2(SB), NOSPLIT, $0-36
	MOVQ n+0(FP), CX
	MOVQ out+8(FP), DI
	MOVQ x+16(FP), SI
	MOVQ w+24(FP), DX
	VBROADCASTSS s+32(FP), Y1
	XORQ AX, AX
	SHRQ $3, CX
mwloop:
	VMULPS (SI)(AX*4), Y1, Y0
	VMULPS (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	DECQ CX
	JNZ  mwloop
	VZEROUPPER
	RET

// func addF32AVX2(n int, out, a, b *float32)
// out[i] = a[i] + b[i] for i < n (a multiple of 8).
TEXT ·addF32AVX2(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ out+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DX
	XORQ AX, AX
	SHRQ $3, CX
aloop:
	VMOVUPS (SI)(AX*4), Y0
	VADDPS (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	DECQ CX
	JNZ  aloop
	VZEROUPPER
	RET
