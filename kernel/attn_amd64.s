//go:build amd64 && !purego

#include "textflag.h"

// Scores over key blocks (ScoresF16Blocks): a block holds the keys of 16
// positions dimension by dimension, row j the 16 positions' halves of
// dimension j (32 bytes), so one conversion gives dimension j of 16 keys
// and one multiply-add by the query's q[j], broadcast, advances 16 sums:
// no sums across lanes per key. Every position's sum runs over the
// dimensions in order, one fused multiply-add each, in all of the loops
// below, so they give the same bits for a position whichever loop
// computed it.

// BLK4ARGS: CX blocks, DI the scores (R11 bytes between heads'), SI the
// key blocks (R8 bytes each), R9 the queries of heads 0 and 1 and R13 of
// heads 2 and 3 (R12 bytes between heads), R10 the dimensions.
#define BLK4ARGS \
	MOVQ nb+0(FP), CX; \
	MOVQ s+8(FP), DI; \
	MOVQ sn+16(FP), R11; \
	SHLQ $2, R11; \
	MOVQ k+24(FP), SI; \
	MOVQ q+32(FP), R9; \
	MOVQ width+40(FP), R10; \
	MOVQ R10, R12; \
	SHLQ $2, R12; \
	MOVQ R10, R8; \
	SHLQ $5, R8; \
	LEAQ (R9)(R12*2), R13

// SCORE4STORE scales the four heads' 16 scores (Z0..Z3) by Z15 and writes
// them at DI, R11 bytes apart, then advances DI by a block's 16 scores
// (scoresBlocks4AVX512, scoresQ8x4AVX512).
#define SCORE4STORE \
	VMULPS Z15, Z0, Z0; \
	VMULPS Z15, Z1, Z1; \
	VMULPS Z15, Z2, Z2; \
	VMULPS Z15, Z3, Z3; \
	MOVQ DI, AX; \
	VMOVUPS Z0, (AX); \
	ADDQ R11, AX; \
	VMOVUPS Z1, (AX); \
	ADDQ R11, AX; \
	VMOVUPS Z2, (AX); \
	ADDQ R11, AX; \
	VMOVUPS Z3, (AX); \
	ADDQ $64, DI

// The four-head value loops' parts (mixF16x4AVX512, mixQ8x4AVX512):
// MIX4ARGS loads the arguments (R11: bytes between heads' weights, R12:
// between heads' outputs, R10: 64-column blocks, R13: head 2's weights);
// MIX4ZERO clears the sixteen sums (four heads × 64 columns); MIX4STORE
// writes them to the four heads' outputs at DI.
#define MIX4ARGS \
	MOVQ o+8(FP), DI; \
	MOVQ v+16(FP), SI; \
	MOVQ stride+24(FP), R8; \
	MOVQ w+32(FP), R9; \
	MOVQ wn+40(FP), R11; \
	SHLQ $2, R11; \
	MOVQ width+48(FP), R10; \
	MOVQ R10, R12; \
	SHLQ $2, R12; \
	SHRQ $6, R10; \
	LEAQ (R9)(R11*2), R13

#define MIX4ZERO \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15

#define MIX4STORE \
	MOVQ DI, AX; \
	VMOVUPS Z0, (AX); \
	VMOVUPS Z1, 64(AX); \
	VMOVUPS Z2, 128(AX); \
	VMOVUPS Z3, 192(AX); \
	ADDQ R12, AX; \
	VMOVUPS Z4, (AX); \
	VMOVUPS Z5, 64(AX); \
	VMOVUPS Z6, 128(AX); \
	VMOVUPS Z7, 192(AX); \
	ADDQ R12, AX; \
	VMOVUPS Z8, (AX); \
	VMOVUPS Z9, 64(AX); \
	VMOVUPS Z10, 128(AX); \
	VMOVUPS Z11, 192(AX); \
	ADDQ R12, AX; \
	VMOVUPS Z12, (AX); \
	VMOVUPS Z13, 64(AX); \
	VMOVUPS Z14, 128(AX); \
	VMOVUPS Z15, 192(AX)

