//go:build !amd64 || purego

package kernel

func streamRead(b []byte) uint64 { return streamReadGeneric(b) }

func peakInt8Kernel() (func(iters int), int64, string) {
	return peakInt8Generic, peakInt8GenericOps, "go"
}

func peakF32Kernel() (func(iters int), int64, string) {
	return peakF32Generic, peakF32GenericOps, "go"
}

func peakBF16Kernel() (func(iters int), int64, string) { return nil, 0, "" }
