//go:build !linux

package mmap

// anon allocates from the Go heap where anonymous mappings with huge-page
// advice are not available; releasing it is left to the collector.
func anon(size int) ([]byte, func() error, error) {
	return make([]byte, size), func() error { return nil }, nil
}

// reserve is unavailable: a heap allocation would commit (and count
// towards the collector's goal) all of a reservation, used or not.
func reserve(int) ([]byte, func() error, error) { return nil, nil, errNoReserve }