// func mixF16AVX2(n int, o *float32, v *byte, stride int, w *float32, width int)
// o[j] += Σ_i w[i]·half(v[i*stride+2j]) for i < n, j < width; width a
// positive multiple of 32. Columns go 32 at a time in four accumulators,
// each running over all rows in order, so o[j] sums the rows in position
// order as the generic twin does (but with fused multiply-adds).
TEXT ·mixF16AVX2(SB), NOSPLIT, $0-48
	MOVQ o+8(FP), DI
	MOVQ v+16(FP), SI
	MOVQ stride+24(FP), R8
	MOVQ w+32(FP), R9
	MOVQ width+40(FP), R10
	SHRQ $5, R10
block:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ n+0(FP), CX
	MOVQ SI, AX
	MOVQ R9, BX
mrow:
	VBROADCASTSS (BX), Y4
	VCVTPH2PS (AX), Y5
	VCVTPH2PS 16(AX), Y6
	VCVTPH2PS 32(AX), Y7
	VCVTPH2PS 48(AX), Y8
	VFMADD231PS Y5, Y4, Y0
	VFMADD231PS Y6, Y4, Y1
	VFMADD231PS Y7, Y4, Y2
	VFMADD231PS Y8, Y4, Y3
	ADDQ $4, BX
	ADDQ R8, AX
	DECQ CX
	JNZ  mrow
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $64, SI
	DECQ R10
	JNZ  block
	VZEROUPPER
	RET

// func mixF16x64AVX2(n int, o *float32, v *byte, stride int, w *float32, width int)
// mixF16AVX2 for width a positive multiple of 64: 64 columns at a time in
// eight accumulators, so each row's weight feeds eight independent
// multiply-adds (with four, the loop waited on each accumulator's previous
// one). Every column still sums the rows in position order: the bits are
// mixF16AVX2's.
TEXT ·mixF16x64AVX2(SB), NOSPLIT, $0-48
	MOVQ o+8(FP), DI
	MOVQ v+16(FP), SI
	MOVQ stride+24(FP), R8
	MOVQ w+32(FP), R9
	MOVQ width+40(FP), R10
	SHRQ $6, R10
block64:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ n+0(FP), CX
	MOVQ SI, AX
	MOVQ R9, BX
m64row:
	VBROADCASTSS (BX), Y8
	VCVTPH2PS (AX), Y9
	VCVTPH2PS 16(AX), Y10
	VCVTPH2PS 32(AX), Y11
	VCVTPH2PS 48(AX), Y12
	VFMADD231PS Y9, Y8, Y0
	VFMADD231PS Y10, Y8, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y12, Y8, Y3
	VCVTPH2PS 64(AX), Y13
	VCVTPH2PS 80(AX), Y14
	VCVTPH2PS 96(AX), Y15
	VCVTPH2PS 112(AX), Y9
	VFMADD231PS Y13, Y8, Y4
	VFMADD231PS Y14, Y8, Y5
	VFMADD231PS Y15, Y8, Y6
	VFMADD231PS Y9, Y8, Y7
	ADDQ $4, BX
	ADDQ R8, AX
	DECQ CX
	JNZ  m64row
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ $128, SI
	DECQ R10
	JNZ  block64
	VZEROUPPER
	RET

// func mixF16x4AVX512(n int, o *float32, v *byte, stride int, w *float32, wn, width int)
// mixF16x64AVX2 for four heads that read the same values: head j's
// weights are w[j·wn:], its output o[j·width:]. Per block of 64 columns
// each value row is converted once (four 16-lane halves) and feeds sixteen
// multiply-adds, four per head; every column sums the rows in position
// order from zero (o is cleared), so the bits are four MixF16 calls'.
TEXT ·mixF16x4AVX512(SB), NOSPLIT, $0-56
	MIX4ARGS
x4blk:
	MIX4ZERO
	MOVQ n+0(FP), CX
	MOVQ SI, AX
	MOVQ R9, BX
	MOVQ R13, R14
