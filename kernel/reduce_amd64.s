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
