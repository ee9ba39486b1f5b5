package compute

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a fixed set of worker goroutines that run parallel loops. No
// goroutine is started per operation. A Pool may be used from several
// goroutines at once and For may be nested (the calling goroutine always
// takes part, so a loop finishes even when every worker is busy).
type Pool struct {
	threads int
	jobs    chan *job
	wg      sync.WaitGroup
	once    sync.Once
}

// Task is a loop body with its state. ForTask takes one so that hot paths
// can reuse a pooled task instead of allocating a closure per loop.
type Task interface{ Run(lo, hi int) }

// funcTask adapts a plain function (a func value is pointer-shaped, so the
// conversion to Task does not allocate).
type funcTask func(lo, hi int)

func (f funcTask) Run(lo, hi int) { f(lo, hi) }

// job is one loop over [0,n), handed out in chunks from an atomic
// cursor: each chunk takes 1/div of what is left, but at least least
// indices (guided self-scheduling, Polychronopoulos & Kuck 1987), so the
// first chunks are large (few hand-offs) and the last ones small (the
// threads finish together). A chunk's end depends only on its start, so
// the chunks are the same sequence whichever thread takes each one.
type job struct {
	fn     Task
	n      int
	least  int
	div    int
	next   atomic.Int64
	mu     sync.Mutex
	closed bool
	active atomic.Int32  // workers inside run (joined under mu while open)
	asleep bool          // the caller waits on wake (under mu)
	wake   chan struct{} // the last worker out wakes a caller that slept
}

var jobPool = sync.Pool{New: func() any { return &job{wake: make(chan struct{}, 1)} }}

// NewPool starts a pool of threads workers (the caller of For counts as one
// of them). threads <= 0 means the number of physical cores (see
// PhysicalCores).
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = PhysicalCores()
	}
	p := &Pool{threads: threads, jobs: make(chan *job, threads)}
	for range threads - 1 {
		p.wg.Add(1)
		go p.worker()
	}
	return p
}

// Threads returns the number of threads the pool runs loops on.
func (p *Pool) Threads() int {
	if p == nil {
		return 1
	}
	return p.threads
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		close(p.jobs)
		p.wg.Wait()
	})
}

func (p *Pool) worker() {
	defer p.wg.Done()
	for {
		j, ok := p.next()
		if !ok {
			return
		}
		j.mu.Lock()
		if j.closed {
			j.mu.Unlock()
			continue
		}
		j.active.Add(1)
		j.mu.Unlock()
		j.run()
		j.mu.Lock()
		if j.active.Add(-1) == 0 && j.asleep {
			j.asleep = false
			j.wake <- struct{}{}
		}
		j.mu.Unlock()
	}
}

// chunksPerThread bounds the chunks of a loop per thread: the smallest
// chunk is 1/chunksPerThread of a thread's share. (With fixed chunks of
// 1/4 of a share, a thread that drew the last one finished ~30-70 µs after
// the other in the 1B model's larger loops; guided chunks make decode
// steps ~2 % faster at 2 threads, interleaved A/B.)
const chunksPerThread = 16

// spinFor is how long an idle worker polls for the next loop before it
// blocks (and a caller for its workers before it sleeps): a model's ops
// come microseconds apart, and waking a parked worker cost ~100 µs here
// (the caller readies it on its own P, which is busy with its chunk,
// until another P steals it). At 50 µs a worker parked in the tail of
// every long loop — ~7 times per 1B decode step, 0.7-0.9 ms of lost
// second thread per step; at 1 ms it parks once in ~20 steps, and decode
// steps are 3-7 % faster (interleaved A/B, 1B Q4_0 and Q8_0, 2 threads).
const spinFor = time.Millisecond

