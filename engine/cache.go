package engine

import (
	"sync"

	"github.com/glassbox-ai/glassbox/model"
)

// SessionCache keeps the sessions of finished generations with the token
// ids their KV caches hold, so that a later request whose prompt starts
// with the same tokens — the next turn of a chat, which repeats the
// conversation so far — evaluates only the tokens after them (prompt
// caching, as llama-server's cache_prompt and Ollama's kept slots do).
//
// The keys and values of position p depend only on the tokens at
// positions ≤ p, so a prompt continued from the cache gets the logits it
// would get evaluated whole: the same bits for quantized weights, whose
// kernels give a row the same bits in any batch; for float weights within
// rounding (their rows sum in another order in batches of four or more),
// as when a prompt is cut into other chunks. Positions past the reused
// prefix are written before anything reads them.
//
// A kept session holds its KV cache's memory (what a generation of its
// context length holds while it runs). The cache counts the sessions in
// use — kept, or taken and not yet put back — and keeps them to max: Take
// answers "make a new one" only while there is room, and Put beyond max
// closes the oldest kept. Methods may be called from any goroutine.
type SessionCache struct {
	mu     sync.Mutex
	max    int
	out    int // sessions taken (or to be made) and not yet put back
	closed bool
	kept   []keptSession // oldest first
}

// keptSession is a session and the ids at its cache's positions 0..len-1.
type keptSession struct {
	s   model.Session
	ids []int
}

// NewSessionCache returns a cache for up to n sessions (at least one).
func NewSessionCache(n int) *SessionCache {
	return &SessionCache{max: max(n, 1)}
}

// Take picks a session for prompt among the kept ones made with opts
// (filled, as Session.Options reports them) and returns it with how many
// leading tokens of prompt its cache already holds (at most len(prompt)−1:
// the last prompt token is evaluated for its logits). It takes the
// longest match among the sessions it would reuse at least half of
// (llama-server's slot similarity rule, so that another conversation does
// not wipe a cache it shares only a system prompt with); failing that, a
// new session while fewer than max are in use, else the oldest kept one.
// s is nil when the caller is to make a new session. Every Take is paired
// with one Put: of the session, or of nil when making one failed.
func (c *SessionCache) Take(opts model.SessionOptions, prompt []int) (s model.Session, reuse int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out++
	best, oldest := -1, -1
	for i, k := range c.kept {
		if k.s.Options() != opts {
			continue
		}
		if oldest < 0 {
			oldest = i
		}
		if n := commonPrefix(k.ids, prompt); 2*n >= len(k.ids) && (best < 0 || n >= reuse) {
			best, reuse = i, n
		}
	}
	if best < 0 {
		if oldest < 0 || len(c.kept)+c.out <= c.max {
			return nil, 0
		}
		best, reuse = oldest, commonPrefix(c.kept[oldest].ids, prompt)
	}
	s = c.kept[best].s
	c.kept = append(c.kept[:best], c.kept[best+1:]...)
	return s, min(reuse, max(len(prompt)-1, 0))
}

// Session is Take, making a new session of m with opts when Take gives
// none (a failure to make one ends the Take). Put the session back after
// use.
func (c *SessionCache) Session(m model.Model, opts model.SessionOptions, prompt []int) (s model.Session, reuse int, err error) {
	if s, reuse = c.Take(opts, prompt); s != nil {
		return s, reuse, nil
	}
	if s, err = m.NewSession(opts); err != nil {
		c.Put(nil, nil)
	}
	return s, 0, err
}

// Put gives back what Take gave (or s made after Take said to): s, whose
// KV cache holds ids at positions 0..len(ids)−1 (ids is copied), is kept
// for a later Take. Beyond max sessions the oldest kept is closed; after
// Close, s is. A nil s only ends the Take.
func (c *SessionCache) Put(s model.Session, ids []int) {
	c.mu.Lock()
	c.out = max(c.out-1, 0)
	if s == nil {
		c.mu.Unlock()
		return
	}
	if c.closed {
		c.mu.Unlock()
		s.Close()
		return
	}
	c.kept = append(c.kept, keptSession{s: s, ids: append([]int(nil), ids...)})
	var drop []model.Session
	for len(c.kept) > c.max {
		drop = append(drop, c.kept[0].s)
		c.kept[0] = keptSession{}
		c.kept = c.kept[1:]
	}
	c.mu.Unlock()
	for _, s := range drop {
		s.Close()
	}
}

// KVBytes returns the size of the kept sessions' KV caches.
func (c *SessionCache) KVBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, k := range c.kept {
		n += k.s.KVBytes()
	}
	return n
}

// Len returns how many sessions are kept.
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.kept)
}

// Close closes every kept session; later Puts close theirs.
func (c *SessionCache) Close() {
	c.mu.Lock()
	kept := c.kept
	c.kept, c.closed = nil, true
	c.mu.Unlock()
	for _, k := range kept {
		k.s.Close()
	}
}

// commonPrefix is how many leading elements a and b share.
func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
