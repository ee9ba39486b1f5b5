//go:build linux

package mmap

import "syscall"

// madvHugepage is MADV_HUGEPAGE (asm-generic/mman-common.h).
const madvHugepage = 14

// anon maps size bytes of private anonymous memory and asks for
// transparent huge pages (the advice is best effort: without it, or where
// the kernel declines, the memory is simply in 4 KiB pages).
func anon(size int) ([]byte, func() error, error) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	_ = syscall.Madvise(b, madvHugepage)
	return b, func() error { return syscall.Munmap(b) }, nil
}