// next returns the next job, polling briefly before blocking; ok is false
// once the pool is closed.
func (p *Pool) next() (j *job, ok bool) {
	deadline := time.Now().Add(spinFor)
	for i := 0; ; i++ {
		select {
		case j, ok = <-p.jobs:
			return j, ok
		default:
		}
		if i%64 == 63 && time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	j, ok = <-p.jobs
	return j, ok
}

func (j *job) run() {
	for {
		lo := int(j.next.Load())
		if lo >= j.n {
			return
		}
		hi := min(j.n, lo+max(j.least, (j.n-lo)/j.div))
		if j.n-hi < j.least { // no chunk smaller than least
			hi = j.n
		}
		if j.next.CompareAndSwap(int64(lo), int64(hi)) {
			j.fn.Run(lo, hi)
		}
	}
}

// await returns once every worker that joined j has left it. It polls
// first: blocking parks this goroutine, and the worker that wakes it then
// runs it on its own thread while the other thread idles, so the next loop
// starts on one thread. After spinFor it sleeps until the last worker
// leaves.
func (j *job) await() {
	if j.active.Load() == 0 {
		return
	}
	deadline := time.Now().Add(spinFor)
	for i := 0; j.active.Load() != 0; i++ {
		if i%64 == 63 && time.Now().After(deadline) {
			j.mu.Lock()
			if j.active.Load() == 0 {
				j.mu.Unlock()
				return
			}
			j.asleep = true
			j.mu.Unlock()
			<-j.wake
			return
		}
		runtime.Gosched()
	}
}

// For splits [0,n) into contiguous chunks (large first, smaller towards
// the end), runs fn on each chunk on the workers and the calling
// goroutine, and returns when all are done. fn must compute each index
// independently of the chunk bounds, so the result does not depend on the
// thread count. A nil Pool runs fn(0, n) on the caller.
func (p *Pool) For(n int, fn func(lo, hi int)) {
	p.ForGrain(n, 1, fn)
}

// ForGrain is For with chunks of at least grain indices (unless n < grain):
// use it when an index is too little work to be worth a hand-off.
func (p *Pool) ForGrain(n, grain int, fn func(lo, hi int)) {
	p.ForTask(n, grain, funcTask(fn))
}

// ForTask is ForGrain with the loop body as a Task.
func (p *Pool) ForTask(n, grain int, fn Task) { p.forTask(n, grain, 2, fn) }

// ForStream is ForTask for a loop that streams memory once (a matrix ×
// vector): its chunks take 1/threads of what is left, not 1/(2·threads),
// so each thread reads fewer, longer runs (every chunk's start is a new
// stream for the hardware prefetcher). Decode steps at 2 threads are 3–5 %
// faster for 1B Q4_0 and Q8_0 and 1.4 % for F16 (interleaved A/B), where
// prompt processing, compute-bound and more sensitive to how evenly the
// threads finish, is 2–5 % slower with these chunks and keeps ForTask's.
func (p *Pool) ForStream(n, grain int, fn Task) { p.forTask(n, grain, 1, fn) }

// forTask runs fn over [0,n) with chunks of 1/(div·threads) of what is
// left.
func (p *Pool) forTask(n, grain, div int, fn Task) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	if p == nil || p.threads == 1 || n < 2*grain {
		fn.Run(0, n)
		return
	}
	j := jobPool.Get().(*job)
	// A worker may still hold j from an earlier loop's queue entry: it
	// reads the fields only after taking j.mu and finding it open.
	j.mu.Lock()
	j.fn, j.n, j.closed = fn, n, false
	j.least = max(grain, n/(chunksPerThread*p.threads))
	j.div = div * p.threads
	j.next.Store(0)
	j.mu.Unlock()
	for range min(p.threads-1, n/j.least-1) {
		select {
		case p.jobs <- j:
		default: // workers are saturated; the caller does the rest
		}
	}
	j.run()
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	j.await()
	j.mu.Lock()
	j.fn = nil // do not keep the task's memory alive
	j.mu.Unlock()
	jobPool.Put(j)
}

// PhysicalCores returns the number of physical CPU cores available, or
// runtime.NumCPU() when it cannot tell (see cores_linux.go).
func PhysicalCores() int {
	n := physicalCores()
	if n <= 0 || n > runtime.NumCPU() {
		n = runtime.NumCPU()
	}
	return max(n, 1)
}
