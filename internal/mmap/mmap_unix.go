//go:build unix

package mmap

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of fh read-only and shared, so pages are loaded on
// first touch and shared with the page cache.
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	b, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
