//go:build amd64 && !purego

#include "textflag.h"

// IQ4 and MXFP4 dot products with AVX2 (quant_iq4.go and quant_mxfp4.go
// have the formats and the generic twins): the indices are looked up with
// VPSHUFB in the format's table of signed levels (Y12), then multiplied as
// Q4_0's levels are (the sign moved onto the activations, |level| ≤ 127,
// so VPMADDUBSW's pairs cannot saturate).

DATA iq4s<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4s<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4s<>(SB), RODATA|NOPTR, $16
DATA fp4s<>+0(SB)/8, $0x0c08060403020100 // kvalues_mxfp4: 0 1 2 3 4 6 8 12
DATA fp4s<>+8(SB)/8, $0xf4f8fafcfdfeff00 //   0 −1 −2 −3 −4 −6 −8 −12
GLOBL fp4s<>(SB), RODATA|NOPTR, $16
DATA nibi<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibi<>(SB), RODATA|NOPTR, $8
DATA ones16i<>+0(SB)/8, $0x0001000100010001
GLOBL ones16i<>(SB), RODATA|NOPTR, $8

// IQ4LEVELS(off, y): the 32 levels of the 16 index bytes at off(SI): low
// nibbles in the lower lane (columns 0..15), high nibbles in the upper.
#define IQ4LEVELS(off, y) \
	VMOVDQU off(SI), X3; \
	VPSRLW $4, X3, X4; \
	VINSERTI128 $1, X4, Y3, y; \
	VPAND Y13, y, y; \
	VPSHUFB y, Y12, y

// IQ4DOT(y, xoff, acc): acc (8 int32 lanes) = Σ of the levels y times the
// 32 activations at xoff(DI), in pairs then quads.
#define IQ4DOT(y, xoff, acc) \
	VMOVDQU xoff(DI), Y4; \
	VPSIGNB y, Y4, Y4; \
	VPABSB y, y; \
	VPMADDUBSW Y4, y, acc; \
	VPMADDWD Y14, acc, acc

// func dotIQ4NLQ8_0AVX2(nb int, w, x *byte) float32
// per block: sum += float(Σ kv[w]·x.qs) · w.d · x.d
TEXT ·dotIQ4NLQ8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VPBROADCASTQ ones16i<>(SB), Y14
	VPBROADCASTQ nibi<>(SB), Y13
	VBROADCASTI128 iq4s<>(SB), Y12
	TESTQ CX, CX
	JZ   nldone
nlloop:
	VPBROADCASTW (SI), X1
	VPBROADCASTW (DI), X2
	VCVTPH2PS X1, Y1
	VCVTPH2PS X2, Y2
	VMULPS Y1, Y2, Y1          // dw·dx
	IQ4LEVELS(2, Y3)
	IQ4DOT(Y3, 2, Y5)
	VCVTDQ2PS Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  nlloop
nldone:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotMXFP4Q8_0AVX2(nb int, w, x *byte) float32
// per block: sum += float(Σ kv[w]·x.qs) · 2^(w.e−128) · x.d
TEXT ·dotMXFP4Q8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), R8
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VPBROADCASTQ ones16i<>(SB), Y14
	VPBROADCASTQ nibi<>(SB), Y13
	VBROADCASTI128 fp4s<>(SB), Y12
	TESTQ R8, R8
	JZ   mxdone
mxloop:
	// dw = 2^(e−128): float bits (e−1)<<23, or 0x00200000<<e for e < 2
	MOVBLZX (SI), CX
	LEAL -1(CX), AX
	SHLL $23, AX
	MOVL $0x00200000, BX
	SHLL CX, BX
	CMPL CX, $2
	CMOVLLT BX, AX
	VMOVD AX, X1
	VPBROADCASTD X1, Y1
	VPBROADCASTW (DI), X2
	VCVTPH2PS X2, Y2
	VMULPS Y1, Y2, Y1          // dw·dx
	IQ4LEVELS(1, Y3)
	IQ4DOT(Y3, 2, Y5)
	VCVTDQ2PS Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	ADDQ $17, SI
	ADDQ $34, DI
	DECQ R8
	JNZ  mxloop
mxdone:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotIQ4XSQ8KAVX2(nb int, w, x *byte) float32
// per super-block: sum += float(Σ_s (ls_s−32)·Σ kv[w]·x.qs) · w.d · x.d,
// the integer sums in eight int32 lanes.
TEXT ·dotIQ4XSQ8KAVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), DX
	MOVQ w+8(FP), R8
	MOVQ x+16(FP), R9
	VXORPS Y0, Y0, Y0
	VPBROADCASTQ ones16i<>(SB), Y14
	VPBROADCASTQ nibi<>(SB), Y13
	VBROADCASTI128 iq4s<>(SB), Y12
	TESTQ DX, DX
	JZ   xsdone
xssuper:
	VPXOR Y5, Y5, Y5
	MOVWLZX 2(R8), R11         // scales_h
	LEAQ 8(R8), SI             // this sub-block's indices
	LEAQ 4(R9), DI             // its activations
	XORQ R10, R10              // sub-block s
xssub:
	IQ4LEVELS(0, Y3)
	IQ4DOT(Y3, 0, Y6)
	// ls = (scales_l[s/2] >> 4(s%2)) & 15 | ((scales_h >> 2s) & 3) << 4
	MOVQ R10, CX
	SHRQ $1, CX
	MOVBLZX 4(R8)(CX*1), AX
	MOVQ R10, CX
	ANDQ $1, CX
	SHLQ $2, CX
	SHRL CX, AX
	ANDL $15, AX
	MOVQ R10, CX
	SHLQ $1, CX
	MOVL R11, BX
	SHRL CX, BX
	ANDL $3, BX
	SHLL $4, BX
	ORL  BX, AX
	SUBL $32, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	VPMULLD Y7, Y6, Y6
	VPADDD Y6, Y5, Y5
	ADDQ $16, SI
	ADDQ $32, DI
	INCQ R10
	CMPQ R10, $8
	JLT  xssub
	VPBROADCASTW (R8), X1
	VCVTPH2PS X1, Y1
	VBROADCASTSS (R9), Y2      // Q8_K's d is float32
	VMULPS Y1, Y2, Y1
	VCVTDQ2PS Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	ADDQ $136, R8
	ADDQ $292, R9
	DECQ DX
	JNZ  xssuper
xsdone:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
