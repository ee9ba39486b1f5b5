package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"
)

// queue admits generations: at most parallel run at once, at most maxWait
// wait for a slot in FIFO order, and the rest are refused at once. A waiter
// is told its position whenever it changes. One mutex guards everything.
type queue struct {
	mu       sync.Mutex
	parallel int
	maxWait  int
	running  int
	waiters  []*waiter     // FIFO; waiters[0] is next
	hold     time.Duration // moving average of how long a slot is held
	closed   bool
}

type waiter struct {
	granted chan struct{} // closed when the slot is handed over
	pos     chan int      // latest 1-based position, size 1, newest wins
}

func newQueue(parallel, maxWait int) *queue {
	if parallel < 1 {
		parallel = 1
	}
	if maxWait < 0 {
		maxWait = 0
	}
	return &queue{parallel: parallel, maxWait: maxWait}
}

// ticket is an admitted request: it holds a slot already or waits for one.
type ticket struct {
	q    *queue
	wt   *waiter // nil when the slot was free at admission
	done bool
}

// admit takes a slot if one is free, queues the request otherwise, and
// refuses it with a 503 *Error when the queue is full. It never blocks, so
// a native job is refused before it is created.
func (q *queue) admit() (*ticket, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, ErrShuttingDown
	}
	if q.running < q.parallel && len(q.waiters) == 0 {
		q.running++
		return &ticket{q: q}, nil
	}
	if len(q.waiters) >= q.maxWait {
		n := len(q.waiters)
		retry := q.retryAfterLocked(n)
		return nil, &Error{Status: http.StatusServiceUnavailable, Stage: "queued", Code: "queue_full",
			Message: fmt.Sprintf("queue is full: %d waiting (limit %d), %d of %d slots busy",
				n, q.maxWait, q.running, q.parallel),
			Hint:       fmt.Sprintf("retry after %d s, or start the server with a larger --max-queue", retry),
			RetryAfter: retry}
	}
	wt := &waiter{granted: make(chan struct{}), pos: make(chan int, 1)}
	q.waiters = append(q.waiters, wt)
	wt.pos <- len(q.waiters)
	return &ticket{q: q, wt: wt}, nil
}

// wait blocks until the ticket holds a slot. onPos, if not nil, is called
// on the caller's goroutine with the 1-based queue position and the queue
// length whenever the position changes. The returned release must be
// called when the work ends. If ctx ends first, the ticket leaves the
// queue and wait returns ctx's error.
func (t *ticket) wait(ctx context.Context, onPos func(pos, waiting int)) (release func(), err error) {
	if t.done {
		return nil, errors.New("queued: ticket used twice")
	}
	t.done = true
	q := t.q
	if t.wt == nil {
		return q.releaser(), nil
	}
	for {
		select {
		case <-t.wt.granted:
			return q.releaser(), nil
		case p := <-t.wt.pos:
			if onPos != nil {
				q.mu.Lock()
				waiting := len(q.waiters)
				q.mu.Unlock()
				onPos(p, waiting)
			}
		case <-ctx.Done():
			t.leave()
			return nil, ctx.Err()
		}
	}
}

// drop gives an unused ticket back (the job could not be started).
func (t *ticket) drop() {
	if t.done {
		return
	}
	t.done = true
	if t.wt == nil {
		t.q.releaser()()
		return
	}
	t.leave()
}

// leave takes a waiting ticket out of the queue, passing the slot on if it
// was granted meanwhile.
func (t *ticket) leave() {
	q := t.q
	q.mu.Lock()
	select {
	case <-t.wt.granted:
		q.mu.Unlock()
		q.releaser()()
		return
	default:
	}
	q.removeLocked(t.wt)
	q.mu.Unlock()
}

// releaser returns the release func for a slot taken now.
func (q *queue) releaser() func() {
	start := time.Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			d := time.Since(start)
			if q.hold == 0 {
				q.hold = d
			} else {
				q.hold = (q.hold*7 + d) / 8
			}
			if len(q.waiters) > 0 {
				wt := q.waiters[0]
				q.waiters = q.waiters[1:]
				close(wt.granted) // the slot passes on; running stays
				q.notifyLocked()
				return
			}
			q.running--
		})
	}
}

// removeLocked drops a waiter that gave up and tells those behind it.
func (q *queue) removeLocked(wt *waiter) {
	for i, x := range q.waiters {
		if x == wt {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			q.notifyLocked()
			return
		}
	}
}

// notifyLocked sends every waiter its current position, replacing any
// position it has not read yet.
func (q *queue) notifyLocked() {
	for i, wt := range q.waiters {
		select {
		case <-wt.pos:
		default:
		}
		wt.pos <- i + 1
	}
}

// retryAfterLocked estimates, in whole seconds, when a slot frees up for a
// request that would be behind n waiters.
func (q *queue) retryAfterLocked(n int) int {
	hold := q.hold
	if hold == 0 {
		hold = time.Second
	}
	s := hold.Seconds() * float64(n+1) / float64(q.parallel)
	return max(1, int(math.Ceil(s)))
}

// stats reports running and waiting counts.
func (q *queue) stats() (running, waiting, parallel, maxWait int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running, len(q.waiters), q.parallel, q.maxWait
}

// close refuses all future acquires; waiters already queued keep waiting
// until their context ends.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}
