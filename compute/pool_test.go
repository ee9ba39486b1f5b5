package compute

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolForCoversOnce: ForTask's and ForStream's chunks cover every
// index once, none smaller than the grain.
func TestPoolForCoversOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		p := NewPool(threads)
		for _, n := range []int{0, 1, 2, 7, 64, 1001} {
			for _, grain := range []int{1, 5, 100} {
				for _, stream := range []bool{false, true} {
					hits := make([]int32, n)
					fn := funcTask(func(lo, hi int) {
						if hi-lo < grain && n >= grain {
							t.Errorf("threads %d n %d grain %d: chunk [%d,%d) smaller than grain", threads, n, grain, lo, hi)
						}
						for i := lo; i < hi; i++ {
							atomic.AddInt32(&hits[i], 1)
						}
					})
					if stream {
						p.ForStream(n, grain, fn)
					} else {
						p.ForTask(n, grain, fn)
					}
					for i, h := range hits {
						if h != 1 {
							t.Fatalf("threads %d n %d stream %v: index %d ran %d times", threads, n, stream, i, h)
						}
					}
				}
			}
		}
		p.Close()
	}
}

// Nested and concurrent loops must finish (the caller always works on its
// own loop) and still cover every index once.
func TestPoolNestedConcurrent(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	var wg sync.WaitGroup
	var total atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				p.For(8, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						p.For(10, func(lo, hi int) { total.Add(int64(hi - lo)) })
					}
				})
			}
		}()
	}
	wg.Wait()
	if got := total.Load(); got != 4*50*8*10 {
		t.Fatalf("covered %d indices, want %d", got, 4*50*8*10)
	}
}

func TestPoolDefaults(t *testing.T) {
	p := NewPool(0)
	defer p.Close()
	if p.Threads() != PhysicalCores() || p.Threads() < 1 {
		t.Fatalf("NewPool(0).Threads() = %d, PhysicalCores() = %d", p.Threads(), PhysicalCores())
	}
	var nilPool *Pool
	ran := 0
	nilPool.For(5, func(lo, hi int) { ran += hi - lo })
	if ran != 5 || nilPool.Threads() != 1 {
		t.Fatalf("nil pool ran %d indices", ran)
	}
	p.Close() // twice is fine
}

// TestPoolAwaitSleeps: a caller that outlasts its polling (a worker's
// chunk takes longer than spinFor) sleeps and is woken by the last worker
// out, and every chunk has run when For returns.
func TestPoolAwaitSleeps(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for range 20 {
		var done, started [2]atomic.Bool
		p.For(2, func(lo, hi int) {
			// Both chunks run at once (the caller and the worker), then
			// chunk 1 outlasts the poll of whoever finished chunk 0.
			started[lo].Store(true)
			for t0 := time.Now(); !started[1-lo].Load() && time.Since(t0) < 100*time.Millisecond; {
				runtime.Gosched()
			}
			if lo == 1 {
				time.Sleep(3 * spinFor)
			}
			for i := lo; i < hi; i++ {
				done[i].Store(true)
			}
		})
		if !done[0].Load() || !done[1].Load() {
			t.Fatal("For returned before every chunk ran")
		}
	}
}
