//go:build !linux

package mmap

// anon allocates from the Go heap where anonymous mappings with huge-page
// advice are not available; releasing it is left to the collector.
func anon(size int) ([]byte, func() error, error) {
	return make([]byte, size), func() error { return nil }, nil
}
