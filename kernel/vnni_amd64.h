// Shared by the AVX-512 VNNI GEMM (gemm_amd64.s) and x16 (x16_amd64.s)
// kernels, which keep a unit's 16 rows of weight levels in Z16..Z23 (group
// g: lane r = u[r][4g..4g+3]), their scales in Z24 and the activation
// record at SI; Z25 and Z26 are scratch.

// ACT: activation row k (quants at qoff, scale at doff, correction at
// coff): s[r] = corr + Σ_g u[r][g]·q[g]; acc[r] += float(s[r])·d[r]·dx.
#define ACT(qoff, doff, coff, acc) \
	VPBROADCASTD coff(SI), Z25; \
	VPDPBUSD.BCST qoff+0(SI), Z16, Z25; \
	VPDPBUSD.BCST qoff+4(SI), Z17, Z25; \
	VPDPBUSD.BCST qoff+8(SI), Z18, Z25; \
	VPDPBUSD.BCST qoff+12(SI), Z19, Z25; \
	VPDPBUSD.BCST qoff+16(SI), Z20, Z25; \
	VPDPBUSD.BCST qoff+20(SI), Z21, Z25; \
	VPDPBUSD.BCST qoff+24(SI), Z22, Z25; \
	VPDPBUSD.BCST qoff+28(SI), Z23, Z25; \
	VCVTDQ2PS Z25, Z25; \
	VMULPS.BCST doff(SI), Z24, Z26; \
	VFMADD231PS Z26, Z25, acc