x4mrow:
	VCVTPH2PS (AX), Z16
	VCVTPH2PS 32(AX), Z17
	VCVTPH2PS 64(AX), Z18
	VCVTPH2PS 96(AX), Z19
	VBROADCASTSS (BX), Z20
	VBROADCASTSS (BX)(R11*1), Z21
	VBROADCASTSS (R14), Z22
	VBROADCASTSS (R14)(R11*1), Z23
	VFMADD231PS Z16, Z20, Z0
	VFMADD231PS Z17, Z20, Z1
	VFMADD231PS Z18, Z20, Z2
	VFMADD231PS Z19, Z20, Z3
	VFMADD231PS Z16, Z21, Z4
	VFMADD231PS Z17, Z21, Z5
	VFMADD231PS Z18, Z21, Z6
	VFMADD231PS Z19, Z21, Z7
	VFMADD231PS Z16, Z22, Z8
	VFMADD231PS Z17, Z22, Z9
	VFMADD231PS Z18, Z22, Z10
	VFMADD231PS Z19, Z22, Z11
	VFMADD231PS Z16, Z23, Z12
	VFMADD231PS Z17, Z23, Z13
	VFMADD231PS Z18, Z23, Z14
	VFMADD231PS Z19, Z23, Z15
	ADDQ $4, BX
	ADDQ $4, R14
	ADDQ R8, AX
	DECQ CX
	JNZ  x4mrow
	MIX4STORE
	ADDQ $256, DI
	ADDQ $128, SI
	DECQ R10
	JNZ  x4blk
	VZEROUPPER
	RET

// func scoresBlocks4AVX512(nb int, s *float32, sn int, k *byte, q *float32, width int, scale float32)
// Four heads' scores over nb ≥ 1 key blocks: head h's query is
// q[h*width:], its 16·nb scores s[h*sn:]. A block at a time, front to
// back: two blocks at once (eight sums in flight instead of four) ran 1.1×
// faster in L2 but 1.3× slower from DRAM, the two interleaved streams 2 KiB
// apart defeating the prefetchers.
TEXT ·scoresBlocks4AVX512(SB), NOSPLIT, $0-52
	BLK4ARGS
	VBROADCASTSS scale+48(FP), Z15
b4blk:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ SI, AX
	MOVQ R9, BX
	MOVQ R13, R14
	MOVQ R10, DX
b4dim:
	VCVTPH2PS (AX), Z8
	VFMADD231PS.BCST (BX), Z8, Z0
	VFMADD231PS.BCST (BX)(R12*1), Z8, Z1
	VFMADD231PS.BCST (R14), Z8, Z2
	VFMADD231PS.BCST (R14)(R12*1), Z8, Z3
	ADDQ $32, AX
	ADDQ $4, BX
	ADDQ $4, R14
	DECQ DX
	JNZ  b4dim
	SCORE4STORE
	ADDQ R8, SI
	DECQ CX
	JNZ  b4blk
	VZEROUPPER
	RET

// func scoresBlocksAVX2(nb int, s *float32, k *byte, q *float32, width int, scale float32)
// One head's scores over nb ≥ 1 key blocks, a block at a time (two sums
// of 8 lanes).
TEXT ·scoresBlocksAVX2(SB), NOSPLIT, $0-44
	MOVQ nb+0(FP), CX
	MOVQ s+8(FP), DI
	MOVQ k+16(FP), SI
	MOVQ q+24(FP), R9
	MOVQ width+32(FP), R10
	VBROADCASTSS scale+40(FP), Y15
b1blk:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ R9, BX
	MOVQ R10, DX
b1dim:
	VBROADCASTSS (BX), Y8
	VCVTPH2PS (SI), Y4
	VCVTPH2PS 16(SI), Y5
	VFMADD231PS Y8, Y4, Y0
	VFMADD231PS Y8, Y5, Y1
	ADDQ $32, SI
	ADDQ $4, BX
	DECQ DX
	JNZ  b1dim
	VMULPS Y15, Y0, Y0
	VMULPS Y15, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, DI
	DECQ CX
	JNZ  b1blk
	VZEROUPPER
	RET

// func scoresBlocks4AVX2(nb int, s *float32, sn int, k *byte, q *float32, width int, scale float32)
// scoresBlocks4AVX512 in 8-lane halves, a block at a time (eight sums in
// flight).
TEXT ·scoresBlocks4AVX2(SB), NOSPLIT, $0-52
	BLK4ARGS
	VBROADCASTSS scale+48(FP), Y15
b4ablk:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ SI, AX
	MOVQ R9, BX
	MOVQ R13, R14
	MOVQ R10, DX
