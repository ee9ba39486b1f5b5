package compute

import (
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/glassbox-ai/glassbox/internal/mmap"
)

// LazyFloats returns one zeroed float32 slice per size, outside the Go heap
// (internal/mmap.Lazy), each on pages of its own: a page is committed only
// when first written, so a buffer sized for a whole batch or context costs
// only the rows a job touches, and it does not raise the collector's goal.
// The memory is released by free (at once; it may be called again) or else
// when owner becomes unreachable: the slices must not be used after either.
// Where mapping fails they are heap memory.
func LazyFloats[T any](owner *T, sizes ...int) (bufs [][]float32, free func()) {
	b, free := lazyBytes(owner, pageBytes(sizes, 4))
	out := make([][]float32, len(sizes))
	for i, n := range sizes {
		if n == 0 {
			continue
		}
		out[i] = unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
		b = b[roundPage(4*n):]
	}
	return out, free
}

// lazyBytes is n bytes of mmap.Lazy memory released by free or else when
// owner becomes unreachable, or heap memory where mapping fails.
func lazyBytes[T any](owner *T, n int) (b []byte, free func()) {
	b, release, err := mmap.Lazy(n)
	if err != nil || n == 0 {
		return make([]byte, n), func() {}
	}
	c := runtime.AddCleanup(owner, func(release func() error) { _ = release() }, release)
	var once sync.Once
	return b, func() {
		once.Do(func() {
			c.Stop()
			_ = release()
		})
	}
}

// pageBytes is the bytes of the sizes (in elements of esize bytes), each
// rounded up to whole pages.
func pageBytes(sizes []int, esize int) int {
	n := 0
	for _, s := range sizes {
		n += roundPage(esize * s)
	}
	return n
}

var pageSize = os.Getpagesize()

func roundPage(n int) int { return (n + pageSize - 1) / pageSize * pageSize }
