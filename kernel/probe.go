package kernel

import "encoding/binary"

// Kernels for the roofline probe (package compute/roofline): a streaming
// read and compute loops that run at the CPU's peak rate.

// StreamRead loads every byte of b once and returns an XOR fold of it
// (so the reads cannot be optimised away).
func StreamRead(b []byte) uint64 { return streamRead(b) }

// PeakInt8 returns a loop of independent int8 multiply-accumulates at the
// fastest rate this CPU's kernels use (VNNI if present), the operations
// (2 per multiply-add) one iteration does, and the instruction's name.
func PeakInt8() (run func(iters int), opsPerIter int64, name string) { return peakInt8Kernel() }

// PeakF32 is PeakInt8 for float32 fused multiply-adds.
func PeakF32() (run func(iters int), opsPerIter int64, name string) { return peakF32Kernel() }

// PeakBF16 is PeakInt8 for bfloat16 pair dot products accumulated in
// float32 (AVX-512 BF16's VDPBF16PS: 2 multiply-adds per float32 lane); run
// is nil on a CPU (or a build) without them.
func PeakBF16() (run func(iters int), opsPerIter int64, name string) { return peakBF16Kernel() }

func streamReadGeneric(b []byte) uint64 {
	var s0, s1, s2, s3 uint64
	for len(b) >= 32 {
		s0 ^= binary.LittleEndian.Uint64(b)
		s1 ^= binary.LittleEndian.Uint64(b[8:])
		s2 ^= binary.LittleEndian.Uint64(b[16:])
		s3 ^= binary.LittleEndian.Uint64(b[24:])
		b = b[32:]
	}
	for _, c := range b {
		s0 ^= uint64(c)
	}
	return s0 ^ s1 ^ s2 ^ s3
}

const (
	peakInt8GenericOps = 8 * 2
	peakF32GenericOps  = 8 * 2
)

var probeSink int32
var probeSinkF float32

func peakInt8Generic(iters int) {
	var a [8]int32
	for i := range iters {
		for j := range a {
			a[j] += int32(int8(i+j)) * int32(uint8(j+1))
		}
	}
	probeSink = a[0] ^ a[7]
}

func peakF32Generic(iters int) {
	var a [8]float32
	for range iters {
		for j := range a {
			a[j] = a[j]*0.999 + 1
		}
	}
	probeSinkF = a[0] + a[7]
}
