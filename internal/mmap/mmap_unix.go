//go:build unix

package mmap

import (
	"os"
	"syscall"
	"unsafe"
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

// dropPages tells the kernel this process no longer needs the whole pages
// inside b (a slice of a mapping from Map): they leave its resident set
// and are read back from the file if touched again.
func dropPages(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	ps := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0]))
	lo := (start + ps - 1) &^ (ps - 1)
	hi := (start + uintptr(len(b))) &^ (ps - 1)
	if hi <= lo {
		return nil
	}
	return syscall.Madvise(b[lo-start:hi-start], syscall.MADV_DONTNEED)
}
