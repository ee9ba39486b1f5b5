//go:build amd64 && !purego

package kernel

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
func xgetbv0() (eax uint32)

// x86 holds the CPU features the kernels choose between, read once.
var x86 = detectX86()

type x86Features struct {
	avx2, fma, f16c             bool // with the OS saving YMM state
	avx512f, avx512bw, avx512vl bool // with the OS saving ZMM and opmask state
	avx512vnni                  bool
	avx512bf16                  bool // VDPBF16PS, VCVTNE2PS2BF16 (CPUID.(7,1).EAX[5])
}

func detectX86() x86Features {
	var f x86Features
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return f
	}
	_, _, ecx1, _ := cpuid(1, 0)
	if ecx1&(1<<27) == 0 { // OSXSAVE
		return f
	}
	xcr0 := xgetbv0()
	ymm := xcr0&6 == 6       // SSE and AVX state
	zmm := xcr0&0xe6 == 0xe6 // plus opmask, ZMM_Hi256, Hi16_ZMM
	maxSub7, ebx7, ecx7, _ := cpuid(7, 0)
	f.avx2 = ymm && ebx7&(1<<5) != 0
	f.fma = ymm && ecx1&(1<<12) != 0
	f.f16c = ymm && ecx1&(1<<29) != 0
	f.avx512f = zmm && ebx7&(1<<16) != 0
	f.avx512bw = zmm && ebx7&(1<<30) != 0
	f.avx512vl = zmm && ebx7&(1<<31) != 0
	f.avx512vnni = zmm && ecx7&(1<<11) != 0
	if maxSub7 >= 1 {
		eax71, _, _, _ := cpuid(7, 1)
		f.avx512bf16 = f.avx512f && eax71&(1<<5) != 0
	}
	return f
}
