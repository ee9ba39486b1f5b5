//go:build amd64 && !purego

#include "textflag.h"

DATA ones16l<>+0(SB)/8, $0x0001000100010001
GLOBL ones16l<>(SB), RODATA|NOPTR, $8
DATA nibl<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibl<>(SB), RODATA|NOPTR, $8
DATA hif0<>+0(SB)/8, $0xf0f0f0f0f0f0f0f0
GLOBL hif0<>(SB), RODATA|NOPTR, $8
DATA b10<>+0(SB)/8, $0x1010101010101010
GLOBL b10<>(SB), RODATA|NOPTR, $8
DATA bitsel<>+0(SB)/8, $0x8040201008040201
GLOBL bitsel<>(SB), RODATA|NOPTR, $8
// VPSHUFB mask spreading the 4 bytes of a broadcast dword over 32 bytes:
// bytes 0-7 ← byte 0, 8-15 ← 1, 16-23 ← 2, 24-31 ← 3.
DATA spread<>+0(SB)/8, $0x0000000000000000
DATA spread<>+8(SB)/8, $0x0101010101010101
DATA spread<>+16(SB)/8, $0x0202020202020202
DATA spread<>+24(SB)/8, $0x0303030303030303
GLOBL spread<>(SB), RODATA|NOPTR, $32

// NIBBLES: the 32 4-bit levels at off(SI) (16 bytes) into Y3, element
// order (low nibbles then high nibbles).
#define NIBBLES(off) \
	VMOVDQU off(SI), X3; \
	VPSRLW $4, X3, X4; \
	VINSERTI128 $1, X4, Y3, Y3; \
	VPAND Y13, Y3, Y3

// QHBITS: Y6 = 0xFF in byte j where bit j of the u32 at off(SI) is set.
#define QHBITS(off) \
	VPBROADCASTD off(SI), Y6; \
	VPSHUFB Y11, Y6, Y6; \
	VPAND Y10, Y6, Y6; \
	VPCMPEQB Y10, Y6, Y6

// SCALE(woff, xoff): Y1 = f16(w)·f16(x) broadcast.
#define SCALE(woff, xoff) \
	VPBROADCASTW woff(SI), X1; \
	VPBROADCASTW xoff(DI), X2; \
	VCVTPH2PS X1, Y1; \
	VCVTPH2PS X2, Y2; \
	VMULPS Y1, Y2, Y1

#define HSUMY0 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VHADDPS X0, X0, X0; \
	VHADDPS X0, X0, X0

// func dotQ5_0Q8_0AVX2(nb int, w, x *byte) float32
// signed levels q−16 = nibble | (bit ? 0 : 0xF0) (as int8), then the sign
// trick and a pairwise multiply-add, as for Q4_0.
TEXT ·dotQ5_0Q8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VPBROADCASTQ ones16l<>(SB), Y14
	VPBROADCASTQ nibl<>(SB), Y13
	VPBROADCASTQ hif0<>(SB), Y12
	VMOVDQU spread<>(SB), Y11
	VPBROADCASTQ bitsel<>(SB), Y10
	TESTQ CX, CX
	JZ   done
loop:
	SCALE(0, 0)
	NIBBLES(6)
	QHBITS(2)
	VPANDN Y12, Y6, Y6         // 0xF0 where the bit is clear
	VPOR Y6, Y3, Y3            // q − 16
	VMOVDQU 2(DI), Y4
	VPSIGNB Y3, Y4, Y4
	VPABSB Y3, Y3
	VPMADDUBSW Y4, Y3, Y5
	VPMADDWD Y14, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  loop
done:
	HSUMY0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ4_1Q8_1AVX2(nb int, w, x *byte) float32
// per block: sum += dw·dx·Σ q·x + m·s (q unsigned nibbles)
TEXT ·dotQ4_1Q8_1AVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS X9, X9, X9
	VPBROADCASTQ ones16l<>(SB), Y14
	VPBROADCASTQ nibl<>(SB), Y13
	TESTQ CX, CX
	JZ   done
loop:
	SCALE(0, 0)
	NIBBLES(4)
	VPMADDUBSW 4(DI), Y3, Y5
	VPMADDWD Y14, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	VPBROADCASTW 2(SI), X7
	VPBROADCASTW 2(DI), X8
	VCVTPH2PS X7, X7
	VCVTPH2PS X8, X8
	VFMADD231SS X8, X7, X9     // m·s
	ADDQ $20, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  loop
done:
	HSUMY0
	VADDSS X9, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ5_1Q8_1AVX2(nb int, w, x *byte) float32
// per block: sum += dw·dx·Σ q·x + m·s, q = nibble | bit<<4
TEXT ·dotQ5_1Q8_1AVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS X9, X9, X9
	VPBROADCASTQ ones16l<>(SB), Y14
	VPBROADCASTQ nibl<>(SB), Y13
	VPBROADCASTQ b10<>(SB), Y12
	VMOVDQU spread<>(SB), Y11
	VPBROADCASTQ bitsel<>(SB), Y10
	TESTQ CX, CX
	JZ   done
loop:
	SCALE(0, 0)
	NIBBLES(8)
	QHBITS(4)
	VPAND Y12, Y6, Y6          // 0x10 where the bit is set
	VPOR Y6, Y3, Y3
	VPMADDUBSW 4(DI), Y3, Y5
	VPMADDWD Y14, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	VPBROADCASTW 2(SI), X7
	VPBROADCASTW 2(DI), X8
	VCVTPH2PS X7, X7
	VCVTPH2PS X8, X8
	VFMADD231SS X8, X7, X9
	ADDQ $24, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  loop
done:
	HSUMY0
	VADDSS X9, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
