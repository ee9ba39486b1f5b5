//go:build !linux

package mmap

// dropPages does nothing outside Linux: where the file was read into
// memory the bytes are the only copy, and elsewhere the pages simply stay
// resident until the mapping is released.
func dropPages(b []byte) error { return nil }
