package conv

import (
	"fmt"
	"sync"
)

// Map is a feature map of H×W pixels with C channels, stored
// [H+2][W+2][C] with a zero border (see the package doc).
type Map struct {
	H, W, C int
	Data    []float32 // len (H+2)*(W+2)*C
}

// MapLen returns the number of float32s a map of h×w×c occupies.
func MapLen(h, w, c int) int { return (h + 2) * (w + 2) * c }

// MapBytes returns the bytes a map of h×w×c occupies.
func MapBytes(h, w, c int) int64 { return 4 * int64(MapLen(h, w, c)) }

// NewMap allocates a zeroed map.
func NewMap(h, w, c int) *Map {
	return &Map{H: h, W: w, C: c, Data: make([]float32, MapLen(h, w, c))}
}

// RowStride is the distance in floats between vertically adjacent pixels.
func (m *Map) RowStride() int { return (m.W + 2) * m.C }

// At returns the offset of pixel (y, x), 0 ≤ y < H, 0 ≤ x < W.
func (m *Map) At(y, x int) int { return ((y+1)*(m.W+2) + x + 1) * m.C }

// Row returns the W·C interior values of image row y.
func (m *Map) Row(y int) []float32 {
	o := m.At(y, 0)
	return m.Data[o : o+m.W*m.C]
}

func (m *Map) check() error {
	if m == nil || m.H <= 0 || m.W <= 0 || m.C <= 0 || len(m.Data) != MapLen(m.H, m.W, m.C) {
		if m == nil {
			return fmt.Errorf("nil map")
		}
		return fmt.Errorf("map %dx%dx%d has %d values, want %d", m.H, m.W, m.C, len(m.Data), MapLen(m.H, m.W, m.C))
	}
	return nil
}

// zeroBorder clears the one-pixel border.
func (m *Map) zeroBorder() {
	rs := m.RowStride()
	clear(m.Data[:rs])
	clear(m.Data[(m.H+1)*rs:])
	for y := 1; y <= m.H; y++ {
		clear(m.Data[y*rs : y*rs+m.C])
		clear(m.Data[(y+1)*rs-m.C : (y+1)*rs])
	}
}

// FromCHW builds a map from planar data [c][h][w].
func FromCHW(data []float32, c, h, w int) (*Map, error) {
	if c <= 0 || h <= 0 || w <= 0 || len(data) != c*h*w {
		return nil, fmt.Errorf("CHW data of %d values does not match shape [%d %d %d]", len(data), c, h, w)
	}
	m := NewMap(h, w, c)
	return m, m.SetCHW(data)
}

// ToCHW returns the map's interior in planar order [C][H][W].
func (m *Map) ToCHW() []float32 {
	out := make([]float32, m.C*m.H*m.W)
	for y := 0; y < m.H; y++ {
		row := m.Row(y)
		for x := 0; x < m.W; x++ {
			for ci := 0; ci < m.C; ci++ {
				out[(ci*m.H+y)*m.W+x] = row[x*m.C+ci]
			}
		}
	}
	return out
}

// Arena hands out maps and takes them back for reuse, counting the bytes
// it holds (in use plus cached for reuse). Its high-water mark is what a
// memory plan is checked against. The zero value is ready; it is safe for
// concurrent use.
type Arena struct {
	mu         sync.Mutex
	free       map[int][][]float32 // by length
	held, peak int64               // bytes: in use + cached
	inUse      int64
}

// Map returns a map whose border is zero and whose interior is undefined
// (every op here overwrites the whole interior of its output). Released
// buffers are reused by exact size and never returned to the Go heap until
// Reset, so a loop over same-sized tiles allocates only in its first pass
// and the arena's footprint is the sum, over buffer sizes, of the most
// buffers of that size in use at once.
func (a *Arena) Map(h, w, c int) *Map {
	n := MapLen(h, w, c)
	a.mu.Lock()
	var buf []float32
	if l := a.free[n]; len(l) > 0 {
		buf = l[len(l)-1]
		a.free[n] = l[:len(l)-1]
	} else {
		a.held += 4 * int64(n)
		a.peak = max(a.peak, a.held)
	}
	a.inUse += 4 * int64(n)
	a.mu.Unlock()
	if buf == nil {
		return &Map{H: h, W: w, C: c, Data: make([]float32, n)}
	}
	m := &Map{H: h, W: w, C: c, Data: buf}
	m.zeroBorder()
	return m
}

// Release gives m back; m must not be used afterwards.
func (a *Arena) Release(m *Map) {
	if m == nil {
		return
	}
	a.mu.Lock()
	if a.free == nil {
		a.free = map[int][][]float32{}
	}
	a.free[len(m.Data)] = append(a.free[len(m.Data)], m.Data)
	a.inUse -= 4 * int64(len(m.Data))
	a.mu.Unlock()
	m.Data = nil
}

// Peak returns the most bytes the arena has held at once.
func (a *Arena) Peak() int64 { a.mu.Lock(); defer a.mu.Unlock(); return a.peak }

// InUse returns the bytes currently handed out.
func (a *Arena) InUse() int64 { a.mu.Lock(); defer a.mu.Unlock(); return a.inUse }

// Reset drops every cached buffer and restarts the high-water mark at the
// bytes in use.
func (a *Arena) Reset() {
	a.mu.Lock()
	a.free = nil
	a.held = a.inUse
	a.peak = a.held
	a.mu.Unlock()
}

// SetCHW fills m's interior from planar data [C][H][W].
func (m *Map) SetCHW(data []float32) error {
	if err := m.check(); err != nil {
		return err
	}
	if len(data) != m.C*m.H*m.W {
		return fmt.Errorf("CHW data of %d values does not match map %dx%dx%d", len(data), m.H, m.W, m.C)
	}
	for ci := 0; ci < m.C; ci++ {
		plane := data[ci*m.H*m.W:]
		for y := 0; y < m.H; y++ {
			o := m.At(y, 0) + ci
			for x := 0; x < m.W; x++ {
				m.Data[o+x*m.C] = plane[y*m.W+x]
			}
		}
	}
	return nil
}
