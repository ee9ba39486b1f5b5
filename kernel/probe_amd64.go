//go:build amd64 && !purego

package kernel

//go:noescape
func streamReadAVX2(p *byte, n int) uint64

func peakVNNI(iters int)
func peakMaddubs(iters int)
func peakFMA512(iters int)
func peakFMA256(iters int)
func peakDPBF16(iters int)

func streamRead(b []byte) uint64 {
	if !hasAVX2 || noAsm() {
		return streamReadGeneric(b)
	}
	m := len(b) &^ 255
	var s uint64
	if m > 0 {
		s = streamReadAVX2(&b[0], m)
	}
	return s ^ streamReadGeneric(b[m:])
}

func peakInt8Kernel() (run func(iters int), opsPerIter int64, name string) {
	switch {
	case x86.avx512vnni && x86.avx512f:
		return peakVNNI, 10 * 64 * 2, "avx512-vnni vpdpbusd zmm"
	case hasAVX2:
		return peakMaddubs, 10 * 32 * 2, "avx2 vpmaddubsw ymm"
	}
	return peakInt8Generic, peakInt8GenericOps, "go"
}

func peakF32Kernel() (run func(iters int), opsPerIter int64, name string) {
	switch {
	case x86.avx512f:
		return peakFMA512, 10 * 16 * 2, "avx512 vfmadd231ps zmm"
	case hasAVX2:
		return peakFMA256, 10 * 8 * 2, "fma vfmadd231ps ymm"
	}
	return peakF32Generic, peakF32GenericOps, "go"
}

func peakBF16Kernel() (run func(iters int), opsPerIter int64, name string) {
	if x86.avx512bf16 {
		return peakDPBF16, 10 * 32 * 2, "avx512-bf16 vdpbf16ps zmm"
	}
	return nil, 0, ""
}
