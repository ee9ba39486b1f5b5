package compute

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// BenchmarkDecodeLayers splits a decode step's weight streaming into what
// costs what. It lays out the 1B preset's 16 layers (Q, K, V, O, gate, up,
// down: 2048 wide, FFN 8192) in an x16 arena as the engine loads them and
// times, in alternating rounds (-benchtime 9x: nine), four passes over
// the same bytes:
//
//   - matmuls: the layer's four multiplications (MatMuls for QKV and
//     gate/up, MatMul for O and down), activations quantized per call;
//   - kernels: the same tile loops on activations packed once;
//   - read-jobs: a plain read (kernel.StreamRead) of the same tiles in the
//     same pool loops (same chunks, same fork/join);
//   - read-one: a plain read of one buffer of as many bytes, one half per
//     thread (the roofline probe's pattern).
//
// Each ratio is the median over rounds of a pass's GB/s ÷ read-one's in
// the same round, so the host's drift cancels. Q4_0, Q8_0 and Q4_K run all
// four passes; F16 (float tiles: no activations to pack) all but kernels.
// docs/BENCHMARKS.md (session 12) has the figures: read-jobs stays within a
// few per cent of read-one, and the kernels fall behind the plain read only
// when the host's bandwidth is high.
func BenchmarkDecodeLayers(b *testing.B) {
	p := NewPool(benchThreads())
	defer p.Close()
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.F16} {
		b.Run(dt.String(), func(b *testing.B) { benchDecodeLayers(b, p, dt) })
	}
}

// decodeLayer is one layer's matrices.
type decodeLayer struct{ q, k, v, o, gate, up, down Matrix }

func benchDecodeLayers(b *testing.B, p *Pool, dt tensor.DType) {
	const dim, kv, hid, layers = 2048, 512, 8192, 16
	var per int64 // one layer's bytes
	for _, sh := range [][2]int64{{dim, dim}, {kv, dim}, {kv, dim}, {dim, dim}, {hid, dim}, {hid, dim}, {dim, hid}} {
		rb, _ := dt.RowBytes(sh[1])
		per += sh[0] * rb
	}
	arena := NewX16Arena(layers*per + 64<<20)
	if arena == nil {
		b.Skip("no arena")
	}
	bases := map[[2]int]Matrix{}
	mk := func(rows, cols int) Matrix {
		base, ok := bases[[2]int{rows, cols}]
		if !ok {
			base = quickMatrix(b, dt, rows, cols, 1)
			bases[[2]int{rows, cols}] = base
		}
		m := ForDecodeIn(Matrix{Type: dt, Rows: rows, Cols: cols, Data: base.Data}, nil, arena)
		m.CopyX16()
		return m
	}
	ls := make([]decodeLayer, layers)
	for i := range ls {
		ls[i] = decodeLayer{mk(dim, dim), mk(kv, dim), mk(kv, dim), mk(dim, dim), mk(hid, dim), mk(hid, dim), mk(dim, hid)}
	}
	if !ls[0].q.ForDecoding() {
		b.Skip("no x16 kernel on this CPU")
	}
	var total int
	for _, l := range ls {
		for _, m := range []Matrix{l.q, l.k, l.v, l.o, l.gate, l.up, l.down} {
			total += len(m.x.data)
		}
	}
	x := randNormal(rand.New(rand.NewPCG(2, 2)), hid, 1)
	o1, o2, o3 := make([]float32, hid), make([]float32, hid), make([]float32, hid)
	buf := make([]byte, total)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}

	kern, quantized := kernel.X16For(dt)
	packed := func(cols int) *x16Task { // activations packed once
		t := new(x16Task)
		if !quantized {
			return t
		}
		if err := t.ap.Reset(dt, 1, cols); err != nil {
			b.Fatal(err)
		}
		t.x, t.n, t.kern, t.phase = x[:cols], 1, kern, quantizeRows
		t.Run(0, 1)
		t.phase = dotRows
		return t
	}
	tDim, tHid := packed(dim), packed(hid)
	loop := func(t *x16Task, ps ...Product) {
		t.set(ps)
		p.ForStream(t.total(), grainFor(ps[0].W.x.tileBytes*t.ap.Panels()), t)
	}
	read := &decodeRead{}
	readLoop := func(ps ...Product) {
		read.set(ps)
		p.ForStream(read.total(), grainFor(ps[0].W.x.tileBytes), read)
	}
	qkv := func(l decodeLayer) []Product {
		return []Product{{Out: o1[:dim], W: l.q}, {Out: o2[:kv], W: l.k}, {Out: o3[:kv], W: l.v}}
	}
	gu := func(l decodeLayer) []Product { return []Product{{Out: o1, W: l.gate}, {Out: o2, W: l.up}} }
	passes := []struct {
		name string
		run  func()
	}{
		{"matmuls", func() {
			for _, l := range ls {
				MatMuls(p, x[:dim], 1, qkv(l)...)
				MatMul(p, o1[:dim], l.o, x[:dim], 1)
				MatMuls(p, x[:dim], 1, gu(l)...)
				MatMul(p, o1[:dim], l.down, x, 1)
			}
		}},
		{"kernels", func() {
			for _, l := range ls {
				loop(tDim, qkv(l)...)
				loop(tDim, Product{Out: o1[:dim], W: l.o})
				loop(tDim, gu(l)...)
				loop(tHid, Product{Out: o1[:dim], W: l.down})
			}
		}},
		{"read-jobs", func() {
			for _, l := range ls {
				readLoop(qkv(l)...)
				readLoop(Product{W: l.o})
				readLoop(gu(l)...)
				readLoop(Product{W: l.down})
			}
		}},
		{"read-one", func() {
			p.For(p.Threads(), func(lo, hi int) {
				for t := lo; t < hi; t++ {
					kernel.StreamRead(buf[t*len(buf)/p.Threads() : (t+1)*len(buf)/p.Threads()])
				}
			})
		}},
	}
	if !quantized { // float tiles have no activations to pack
		passes = slices.Delete(passes, 1, 2)
	}
	for _, ps := range passes { // warm up: first touch, page tables
		ps.run()
	}
	gbs := make([][]float64, len(passes))
	round := 0
	for b.Loop() {
		for k := range passes {
			i := (k + round) % len(passes)
			t0 := time.Now()
			passes[i].run()
			gbs[i] = append(gbs[i], float64(total)/time.Since(t0).Seconds()/1e9)
		}
		round++
	}
	one := gbs[len(passes)-1]
	for i, ps := range passes {
		ratios := make([]float64, len(one))
		for r := range one {
			ratios[r] = gbs[i][r] / one[r]
		}
		b.ReportMetric(median(gbs[i]), ps.name+"-GB/s")
		if i < len(passes)-1 {
			b.ReportMetric(median(ratios), ps.name+"/read-one")
		}
	}
}

// median returns the middle value of v (the upper one of an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// decodeRead reads the tiles of a tileLoop's matrices with a plain read.
type decodeRead struct{ tileLoop }

func (r *decodeRead) Run(lo, hi int) { r.run(r, lo, hi) }

func (r *decodeRead) span(_ int, w Matrix, _ []float32, lo, hi int) {
	for pn := range w.x.panels {
		kernel.StreamRead(w.x.tiles(pn, lo, hi))
	}
}
