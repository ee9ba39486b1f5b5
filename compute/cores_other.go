//go:build !linux

package compute

func physicalCores() int { return 0 }
