//go:build amd64 && !purego

#include "textflag.h"

DATA absmask<>+0(SB)/4, $0x7fffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $4
DATA signmask<>+0(SB)/4, $0x80000000
GLOBL signmask<>(SB), RODATA|NOPTR, $4
DATA f127<>+0(SB)/4, $127.0
GLOBL f127<>(SB), RODATA|NOPTR, $4
DATA fone<>+0(SB)/4, $1.0
GLOBL fone<>(SB), RODATA|NOPTR, $4
DATA fhalf<>+0(SB)/4, $0.5
GLOBL fhalf<>(SB), RODATA|NOPTR, $4
DATA packperm<>+0(SB)/4, $0
DATA packperm<>+4(SB)/4, $4
DATA packperm<>+8(SB)/4, $1
DATA packperm<>+12(SB)/4, $5
DATA packperm<>+16(SB)/4, $2
DATA packperm<>+20(SB)/4, $6
DATA packperm<>+24(SB)/4, $3
DATA packperm<>+28(SB)/4, $7
GLOBL packperm<>(SB), RODATA|NOPTR, $32

// ROUNDAWAY: y = C's roundf(y) for |y| < 2²³: t = trunc(y); if |y−t| ≥ ½
// then t += copysign(1, y). (y−t is exact.)
#define ROUNDAWAY(y, t) \
	VROUNDPS $3, y, t; \
	VSUBPS t, y, Y10; \
	VANDPS Y15, Y10, Y10; \
	VCMPPS $13, Y12, Y10, Y10; \
	VANDPS Y14, y, Y11; \
	VORPS Y13, Y11, Y11; \
	VANDPS Y10, Y11, Y11; \
	VADDPS Y11, t, y

// Q8AMAX: a block of 32 floats at SI into Y0..Y3, amax in X4, d = amax/127
// in X5 and as fp16 in X6 (quantQ8_0: y.d = fp16(max|x|/127)).
#define Q8AMAX \
	VMOVUPS 0(SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	VANDPS Y15, Y0, Y4; \
	VANDPS Y15, Y1, Y5; \
	VANDPS Y15, Y2, Y6; \
	VANDPS Y15, Y3, Y7; \
	VMAXPS Y5, Y4, Y4; \
	VMAXPS Y7, Y6, Y6; \
	VMAXPS Y6, Y4, Y4; \
	VEXTRACTF128 $1, Y4, X5; \
	VMAXPS X5, X4, X4; \
	VPERMILPS $0x4e, X4, X5; \
	VMAXPS X5, X4, X4; \
	VPERMILPS $0xb1, X4, X5; \
	VMAXPS X5, X4, X4; \
	VMOVSS f127<>(SB), X5; \
	VDIVSS X5, X4, X5; \
	VCVTPS2PH $0, X5, X6

// Q8PACK: Y0..Y3 (d ≠ 0 in X5) to 32 int8 levels in Y0, q = roundf(x/d)
// as quantQ8_0.
#define Q8PACK \
	VMOVSS fone<>(SB), X6; \
	VDIVSS X5, X6, X6; \
	VBROADCASTSS X6, Y6; \
	VMULPS Y6, Y0, Y0; \
	VMULPS Y6, Y1, Y1; \
	VMULPS Y6, Y2, Y2; \
	VMULPS Y6, Y3, Y3; \
	ROUNDAWAY(Y0, Y4); \
	ROUNDAWAY(Y1, Y5); \
	ROUNDAWAY(Y2, Y7); \
	ROUNDAWAY(Y3, Y8); \
	VCVTTPS2DQ Y0, Y0; \
	VCVTTPS2DQ Y1, Y1; \
	VCVTTPS2DQ Y2, Y2; \
	VCVTTPS2DQ Y3, Y3; \
	VPACKSSDW Y1, Y0, Y0; \
	VPACKSSDW Y3, Y2, Y2; \
	VPACKSSWB Y2, Y0, Y0; \
	VPERMD Y0, Y9, Y0

// func quantQ8_0AVX2(nb int, x *float32, b *byte)
// per block of 32: d = max|x|/127, q = roundf(x·(1/d)), as quantQ8_0.
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), DI
	VBROADCASTSS absmask<>(SB), Y15
	VBROADCASTSS signmask<>(SB), Y14
	VBROADCASTSS fone<>(SB), Y13
	VBROADCASTSS fhalf<>(SB), Y12
	VMOVDQU packperm<>(SB), Y9
	TESTQ CX, CX
	JZ   done
