// Package mmap maps whole files read-only, so that model files are never
// copied on open and only the pages a reader touches become resident.
// Where mmap is unavailable (not unix) it reads the file instead.
//
// Imports: standard library only.
package mmap

import (
	"errors"
	"fmt"
	"os"
)

// ErrIsDir reports a directory where a file was expected.
var ErrIsDir = errors.New("is a directory, not a file")

// Map maps the file at path and returns its bytes and the function that
// releases them. The bytes must not be used after release.
func Map(path string) ([]byte, func() error, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	return MapFile(fh)
}

// MapFile maps the open file fh as Map does; fh may be closed afterwards or
// kept for reads (pread) that bypass the mapping.
func MapFile(fh *os.File) ([]byte, func() error, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		return nil, nil, ErrIsDir
	}
	data, unmap, err := mapFile(fh, st.Size())
	if err != nil {
		return nil, nil, fmt.Errorf("map file: %w", err)
	}
	return data, unmap, nil
}

// Drop releases the resident pages of b, a slice of bytes returned by Map,
// once its owner keeps a copy elsewhere: the pages wholly inside b leave
// this process's resident set (a later read faults them back in from the
// file, so b stays valid). Where Map read the file into memory it does
// nothing.
func Drop(b []byte) error { return dropPages(b) }

// Anon returns size bytes of zeroed memory outside the Go heap (on Linux an
// anonymous mapping with transparent huge pages requested: large weight
// copies stream with fewer TLB misses and fault in 512× fewer pages) and
// the function that releases it. The bytes must not be used after release.
func Anon(size int) ([]byte, func() error, error) {
	if size <= 0 {
		return nil, func() error { return nil }, nil
	}
	b, release, err := anon(size)
	if err != nil {
		return nil, nil, fmt.Errorf("map %d bytes of memory: %w", size, err)
	}
	return b, release, nil
}

// Lazy returns size bytes of zeroed memory outside the Go heap whose pages
// are committed only when first written, in the system's default page size
// (no huge-page advice), and the function that releases it. It is for
// buffers sized to a bound of which a job touches a part: a session's
// activation rows and KV cache. Outside the heap they do not raise the
// collector's goal, so garbage does not pile up in proportion to them; no
// reuse of freed heap memory makes untouched pages resident; and release
// gives the memory back at once. Where anonymous mappings are missing it is
// heap memory. The bytes must not be used after release.
func Lazy(size int) ([]byte, func() error, error) {
	if size <= 0 {
		return nil, func() error { return nil }, nil
	}
	b, release, err := lazy(size)
	if err != nil {
		return nil, nil, fmt.Errorf("map %d bytes of memory: %w", size, err)
	}
	return b, release, nil
}

// errNoReserve is Reserve's error where the OS gives no lazily committed
// anonymous memory.
var errNoReserve = errors.New("lazily committed anonymous memory is not available on this OS")

// Reserve returns size bytes of zeroed memory outside the Go heap whose
// pages are committed only when first written, so a caller can reserve an
// upper bound and use less of it. On Linux the memory starts on a 2 MiB
// boundary and asks for transparent huge pages; on other systems Reserve
// fails (the caller allocates each piece on its own instead). The bytes
// must not be used after release.
func Reserve(size int) ([]byte, func() error, error) {
	if size <= 0 {
		return nil, nil, fmt.Errorf("reserve %d bytes of memory: size must be positive", size)
	}
	b, release, err := reserve(size)
	if err != nil {
		return nil, nil, fmt.Errorf("reserve %d bytes of memory: %w", size, err)
	}
	return b, release, nil
}
