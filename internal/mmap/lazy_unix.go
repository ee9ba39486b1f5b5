//go:build unix

package mmap

import "syscall"

// lazy maps size bytes of private anonymous memory with no advice: the
// kernel commits each page when it is first written, in the system's
// default page size.
func lazy(size int) ([]byte, func() error, error) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