loop:
	Q8AMAX
	VPEXTRW $0, X6, AX
	MOVW AX, 0(DI)
	VXORPS X6, X6, X6
	VUCOMISS X6, X5
	JEQ  zero
	Q8PACK
	VMOVDQU Y0, 2(DI)
	JMP  next
zero:
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, 2(DI)
next:
	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET

DATA ones8<>+0(SB)/8, $0x0101010101010101
GLOBL ones8<>(SB), RODATA|NOPTR, $8
DATA ones16<>+0(SB)/8, $0x0001000100010001
GLOBL ones16<>(SB), RODATA|NOPTR, $8

// func x16RecQ8_0AVX2(nb int, x *float32, rec *byte, negoff, minh int)
// quantQ8_0AVX2 writing x16 activation records of one row (x16.go): per
// block of 32, q[32], dx = float32(fp16(d)), corr = negoff·Σq, 40 bytes;
// with minh ≠ 0 Q8_1's s = fp16(float32(Σq)·d) as float32 instead of corr.
TEXT ·x16RecQ8_0AVX2(SB), NOSPLIT, $0-40
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ rec+16(FP), DI
	MOVQ minh+32(FP), R11
	VBROADCASTSS absmask<>(SB), Y15
	VBROADCASTSS signmask<>(SB), Y14
	VBROADCASTSS fone<>(SB), Y13
	VBROADCASTSS fhalf<>(SB), Y12
	VMOVDQU packperm<>(SB), Y9
	TESTQ CX, CX
	JZ   rdone
rloop:
	Q8AMAX
	VCVTPH2PS X6, X7
	VMOVSS X7, 32(DI)          // dx: d as the dot products see it (fp16)
	VXORPS X6, X6, X6
	VUCOMISS X6, X5
	JEQ  rzero
	VMOVD X5, R12              // d before f16 (Q8PACK clobbers X5, X10, X11)
	Q8PACK
	VMOVDQU Y0, 0(DI)
	VPBROADCASTQ ones8<>(SB), Y1
	VPBROADCASTQ ones16<>(SB), Y2
	VPMADDUBSW Y0, Y1, Y3      // pairs of q (signed) times 1
	VPMADDWD Y2, Y3, Y3
	VEXTRACTI128 $1, Y3, X4
	VPADDD X4, X3, X3
	VPSHUFD $0x4e, X3, X4
	VPADDD X4, X3, X3
	VPSHUFD $0xb1, X3, X4
	VPADDD X4, X3, X3
	TESTQ R11, R11
	JNZ  rmin
	VMOVD X3, AX
	IMULQ negoff+24(FP), AX
	MOVL AX, 36(DI)
	JMP  rnext
rmin:
	VCVTDQ2PS X3, X3
	VMOVD R12, X4
	VMULSS X4, X3, X3          // float32(Σq)·d
	VCVTPS2PH $0, X3, X3
	VCVTPH2PS X3, X3
	VMOVSS X3, 36(DI)
	JMP  rnext
rzero:
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, 0(DI)
	MOVL $0, 36(DI)
rnext:
	ADDQ $128, SI
	ADDQ $40, DI
	DECQ CX
	JNZ  rloop
rdone:
	VZEROUPPER
	RET

DATA fm127<>+0(SB)/4, $-127.0
GLOBL fm127<>(SB), RODATA|NOPTR, $4
DATA i127<>+0(SB)/4, $127
GLOBL i127<>(SB), RODATA|NOPTR, $4

// func x16RecQ8KAVX2(nsb int, x *float32, rec *byte, halve, minh int)
// quantQ8K's quantization (per 256: the first element of largest
// magnitude m, iscale = −127/m, q = min(127, round-to-even(iscale·x)),
// d = 1/iscale) writing x16 activation records of one row: per 32, q[32],
// dx = d, then (halve = 0) dx·Σq as float32, or (halve ≠ 0) halve·Σq of
// each 16-column half as int32 (Q6_K: halve = −32, Q3_K: −4), or (halve ≠
// 0, minh ≠ 0) dx·Σq of each half as float32 (Q2_K); 40 or 44 bytes.
TEXT ·x16RecQ8KAVX2(SB), NOSPLIT, $0-40
	MOVQ nsb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ rec+16(FP), DI
	MOVQ halve+24(FP), R9
	MOVQ minh+32(FP), R11
	MOVQ $40, R10
	TESTQ R9, R9
	JZ   kstride
	MOVQ $44, R10
