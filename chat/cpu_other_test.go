//go:build !linux

package chat

func threadCPU() int64 { return 0 }
