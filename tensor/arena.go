package tensor

// Arena hands out float32 buffers for one job's activations. Reset makes
// all of them reusable; after the first pass (warm-up) the arena holds one
// buffer as large as the peak demand, so later passes allocate nothing.
// An Arena is not safe for concurrent use.
type Arena struct {
	buf  []float32
	off  int
	used int // total floats handed out since Reset, including overflow
	peak int
}

// NewArena returns an arena with room for capacity floats.
func NewArena(capacity int) *Arena { return &Arena{buf: make([]float32, max(capacity, 0))} }

// Floats returns a zeroed slice of n floats valid until Reset.
func (a *Arena) Floats(n int) []float32 {
	a.used += n
	a.peak = max(a.peak, a.used)
	if a.off+n > len(a.buf) {
		return make([]float32, n) // overflow this pass; Reset grows the arena
	}
	s := a.buf[a.off : a.off+n : a.off+n]
	a.off += n
	clear(s)
	return s
}

// Reset releases every buffer handed out, growing the arena to the peak
// demand seen so far.
func (a *Arena) Reset() {
	if a.peak > len(a.buf) {
		a.buf = make([]float32, a.peak)
	}
	a.off, a.used = 0, 0
}

// Cap returns the arena's capacity in floats; Peak the largest demand seen.
func (a *Arena) Cap() int  { return len(a.buf) }
func (a *Arena) Peak() int { return a.peak }