kstride:
	VBROADCASTSS absmask<>(SB), Y15
	VMOVDQU packperm<>(SB), Y9
	VPBROADCASTD i127<>(SB), Y13
	TESTQ CX, CX
	JZ   kdone
ksuper:
	// amax over 256 floats
	VXORPS Y4, Y4, Y4
	XORQ AX, AX
kmax:
	VANDPS (SI)(AX*4), Y15, Y0
	VMAXPS Y0, Y4, Y4
	ADDQ $8, AX
	CMPQ AX, $256
	JLT  kmax
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0x4e, X4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0xb1, X4, X5
	VMAXPS X5, X4, X4
	VBROADCASTSS X4, Y14       // amax in every lane
	VXORPS X5, X5, X5
	VUCOMISS X5, X4
	JEQ  kzero
	// the first element whose magnitude is amax
	XORQ AX, AX
kfind:
	VANDPS (SI)(AX*4), Y15, Y0
	VCMPPS $0, Y14, Y0, Y0
	VMOVMSKPS Y0, BX
	TESTL BX, BX
	JNZ  kfound
	ADDQ $8, AX
	JMP  kfind
kfound:
	TZCNTL BX, BX
	ADDQ BX, AX
	VMOVSS fm127<>(SB), X6
	VDIVSS (SI)(AX*4), X6, X6  // iscale = −127/m
	VMOVSS fone<>(SB), X7
	VDIVSS X6, X7, X7          // d = 1/iscale
	VBROADCASTSS X6, Y6
	MOVQ $8, DX
kunit:
	VMULPS 0(SI), Y6, Y0
	VMULPS 32(SI), Y6, Y1
	VMULPS 64(SI), Y6, Y2
	VMULPS 96(SI), Y6, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPMINSD Y13, Y0, Y0
	VPMINSD Y13, Y1, Y1
	VPMINSD Y13, Y2, Y2
	VPMINSD Y13, Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y9, Y0
	VMOVDQU Y0, 0(DI)
	VMOVSS X7, 32(DI)
	VPBROADCASTQ ones8<>(SB), Y1
	VPBROADCASTQ ones16<>(SB), Y2
	VPMADDUBSW Y0, Y1, Y3
	VPMADDWD Y2, Y3, Y3        // lanes 0..3: columns 0..15, 4..7: 16..31
	VEXTRACTI128 $1, Y3, X4
	TESTQ R9, R9
	JNZ  khalves
	VPADDD X4, X3, X3
	VPSHUFD $0x4e, X3, X4
	VPADDD X4, X3, X3
	VPSHUFD $0xb1, X3, X4
	VPADDD X4, X3, X3
	VCVTDQ2PS X3, X3
	VMULSS X7, X3, X3          // dx·Σq
	VMOVSS X3, 36(DI)
	JMP  knext
khalves:
	VPSHUFD $0x4e, X3, X5
	VPADDD X5, X3, X3
	VPSHUFD $0xb1, X3, X5
	VPADDD X5, X3, X3
	VPSHUFD $0x4e, X4, X5
	VPADDD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPADDD X5, X4, X4
	TESTQ R11, R11
	JNZ  kminh
	VMOVD X3, AX
	IMULL R9, AX
	MOVL AX, 36(DI)
	VMOVD X4, AX
	IMULL R9, AX
	MOVL AX, 40(DI)
	JMP  knext
kminh:
	VCVTDQ2PS X3, X3
	VMULSS X7, X3, X3          // dx·Σq of each half
	VMOVSS X3, 36(DI)
	VCVTDQ2PS X4, X4
	VMULSS X7, X4, X4
	VMOVSS X4, 40(DI)
knext:
	ADDQ $128, SI
	ADDQ R10, DI
	DECQ DX
	JNZ  kunit
	JMP  knextsuper
kzero:
	MOVQ $8, DX
kzunit:
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, 0(DI)
	MOVQ $0, 32(DI)
	TESTQ R9, R9
	JZ   kzskip
	MOVL $0, 40(DI)
kzskip:
	ADDQ R10, DI
	DECQ DX
	JNZ  kzunit
	ADDQ $1024, SI
knextsuper:
	DECQ CX
	JNZ  ksuper
kdone:
	VZEROUPPER
	RET
