//go:build !unix

package mmap

// lazy allocates from the Go heap where anonymous mappings are not
// available; releasing it is left to the collector.
func lazy(size int) ([]byte, func() error, error) {
	return make([]byte, size), func() error { return nil }, nil
}