b4adim:
	VCVTPH2PS (AX), Y8
	VCVTPH2PS 16(AX), Y9
	VBROADCASTSS (BX), Y10
	VBROADCASTSS (BX)(R12*1), Y11
	VBROADCASTSS (R14), Y12
	VBROADCASTSS (R14)(R12*1), Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y11, Y9, Y3
	VFMADD231PS Y12, Y8, Y4
	VFMADD231PS Y12, Y9, Y5
	VFMADD231PS Y13, Y8, Y6
	VFMADD231PS Y13, Y9, Y7
	ADDQ $32, AX
	ADDQ $4, BX
	ADDQ $4, R14
	DECQ DX
	JNZ  b4adim
	VMULPS Y15, Y0, Y0
	VMULPS Y15, Y1, Y1
	VMULPS Y15, Y2, Y2
	VMULPS Y15, Y3, Y3
	VMULPS Y15, Y4, Y4
	VMULPS Y15, Y5, Y5
	VMULPS Y15, Y6, Y6
	VMULPS Y15, Y7, Y7
	MOVQ DI, AX
	VMOVUPS Y0, (AX)
	VMOVUPS Y1, 32(AX)
	ADDQ R11, AX
	VMOVUPS Y2, (AX)
	VMOVUPS Y3, 32(AX)
	ADDQ R11, AX
	VMOVUPS Y4, (AX)
	VMOVUPS Y5, 32(AX)
	ADDQ R11, AX
	VMOVUPS Y6, (AX)
	VMOVUPS Y7, 32(AX)
	ADDQ $64, DI
	ADDQ R8, SI
	DECQ CX
	JNZ  b4ablk
	VZEROUPPER
	RET

// func mixQ8x4AVX512(n int, o *float32, v *byte, stride int, w *float32, wn, width int)
// MixQ8_0x4 for width a multiple of 64: mixF16x4AVX512's loop over Q8_0
// value rows. Per row and 64 columns (two blocks, 68 bytes) the levels are
// widened and converted once, multiplied by their block's d, and feed
// sixteen multiply-adds, four per head: w·(d·q), the generic order.
TEXT ·mixQ8x4AVX512(SB), NOSPLIT, $0-56
	MIX4ARGS
q8blk:
	MIX4ZERO
	MOVQ n+0(FP), CX
	MOVQ SI, AX
	MOVQ R9, BX
	MOVQ R13, R14
q8row:
	VPBROADCASTW (AX), Y20
	VPBROADCASTW 34(AX), Y21
	VCVTPH2PS Y20, Z20
	VCVTPH2PS Y21, Z21
	VPMOVSXBD 2(AX), Z16
	VPMOVSXBD 18(AX), Z17
	VPMOVSXBD 36(AX), Z18
	VPMOVSXBD 52(AX), Z19
	VCVTDQ2PS Z16, Z16
	VCVTDQ2PS Z17, Z17
	VCVTDQ2PS Z18, Z18
	VCVTDQ2PS Z19, Z19
	VMULPS Z20, Z16, Z16
	VMULPS Z20, Z17, Z17
	VMULPS Z21, Z18, Z18
	VMULPS Z21, Z19, Z19
	VBROADCASTSS (BX), Z22
	VBROADCASTSS (BX)(R11*1), Z23
	VBROADCASTSS (R14), Z24
	VBROADCASTSS (R14)(R11*1), Z25
	VFMADD231PS Z16, Z22, Z0
	VFMADD231PS Z17, Z22, Z1
	VFMADD231PS Z18, Z22, Z2
	VFMADD231PS Z19, Z22, Z3
	VFMADD231PS Z16, Z23, Z4
	VFMADD231PS Z17, Z23, Z5
	VFMADD231PS Z18, Z23, Z6
	VFMADD231PS Z19, Z23, Z7
	VFMADD231PS Z16, Z24, Z8
	VFMADD231PS Z17, Z24, Z9
	VFMADD231PS Z18, Z24, Z10
	VFMADD231PS Z19, Z24, Z11
	VFMADD231PS Z16, Z25, Z12
	VFMADD231PS Z17, Z25, Z13
	VFMADD231PS Z18, Z25, Z14
	VFMADD231PS Z19, Z25, Z15
	ADDQ $4, BX
	ADDQ $4, R14
	ADDQ R8, AX
	DECQ CX
	JNZ  q8row
	MIX4STORE
	ADDQ $256, DI
	ADDQ $68, SI
	DECQ R10
	JNZ  q8blk
	VZEROUPPER
	RET

