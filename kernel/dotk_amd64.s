//go:build amd64 && !purego

#include "textflag.h"

DATA nibk<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibk<>(SB), RODATA|NOPTR, $8
DATA hi2<>+0(SB)/8, $0x3030303030303030
GLOBL hi2<>(SB), RODATA|NOPTR, $8

// Q4K_CHUNK: 64 weights (32 bytes of nibbles at qoff(SI)) against 64
// activations at xoff(DI); scales 2j, 2j+1 are words at soff(SP), soff+2(SP).
//   Y7 += madd(lo·x[0:32], s[2j]) + madd(hi·x[32:64], s[2j+1])
#define Q4K_CHUNK(qoff, xoff, xoff2, soff, soff2) \
	VMOVDQU qoff(SI), Y2; \
	VPSRLW $4, Y2, Y3; \
	VPAND Y13, Y2, Y2; \
	VPAND Y13, Y3, Y3; \
	VPMADDUBSW xoff(DI), Y2, Y2; \
	VPMADDUBSW xoff2(DI), Y3, Y3; \
	VPBROADCASTW soff(SP), Y4; \
	VPBROADCASTW soff2(SP), Y5; \
	VPMADDWD Y4, Y2, Y2; \
	VPMADDWD Y5, Y3, Y3; \
	VPADDD Y2, Y7, Y7; \
	VPADDD Y3, Y7, Y7

// func dotQ4KQ8KAVX2(nb int, w, x *byte) float32
// per super-block: sum += d·dy·Σ_j sc[j]·Σ q·x − dmin·dy·Σ_j m[j]·bsum(j)
TEXT ·dotQ4KQ8KAVX2(SB), NOSPLIT, $64-28
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS X8, X8, X8
	VPBROADCASTQ nibk<>(SB), Y13
	TESTQ CX, CX
	JZ   done

loop:
	// Unpack the 6-bit scales and mins (ggml's utmp shuffle):
	// bytes 0..7 scales, 8..15 mins.
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), DX
	MOVL DX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL BX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R8                // mins 4..7
	MOVL BX, R10
	ANDL $0x3f3f3f3f, R10      // mins 0..3
	MOVL DX, R11
	ANDL $0x0f0f0f0f, R11
	MOVL AX, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, R11              // scales 4..7
	ANDL $0x3f3f3f3f, AX       // scales 0..3
	SHLQ $32, R11
	ORQ  R11, AX               // 8 scale bytes
	SHLQ $32, R8
	ORQ  R8, R10               // 8 min bytes
	MOVQ AX, X1
	VPINSRQ $1, R10, X1, X1
	VPMOVZXBW X1, Y1
	VMOVDQU Y1, 16(SP)         // words: scale k at 16+2k (read back by Q4K_CHUNK)
	VEXTRACTI128 $1, Y1, X2    // the 8 mins as words

	// mins: X8 += dmin·dy · madd(mins, pairwise bsums)
	VMOVDQU 260(DI), Y3
	VEXTRACTI128 $1, Y3, X4
	VPHADDW X4, X3, X3
	VPMADDWD X2, X3, X3
	VCVTDQ2PS X3, X3
	VPBROADCASTW 2(SI), X5
	VCVTPH2PS X5, X5
	VBROADCASTSS 0(DI), X6
	VMULPS X6, X5, X5
	VFMADD231PS X3, X5, X8

	VPXOR Y7, Y7, Y7
	Q4K_CHUNK(16, 4, 36, 16, 18)
	Q4K_CHUNK(48, 68, 100, 20, 22)
	Q4K_CHUNK(80, 132, 164, 24, 26)
	Q4K_CHUNK(112, 196, 228, 28, 30)

	VPBROADCASTW 0(SI), X5
	VCVTPH2PS X5, Y5
	VBROADCASTSS 0(DI), Y6
	VMULPS Y6, Y5, Y5
	VCVTDQ2PS Y7, Y7
	VFMADD231PS Y7, Y5, Y0
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  loop

done:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X8, X8, X8
	VHADDPS X8, X8, X8
	VSUBSS X8, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

DATA bit4<>+0(SB)/8, $0x1010101010101010
GLOBL bit4<>(SB), RODATA|NOPTR, $8

// Q5K_CHUNK: Q4K_CHUNK with each level's bit 4 taken from qh (Y10): the
// low half's bit 2c and the high half's bit 2c+1, moved to bit 4 by
// shlo/shhi (word shifts; bits crossing into the other byte are masked).
#define Q5K_CHUNK(qoff, xoff, xoff2, soff, soff2, shlo, shhi) \
	VMOVDQU qoff(SI), Y2; \
	VPSRLW $4, Y2, Y3; \
	VPAND Y13, Y2, Y2; \
	VPAND Y13, Y3, Y3; \
	shlo, Y10, Y11; \
	shhi, Y10, Y14; \
	VPAND Y12, Y11, Y11; \
	VPAND Y12, Y14, Y14; \
	VPOR Y11, Y2, Y2; \
	VPOR Y14, Y3, Y3; \
	VPMADDUBSW xoff(DI), Y2, Y2; \
	VPMADDUBSW xoff2(DI), Y3, Y3; \
	VPBROADCASTW soff(SP), Y4; \
	VPBROADCASTW soff2(SP), Y5; \
	VPMADDWD Y4, Y2, Y2; \
	VPMADDWD Y5, Y3, Y3; \
	VPADDD Y2, Y7, Y7; \
	VPADDD Y3, Y7, Y7

// func dotQ5KQ8KAVX2(nb int, w, x *byte) float32
// as dotQ4KQ8KAVX2, with bit 4 of each level from qh (Q5_K)
TEXT ·dotQ5KQ8KAVX2(SB), NOSPLIT, $64-28
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS X8, X8, X8
	VPBROADCASTQ nibk<>(SB), Y13
	VPBROADCASTQ bit4<>(SB), Y12
	TESTQ CX, CX
	JZ   done

loop:
	// Unpack the 6-bit scales and mins (ggml's utmp shuffle):
	// bytes 0..7 scales, 8..15 mins.
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), DX
	MOVL DX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL BX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R8                // mins 4..7
	MOVL BX, R10
	ANDL $0x3f3f3f3f, R10      // mins 0..3
	MOVL DX, R11
	ANDL $0x0f0f0f0f, R11
	MOVL AX, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, R11              // scales 4..7
	ANDL $0x3f3f3f3f, AX       // scales 0..3
	SHLQ $32, R11
	ORQ  R11, AX               // 8 scale bytes
	SHLQ $32, R8
	ORQ  R8, R10               // 8 min bytes
	MOVQ AX, X1
	VPINSRQ $1, R10, X1, X1
	VPMOVZXBW X1, Y1
	VMOVDQU Y1, 16(SP)         // words: scale k at 16+2k (read back by Q4K_CHUNK)
	VEXTRACTI128 $1, Y1, X2    // the 8 mins as words

	// mins: X8 += dmin·dy · madd(mins, pairwise bsums)
	VMOVDQU 260(DI), Y3
	VEXTRACTI128 $1, Y3, X4
	VPHADDW X4, X3, X3
	VPMADDWD X2, X3, X3
	VCVTDQ2PS X3, X3
	VPBROADCASTW 2(SI), X5
	VCVTPH2PS X5, X5
	VBROADCASTSS 0(DI), X6
	VMULPS X6, X5, X5
	VFMADD231PS X3, X5, X8

	VPXOR Y7, Y7, Y7
	VMOVDQU 16(SI), Y10        // qh
	Q5K_CHUNK(48, 4, 36, 16, 18, VPSLLW $4, VPSLLW $3)
	Q5K_CHUNK(80, 68, 100, 20, 22, VPSLLW $2, VPSLLW $1)
	Q5K_CHUNK(112, 132, 164, 24, 26, VPSRLW $0, VPSRLW $1)
	Q5K_CHUNK(144, 196, 228, 28, 30, VPSRLW $2, VPSRLW $3)

	VPBROADCASTW 0(SI), X5
	VCVTPH2PS X5, Y5
	VBROADCASTSS 0(DI), Y6
	VMULPS Y6, Y5, Y5
	VCVTDQ2PS Y7, Y7
	VFMADD231PS Y7, Y5, Y0
	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  loop

done:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X8, X8, X8
	VHADDPS X8, X8, X8
	VSUBSS X8, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Q6K_QUARTER: 32 6-bit levels in Y5 against activations at xoff(DI);
// scales sa, sb (words at soff(SP), soff2(SP)) cover its two halves.
#define Q6K_QUARTER(xoff, soff, soff2) \
	VPMADDUBSW xoff(DI), Y5, Y5; \
	VPBROADCASTW soff(SP), X9; \
	VPBROADCASTW soff2(SP), X10; \
	VINSERTI128 $1, X10, Y9, Y9; \
	VPMADDWD Y9, Y5, Y5; \
	VPADDD Y5, Y7, Y7

// Q6K_HALF: the 128 elements of half n: ql at qloff(SI), qh at qhoff(SI).
#define Q6K_HALF(qloff, qloff2, qhoff, x0, x1, x2, x3, s0, s1, s2, s3, s4, s5, s6, s7) \
	VMOVDQU qloff(SI), Y2; \
	VMOVDQU qloff2(SI), Y3; \
	VMOVDQU qhoff(SI), Y4; \
	VPAND Y13, Y2, Y5; \
	VPSLLW $4, Y4, Y6; \
	VPAND Y12, Y6, Y6; \
	VPOR Y6, Y5, Y5; \
	Q6K_QUARTER(x0, s0, s1); \
	VPAND Y13, Y3, Y5; \
	VPSLLW $2, Y4, Y6; \
	VPAND Y12, Y6, Y6; \
	VPOR Y6, Y5, Y5; \
	Q6K_QUARTER(x1, s2, s3); \
	VPSRLW $4, Y2, Y5; \
	VPAND Y13, Y5, Y5; \
	VPAND Y12, Y4, Y6; \
	VPOR Y6, Y5, Y5; \
	Q6K_QUARTER(x2, s4, s5); \
	VPSRLW $4, Y3, Y5; \
	VPAND Y13, Y5, Y5; \
	VPSRLW $2, Y4, Y6; \
	VPAND Y12, Y6, Y6; \
	VPOR Y6, Y5, Y5; \
	Q6K_QUARTER(x3, s6, s7)

// func dotQ6KQ8KAVX2(nb int, w, x *byte) float32
// per super-block: sum += d·dy·(Σ_k sc[k]·Σ q·x − 32·Σ_k sc[k]·bsum[k]),
// q the unsigned level 0..63.
TEXT ·dotQ6KQ8KAVX2(SB), NOSPLIT, $64-28
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VPBROADCASTQ nibk<>(SB), Y13
	VPBROADCASTQ hi2<>(SB), Y12
	TESTQ CX, CX
	JZ   done

loop:
	VPMOVSXBW 192(SI), Y1      // 16 scales as words
	VMOVDQU Y1, 0(SP)
	VPMADDWD 260(DI), Y1, Y2   // Σ sc·bsum in pairs
	VPSLLD $5, Y2, Y2
	VPXOR Y7, Y7, Y7
	VPSUBD Y2, Y7, Y7          // −32·Σ sc·bsum
	Q6K_HALF(0, 32, 128, 4, 36, 68, 100, 0, 2, 4, 6, 8, 10, 12, 14)
	Q6K_HALF(64, 96, 160, 132, 164, 196, 228, 16, 18, 20, 22, 24, 26, 28, 30)
	VPBROADCASTW 208(SI), X5
	VCVTPH2PS X5, Y5
	VBROADCASTSS 0(DI), Y6
	VMULPS Y6, Y5, Y5
	VCVTDQ2PS Y7, Y7
	VFMADD231PS Y7, Y5, Y0
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  loop

done:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

DATA three<>+0(SB)/8, $0x0303030303030303
GLOBL three<>(SB), RODATA|NOPTR, $8
DATA bit2<>+0(SB)/8, $0x0404040404040404
GLOBL bit2<>(SB), RODATA|NOPTR, $8
DATA w32<>+0(SB)/8, $0x0020002000200020
GLOBL w32<>(SB), RODATA|NOPTR, $8

// Q3K_QUARTER: levels u = ((Q >> 2j) & 3) | (hmask bit 4n+j) << 2 for the
// 32 elements of quarter j of half n (Y2 = qs of the half, Y10 = hmask),
// against activations at xoff; scales (words) at soff(SP), soff2(SP).
#define Q3K_QUARTER(qsh, hsh, xoff, soff, soff2) \
	qsh, Y2, Y5; \
	VPAND Y13, Y5, Y5; \
	hsh, Y10, Y6; \
	VPAND Y12, Y6, Y6; \
	VPOR Y6, Y5, Y5; \
	VPMADDUBSW xoff(DI), Y5, Y5; \
	VPBROADCASTW soff(SP), X9; \
	VPBROADCASTW soff2(SP), X11; \
	VINSERTI128 $1, X11, Y9, Y9; \
	VPMADDWD Y9, Y5, Y5; \
	VPADDD Y5, Y7, Y7

// func dotQ3KQ8KAVX2(nb int, w, x *byte) float32
// per super-block: sum += d·dy·(Σ_k sc[k]·Σ u·x − 4·Σ_k sc[k]·bsum[k]),
// u = level + 4 ∈ [0, 7], sc[k] the 6-bit scale − 32.
TEXT ·dotQ3KQ8KAVX2(SB), NOSPLIT, $64-28
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VPBROADCASTQ three<>(SB), Y13
	VPBROADCASTQ bit2<>(SB), Y12
	VPBROADCASTQ w32<>(SB), Y15
	TESTQ CX, CX
	JZ   done

loop:
	// Unpack the 16 6-bit scales (ggml's aux shuffle).
	MOVL 96(SI), AX            // aux0
	MOVL 100(SI), BX           // aux1
	MOVL 104(SI), DX           // tmp = aux2
	MOVL AX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL DX, R9
	SHRL $4, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R8                // scales 8..11
	MOVL BX, R10
	SHRL $4, R10
	ANDL $0x0f0f0f0f, R10
	MOVL DX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R10               // scales 12..15
	ANDL $0x0f0f0f0f, AX
	MOVL DX, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, AX                // scales 0..3
	ANDL $0x0f0f0f0f, BX
	MOVL DX, R9
	SHRL $2, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, BX                // scales 4..7
	SHLQ $32, BX
	ORQ  BX, AX
	SHLQ $32, R10
	ORQ  R10, R8
	MOVQ AX, X1
	VPINSRQ $1, R8, X1, X1
	VPMOVZXBW X1, Y1
	VPSUBW Y15, Y1, Y1         // signed scales as words
	VMOVDQU Y1, 0(SP)
	VPMADDWD 260(DI), Y1, Y2   // Σ sc·bsum in pairs
	VPSLLD $2, Y2, Y2
	VPXOR Y7, Y7, Y7
	VPSUBD Y2, Y7, Y7          // −4·Σ sc·bsum

	VMOVDQU 0(SI), Y10         // hmask
	VMOVDQU 32(SI), Y2         // qs, half 0
	Q3K_QUARTER(VPSRLW $0, VPSLLW $2, 4, 0, 2)
	Q3K_QUARTER(VPSRLW $2, VPSLLW $1, 36, 4, 6)
	Q3K_QUARTER(VPSRLW $4, VPSRLW $0, 68, 8, 10)
	Q3K_QUARTER(VPSRLW $6, VPSRLW $1, 100, 12, 14)
	VMOVDQU 64(SI), Y2         // qs, half 1
	Q3K_QUARTER(VPSRLW $0, VPSRLW $2, 132, 16, 18)
	Q3K_QUARTER(VPSRLW $2, VPSRLW $3, 164, 20, 22)
	Q3K_QUARTER(VPSRLW $4, VPSRLW $4, 196, 24, 26)
	Q3K_QUARTER(VPSRLW $6, VPSRLW $5, 228, 28, 30)

	VPBROADCASTW 108(SI), X5
	VCVTPH2PS X5, Y5
	VBROADCASTSS 0(DI), Y6
	VMULPS Y6, Y5, Y5
	VCVTDQ2PS Y7, Y7
	VFMADD231PS Y7, Y5, Y0
	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  loop

done:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

DATA lownib16<>+0(SB)/8, $0x000f000f000f000f
GLOBL lownib16<>(SB), RODATA|NOPTR, $8

// Q2K_QUARTER: levels (Q >> 2j) & 3 of quarter j (Y2 = qs of the half)
// against activations at xoff; scales (words) at soff(SP), soff2(SP).
#define Q2K_QUARTER(qsh, xoff, soff, soff2) \
	qsh, Y2, Y5; \
	VPAND Y13, Y5, Y5; \
	VPMADDUBSW xoff(DI), Y5, Y5; \
	VPBROADCASTW soff(SP), X9; \
	VPBROADCASTW soff2(SP), X11; \
	VINSERTI128 $1, X11, Y9, Y9; \
	VPMADDWD Y9, Y5, Y5; \
	VPADDD Y5, Y7, Y7

// func dotQ2KQ8KAVX2(nb int, w, x *byte) float32
// per super-block: sum += d·dy·Σ_k sc[k]·Σ q·x − dmin·dy·Σ_k m[k]·bsum[k]
TEXT ·dotQ2KQ8KAVX2(SB), NOSPLIT, $64-28
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8          // min terms
	VPBROADCASTQ three<>(SB), Y13
	VPBROADCASTQ lownib16<>(SB), Y12
	TESTQ CX, CX
	JZ   done

loop:
	VPMOVZXBW 0(SI), Y1        // scale|min bytes as words
	VPAND Y12, Y1, Y3          // scales
	VPSRLW $4, Y1, Y4          // mins
	VMOVDQU Y3, 0(SP)
	VPMADDWD 260(DI), Y4, Y4   // Σ m·bsum in pairs
	VCVTDQ2PS Y4, Y4
	VPBROADCASTW 82(SI), X5
	VCVTPH2PS X5, Y5
	VBROADCASTSS 0(DI), Y6
	VMULPS Y6, Y5, Y5          // dmin·dy
	VFMADD231PS Y4, Y5, Y8

	VPXOR Y7, Y7, Y7
	VMOVDQU 16(SI), Y2         // qs, half 0
	Q2K_QUARTER(VPSRLW $0, 4, 0, 2)
	Q2K_QUARTER(VPSRLW $2, 36, 4, 6)
	Q2K_QUARTER(VPSRLW $4, 68, 8, 10)
	Q2K_QUARTER(VPSRLW $6, 100, 12, 14)
	VMOVDQU 48(SI), Y2         // qs, half 1
	Q2K_QUARTER(VPSRLW $0, 132, 16, 18)
	Q2K_QUARTER(VPSRLW $2, 164, 20, 22)
	Q2K_QUARTER(VPSRLW $4, 196, 24, 26)
	Q2K_QUARTER(VPSRLW $6, 228, 28, 30)

	VPBROADCASTW 80(SI), X5
	VCVTPH2PS X5, Y5
	VMULPS Y6, Y5, Y5          // d·dy
	VCVTDQ2PS Y7, Y7
	VFMADD231PS Y7, Y5, Y0
	ADDQ $84, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  loop

done:
	VSUBPS Y8, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
