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

// ROUNDAWAY512: y = roundf(y) per lane as ROUNDAWAY (t = trunc(y); if
// |y−t| ≥ ½ then t += copysign(1, y)); clobbers Z26, Z27, K2.
#define ROUNDAWAY512(y) \
	VRNDSCALEPS $3, y, Z26; \
	VSUBPS Z26, y, Z27; \
	VANDPS.BCST absmask<>(SB), Z27, Z27; \
	VCMPPS.BCST $13, fhalf<>(SB), Z27, K2; \
	VANDPS.BCST signmask<>(SB), y, Z27; \
	VORPS.BCST fone<>(SB), Z27, Z27; \
	VADDPS Z27, Z26, K2, Z26; \
	VMOVAPS Z26, y

// TREE4(op, a..h): eight vectors of 16 lanes reduced by op (VMAXPS or
// VPADDD) to one, in a: lanes 4k and 4k+1 hold vector k's result (k < 4),
// lanes 4k+2 and 4k+3 vector k+4's. Clobbers b..h's first four, Z24, Z25.
#define TREE4(op, a, b, c, d, e, f, g, h) \
	VSHUFF32X4 $0x44, b, a, Z24; \
	VSHUFF32X4 $0xEE, b, a, Z25; \
	op Z25, Z24, a; \
	VSHUFF32X4 $0x44, d, c, Z24; \
	VSHUFF32X4 $0xEE, d, c, Z25; \
	op Z25, Z24, b; \
	VSHUFF32X4 $0x44, f, e, Z24; \
	VSHUFF32X4 $0xEE, f, e, Z25; \
	op Z25, Z24, c; \
	VSHUFF32X4 $0x44, h, g, Z24; \
	VSHUFF32X4 $0xEE, h, g, Z25; \
	op Z25, Z24, d; \
	VSHUFF32X4 $0x88, b, a, Z24; \
	VSHUFF32X4 $0xDD, b, a, Z25; \
	op Z25, Z24, a; \
	VSHUFF32X4 $0x88, d, c, Z24; \
	VSHUFF32X4 $0xDD, d, c, Z25; \
	op Z25, Z24, b; \
	VSHUFPS $0x88, b, a, Z24; \
	VSHUFPS $0xDD, b, a, Z25; \
	op Z25, Z24, a; \
	VPERMILPS $0xB1, a, Z24; \
	op Z24, a, a

// LOADMAX(off, lo, hi, m): a block's 32 floats at off(SI) into lo, hi and
// their lane-wise absolute maxima into m; clobbers Z24.
#define LOADMAX(off, lo, hi, m) \
	VMOVUPS off(SI), lo; \
	VMOVUPS off+64(SI), hi; \
	VANDPS.BCST absmask<>(SB), lo, m; \
	VANDPS.BCST absmask<>(SB), hi, Z24; \
	VMAXPS Z24, m, m

// QBLOCK(b, lo, hi, lane): block b's 32 floats in lo, hi times its 1/d
// (the float at lane·4(SP)) to 32 int8 levels at 40·b(DI), their int32
// sums (16 lanes) in lo.
#define QBLOCK(b, lo, hi, lane) \
	VBROADCASTSS (lane*4)(SP), Z28; \
	VMULPS Z28, lo, lo; \
	VMULPS Z28, hi, hi; \
	ROUNDAWAY512(lo); \
	ROUNDAWAY512(hi); \
	VCVTTPS2DQ lo, lo; \
	VCVTTPS2DQ hi, hi; \
	VPMOVSDB lo, (b*40)(DI); \
	VPMOVSDB hi, (b*40+16)(DI); \
	VPADDD hi, lo, lo

// RECTAIL(b, lane): block b's dx and third word from the stack into its
// record.
#define RECTAIL(b, lane) \
	MOVL (64+lane*4)(SP), AX; \
	MOVL AX, (b*40+32)(DI); \
	MOVL (128+lane*4)(SP), AX; \
	MOVL AX, (b*40+36)(DI)

// func x16RecQ8_0AVX512(ng int, x *float32, rec *byte, negoff, minh int)
// x16RecQ8_0AVX2 for ng groups of eight blocks (256 floats) with AVX-512:
// each group's eight absolute maxima and level sums are reduced together
// (TREE4), and d, its fp16 rounding and 1/d are one vector operation each.
// The same operations per lane as quantQ8_0, so the same bits.
// Stack: 0: 1/d per lane; 64: dx; 128: the records' third words.
TEXT ·x16RecQ8_0AVX512(SB), NOSPLIT, $192-40
	MOVQ ng+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ rec+16(FP), DI
	MOVQ negoff+24(FP), R10
	MOVQ minh+32(FP), R11
	VPBROADCASTD R10, Z29
	VPXORD Z30, Z30, Z30
	TESTQ CX, CX
	JZ   gdone
group:
	LOADMAX(0, Z0, Z1, Z16)
	LOADMAX(128, Z2, Z3, Z17)
	LOADMAX(256, Z4, Z5, Z18)
	LOADMAX(384, Z6, Z7, Z19)
	LOADMAX(512, Z8, Z9, Z20)
	LOADMAX(640, Z10, Z11, Z21)
	LOADMAX(768, Z12, Z13, Z22)
	LOADMAX(896, Z14, Z15, Z23)
	TREE4(VMAXPS, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)
	VDIVPS.BCST f127<>(SB), Z16, Z31 // d = amax/127, kept for the min sums
	VCVTPS2PH $0, Z31, Y17
	VCVTPH2PS Y17, Z17                // dx
	VMOVUPS Z17, 64(SP)
	VBROADCASTSS fone<>(SB), Z18
	VDIVPS Z31, Z18, Z18              // 1/d
	VCMPPS $0, Z30, Z31, K1           // d = 0: 1/d is 0 (inv)
	VMOVAPS Z30, K1, Z18
	VMOVUPS Z18, 0(SP)
	QBLOCK(0, Z0, Z1, 0)
	QBLOCK(1, Z2, Z3, 4)
	QBLOCK(2, Z4, Z5, 8)
	QBLOCK(3, Z6, Z7, 12)
	QBLOCK(4, Z8, Z9, 2)
	QBLOCK(5, Z10, Z11, 6)
	QBLOCK(6, Z12, Z13, 10)
	QBLOCK(7, Z14, Z15, 14)
	TREE4(VPADDD, Z0, Z2, Z4, Z6, Z8, Z10, Z12, Z14)
	TESTQ R11, R11
	JNZ  gmin
	VPMULLD Z29, Z0, Z0               // −off·Σq
	JMP  gstore
gmin:
	VCVTDQ2PS Z0, Z0
	VMULPS Z31, Z0, Z0                // float32(Σq)·d, to fp16 and back
	VCVTPS2PH $0, Z0, Y0
	VCVTPH2PS Y0, Z0
gstore:
	VMOVUPS Z0, 128(SP)
	RECTAIL(0, 0)
	RECTAIL(1, 4)
	RECTAIL(2, 8)
	RECTAIL(3, 12)
	RECTAIL(4, 2)
	RECTAIL(5, 6)
	RECTAIL(6, 10)
	RECTAIL(7, 14)
	ADDQ $1024, SI
	ADDQ $320, DI
	DECQ CX
	JNZ  group
gdone:
	VZEROUPPER
	RET