// func scoresQ8x4AVX512(nb int, s *float32, sn int, k *byte, q *float32, width int, scale float32)
// ScoresQ8Blocks4: scoresBlocks4AVX512 over Q8_0 key blocks. Per group of
// 32 dimensions the 16 positions' scales are converted once; each pair of
// dimensions' levels is widened and converted and feeds eight
// multiply-adds (the even dimension's four heads, the odd one's four:
// eight sums in flight from one stream); the group's even + odd sums then
// add scale × sum to the positions' totals.
TEXT ·scoresQ8x4AVX512(SB), NOSPLIT, $0-52
	BLK4ARGS
	VBROADCASTSS scale+48(FP), Z15
	SHRQ $5, R10                     // groups of 32 dimensions
q8sblk:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ R9, BX
	MOVQ R13, R14
	MOVQ R10, DX
q8sgrp:
	VCVTPH2PS (SI), Z12
	ADDQ $32, SI
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	MOVQ $16, AX
q8sdim:
	VPMOVSXBD (SI), Z13
	VPMOVSXBD 16(SI), Z14
	VCVTDQ2PS Z13, Z13
	VCVTDQ2PS Z14, Z14
	VFMADD231PS.BCST (BX), Z13, Z4
	VFMADD231PS.BCST (BX)(R12*1), Z13, Z5
	VFMADD231PS.BCST (R14), Z13, Z6
	VFMADD231PS.BCST (R14)(R12*1), Z13, Z7
	VFMADD231PS.BCST 4(BX), Z14, Z8
	VFMADD231PS.BCST 4(BX)(R12*1), Z14, Z9
	VFMADD231PS.BCST 4(R14), Z14, Z10
	VFMADD231PS.BCST 4(R14)(R12*1), Z14, Z11
	ADDQ $32, SI
	ADDQ $8, BX
	ADDQ $8, R14
	DECQ AX
	JNZ  q8sdim
	VADDPS Z8, Z4, Z4
	VADDPS Z9, Z5, Z5
	VADDPS Z10, Z6, Z6
	VADDPS Z11, Z7, Z7
	VFMADD231PS Z12, Z4, Z0
	VFMADD231PS Z12, Z5, Z1
	VFMADD231PS Z12, Z6, Z2
	VFMADD231PS Z12, Z7, Z3
	DECQ DX
	JNZ  q8sgrp
	SCORE4STORE
	DECQ CX
	JNZ  q8sblk
	VZEROUPPER
	RET

// func scoresQ8x4AVX2(nb int, s *float32, sn int, k *byte, q *float32, width int, scale float32)
// ScoresQ8Blocks4 in 8-lane halves: each block's 16 positions as two runs
// of 8 over its groups (the second from L1), with scoresQ8x4AVX512's sums
// (even and odd dimensions apart, then scale × sum into the totals), so
// the same bits.
TEXT ·scoresQ8x4AVX2(SB), NOSPLIT, $0-52
	BLK4ARGS
	SHRQ $5, R10                     // groups of 32 dimensions
	XORQ R15, R15                    // the half: 0 or 8 (bytes and lanes)
q2blk:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ R9, BX
	MOVQ R13, R14
	MOVQ R10, DX
	LEAQ (SI)(R15*1), R8             // this half's bytes in the block
q2grp:
	VCVTPH2PS (R8)(R15*1), Y12       // scales at 2·lane: the half's 8 at +2·R15
	ADDQ $32, R8
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ $16, AX
q2dim:
	VPMOVSXBD (R8), Y13
	VPMOVSXBD 16(R8), Y14
	VCVTDQ2PS Y13, Y13
	VCVTDQ2PS Y14, Y14
	VBROADCASTSS (BX), Y15
	VFMADD231PS Y15, Y13, Y4
	VBROADCASTSS (BX)(R12*1), Y15
	VFMADD231PS Y15, Y13, Y5
	VBROADCASTSS (R14), Y15
	VFMADD231PS Y15, Y13, Y6
	VBROADCASTSS (R14)(R12*1), Y15
	VFMADD231PS Y15, Y13, Y7
	VBROADCASTSS 4(BX), Y15
	VFMADD231PS Y15, Y14, Y8
	VBROADCASTSS 4(BX)(R12*1), Y15
	VFMADD231PS Y15, Y14, Y9
	VBROADCASTSS 4(R14), Y15
	VFMADD231PS Y15, Y14, Y10
	VBROADCASTSS 4(R14)(R12*1), Y15
	VFMADD231PS Y15, Y14, Y11
	ADDQ $32, R8
	ADDQ $8, BX
	ADDQ $8, R14
	DECQ AX
	JNZ  q2dim
	VADDPS Y8, Y4, Y4
	VADDPS Y9, Y5, Y5
	VADDPS Y10, Y6, Y6
	VADDPS Y11, Y7, Y7
	VFMADD231PS Y12, Y4, Y0
	VFMADD231PS Y12, Y5, Y1
	VFMADD231PS Y12, Y6, Y2
	VFMADD231PS Y12, Y7, Y3
	DECQ DX
	JNZ  q2grp
	VBROADCASTSS scale+48(FP), Y15
	VMULPS Y15, Y0, Y0
	VMULPS Y15, Y1, Y1
	VMULPS Y15, Y2, Y2
	VMULPS Y15, Y3, Y3
	LEAQ (DI)(R15*4), AX
	VMOVUPS Y0, (AX)
	ADDQ R11, AX
	VMOVUPS Y1, (AX)
	ADDQ R11, AX
	VMOVUPS Y2, (AX)
	ADDQ R11, AX
	VMOVUPS Y3, (AX)
	XORQ $8, R15
	JNZ  q2blk                       // the second half of the same block
	MOVQ R8, SI                      // past the block: R8 ran from SI+8 to its end+8
	SUBQ $8, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  q2blk
	VZEROUPPER
	RET

