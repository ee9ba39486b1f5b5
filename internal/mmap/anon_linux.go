//go:build linux

package mmap

import (
	"syscall"
	"unsafe"
)

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

// hugePage is the size of an x86-64 / arm64 transparent huge page.
const hugePage = 2 << 20

// reserve maps size bytes of private anonymous memory starting on a
// huge-page boundary (so every whole 2 MiB of it can be one huge page),
// with huge pages requested. Pages are only committed when first written.
func reserve(size int) ([]byte, func() error, error) {
	b, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	off := (hugePage - int(uintptr(unsafe.Pointer(&b[0]))%hugePage)) % hugePage
	_ = syscall.Madvise(b, madvHugepage)
	return b[off : off+size : off+size], func() error { return syscall.Munmap(b) }, nil
}
