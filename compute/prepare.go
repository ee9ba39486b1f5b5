package compute

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// packed is a matrix's weights repacked once for the GEMM kernels: the
// Rows/16 full tiles, each tileBytes long, one after another, exactly as
// kernel.WPack.Pack writes them.
type packed struct {
	data      []byte
	tileBytes int
	units     int
	typ       tensor.DType // what was packed, checked at use
	cols      int

	// Lazy packing (PackOnFirstUse): data is allocated on the first GEMM
	// call and each tile packed by the first task that needs it; state[rt]
	// goes tileEmpty → tilePacking → tileReady once.
	alloc sync.Once
	state []atomic.Uint32
}

const (
	tileEmpty = iota
	tilePacking
	tileReady
)

// Prepare returns m with its weights also repacked for the GEMM kernels,
// so that MatMul over ≥ 8 activation rows (prefill) uses them directly
// instead of repacking every 16-row tile in every call (~26 % of prefill
// time before). The original bytes stay in use: token generation (fewer
// rows) and the rows past the last full tile still read them.
//
// Cost: PreparedBytes(m) bytes of heap on top of the mapped weights — for
// Q4_0, twice the weight bytes (8-bit levels plus per-row scales). A
// matrix that has no GEMM kernel on this CPU (float types, purego builds,
// CPUs without AVX-512 VNNI, fewer than 16 rows) is returned unchanged.
func Prepare(m Matrix) (Matrix, error) {
	if err := m.Check(); err != nil {
		return m, fmt.Errorf("compute: Prepare: %w", err)
	}
	tb := PreparedBytes(m) / max(m.Rows/kernel.GemmRows, 1)
	if tb == 0 {
		return m, nil
	}
	tiles := m.Rows / kernel.GemmRows
	pk := &packed{data: make([]byte, tiles*tb), tileBytes: tb, typ: m.Type, cols: m.Cols}
	rb := m.RowBytes()
	for rt := range tiles {
		wp := kernel.WPack{Data: pk.data[rt*tb : rt*tb : (rt+1)*tb]}
		if err := wp.Pack(m.Type, m.Data, rb, rt*kernel.GemmRows, m.Cols); err != nil {
			return m, fmt.Errorf("compute: Prepare: %w", err)
		}
		if len(wp.Data) != tb || &wp.Data[0] != &pk.data[rt*tb] {
			return m, fmt.Errorf("compute: Prepare: [%d][%d] %s: tile %d packed into %d bytes, want %d in place",
				m.Rows, m.Cols, m.Type, rt, len(wp.Data), tb)
		}
		pk.units = wp.Units
	}
	m.pack = pk
	return m, nil
}

// PackOnFirstUse returns m marked for lazy preparation: the first MatMul
// over ≥ 8 rows allocates PreparedBytes(m) and packs each tile as it
// reaches it, later ones use the packed tiles (results are the same bit
// for bit). Matrices never multiplied in batches (token embeddings, an
// output matrix used for the last position only) cost nothing. The first
// batched call is slower than an unprepared one: it writes the packed copy
// into fresh memory (page faults; ~2 s over the 1B Q4_0 model's 1.07 GB
// on this machine). m is
// returned unchanged when it has no GEMM kernel or is malformed.
func PackOnFirstUse(m Matrix) Matrix {
	tb := PreparedBytes(m) / max(m.Rows/kernel.GemmRows, 1)
	if tb == 0 {
		return m
	}
	var wp kernel.WPack
	if wp.Pack(m.Type, m.Data, m.RowBytes(), 0, m.Cols) != nil {
		return m
	}
	m.pack = &packed{tileBytes: tb, units: wp.Units, typ: m.Type, cols: m.Cols,
		state: make([]atomic.Uint32, m.Rows/kernel.GemmRows)}
	return m
}

// PreparedBytes is the heap Prepare(m) allocates: 0 when m has no GEMM
// kernel on this CPU.
func PreparedBytes(m Matrix) int {
	if m.Rows < kernel.GemmRows || m.Check() != nil {
		return 0
	}
	if _, ok := kernel.GemmFor(m.Type); !ok {
		return 0
	}
	var wp kernel.WPack
	if err := wp.Pack(m.Type, m.Data, m.RowBytes(), 0, m.Cols); err != nil {
		return 0
	}
	return len(wp.Data) * (m.Rows / kernel.GemmRows)
}

// Prepared reports whether m carries packed weights (from Prepare).
func (m Matrix) Prepared() bool { return m.pack != nil }

// tile returns the prepared 16-row tile rt as a kernel.WPack, or false if
// m has none (or they were packed for another type or row length). For a
// lazily prepared m it packs the tile first if no other task is doing so.
func (m Matrix) tile(rt int) (kernel.WPack, bool) {
	pk := m.pack
	if pk == nil || pk.typ != m.Type || pk.cols != m.Cols {
		return kernel.WPack{}, false
	}
	if pk.state != nil {
		if rt >= len(pk.state) {
			return kernel.WPack{}, false
		}
		switch pk.state[rt].Load() {
		case tileReady:
		case tilePacking:
			return kernel.WPack{}, false // another task is packing it: repack privately
		default:
			pk.alloc.Do(func() { pk.data = make([]byte, len(pk.state)*pk.tileBytes) })
			if !pk.state[rt].CompareAndSwap(tileEmpty, tilePacking) {
				return kernel.WPack{}, false
			}
			wp := kernel.WPack{Data: pk.data[rt*pk.tileBytes : rt*pk.tileBytes : (rt+1)*pk.tileBytes]}
			if err := wp.Pack(m.Type, m.Data, m.RowBytes(), rt*kernel.GemmRows, m.Cols); err != nil || len(wp.Data) != pk.tileBytes {
				return kernel.WPack{}, false // stays tilePacking: never used
			}
			pk.state[rt].Store(tileReady)
		}
	}
	if (rt+1)*pk.tileBytes > len(pk.data) {
		return kernel.WPack{}, false
	}
	return kernel.WPack{Type: m.Type, Units: pk.units, Data: pk.data[rt*pk.tileBytes : (rt+1)*pk.tileBytes]}, true
}