// func mixQ8x4AVX2(n int, o *float32, v *byte, stride int, w *float32, wn, width int)
// MixQ8_0x4 in chunks of 16 columns (half a Q8_0 block), width a multiple
// of 32: per row the chunk's levels are widened, converted and multiplied
// by the block's d once and feed eight multiply-adds, two per head:
// w·(d·q), the generic order. Each chunk reads the rows again (from cache
// after the first).
TEXT ·mixQ8x4AVX2(SB), NOSPLIT, $0-56
	MOVQ o+8(FP), DI
	MOVQ v+16(FP), SI
	MOVQ stride+24(FP), R8
	MOVQ w+32(FP), R9
	MOVQ wn+40(FP), R11
	SHLQ $2, R11                     // bytes between heads' weights
	MOVQ width+48(FP), R10
	MOVQ R10, R12
	SHLQ $2, R12                     // bytes between heads' outputs
	SHRQ $4, R10                     // chunks of 16 columns
	LEAQ (R9)(R11*2), R13            // weights of head 2
	XORQ R15, R15                    // the chunk
m2chunk:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ R15, AX
	SHRQ $1, AX
	IMULQ $34, AX
	ADDQ SI, AX                      // row 0's block of this chunk
	MOVQ R15, DX
	ANDQ $1, DX
	SHLQ $4, DX
	ADDQ $2, DX                      // the chunk's levels in the block
	MOVQ R9, BX
	MOVQ R13, R14
	MOVQ n+0(FP), CX
m2row:
	VPBROADCASTW (AX), X12
	VCVTPH2PS X12, Y12
	VPMOVSXBD (AX)(DX*1), Y8
	VPMOVSXBD 8(AX)(DX*1), Y9
	VCVTDQ2PS Y8, Y8
	VCVTDQ2PS Y9, Y9
	VMULPS Y12, Y8, Y8
	VMULPS Y12, Y9, Y9
	VBROADCASTSS (BX), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VBROADCASTSS (BX)(R11*1), Y10
	VFMADD231PS Y8, Y10, Y2
	VFMADD231PS Y9, Y10, Y3
	VBROADCASTSS (R14), Y10
	VFMADD231PS Y8, Y10, Y4
	VFMADD231PS Y9, Y10, Y5
	VBROADCASTSS (R14)(R11*1), Y10
	VFMADD231PS Y8, Y10, Y6
	VFMADD231PS Y9, Y10, Y7
	ADDQ $4, BX
	ADDQ $4, R14
	ADDQ R8, AX
	DECQ CX
	JNZ  m2row
	MOVQ R15, AX
	SHLQ $6, AX
	ADDQ DI, AX
	VMOVUPS Y0, (AX)
	VMOVUPS Y1, 32(AX)
	ADDQ R12, AX
	VMOVUPS Y2, (AX)
	VMOVUPS Y3, 32(AX)
	ADDQ R12, AX
	VMOVUPS Y4, (AX)
	VMOVUPS Y5, 32(AX)
	ADDQ R12, AX
	VMOVUPS Y6, (AX)
	VMOVUPS Y7, 32(AX)
	INCQ R15
	CMPQ R15, R10
	JLT  m2chunk
	VZEROUPPER
	RET
