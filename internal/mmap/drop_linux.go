//go:build linux

package mmap

import (
	"os"
	"syscall"
	"unsafe"
)

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
