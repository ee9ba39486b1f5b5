//go:build amd64 && !purego

package kernel

//go:noescape
func quantQ8_0AVX2(nb int, x *float32, b *byte)

// quantRowQ8_0Fast quantizes whole rows with AVX2 (exactly quantQ8_0).
func quantRowQ8_0Fast(x []float32, b []byte) {
	nb := len(x) / qk
	if nb == 0 {
		return
	}
	_ = b[nb*34-1]
	quantQ8_0AVX2(nb, &x[0], &b[0])
}

//go:noescape
func x16RecQ8_0AVX2(nb int, x *float32, rec *byte, negoff, minh int)

// x16RecQ8_0Fast quantizes one row into width-1 x16 records with AVX2
// (exactly PackRows' generic loop).
func x16RecQ8_0Fast(x []float32, rec []byte, l x16Layout) {
	nb := len(x) / qk
	if nb == 0 {
		return
	}
	minh := 0
	if l.min {
		minh = 1
	}
	_ = rec[nb*40-1]
	x16RecQ8_0AVX2(nb, &x[0], &rec[0], int(-l.off), minh)
}

//go:noescape
func x16RecQ8_0AVX512(ng int, x *float32, rec *byte, negoff, minh int)

// x16RecQ8_0Fast512 is x16RecQ8_0Fast with AVX-512 for whole groups of
// eight blocks (the AVX2 loop does the rest). BenchmarkXPackRow, Q4_0
// records: 2048 columns 935 → 363 ns, 8192 columns 3.21 → 1.35 µs
// (docs/BENCHMARKS.md, session 12); a 1B decode step packs 3 × 2048 + 8192
// columns per layer.
func x16RecQ8_0Fast512(x []float32, rec []byte, l x16Layout) {
	ng := len(x) / (8 * qk)
	if ng > 0 {
		minh := 0
		if l.min {
			minh = 1
		}
		_ = rec[ng*8*40-1]
		x16RecQ8_0AVX512(ng, &x[0], &rec[0], int(-l.off), minh)
	}
	if done := ng * 8 * qk; done < len(x) {
		x16RecQ8_0Fast(x[done:], rec[done/qk*40:], l)
	}
}

//go:noescape
func x16RecQ8KAVX2(nsb int, x *float32, rec *byte, halve, minh int)

// x16RecQ8KFast quantizes one row as Q8_K into width-1 x16 records of
// layout l with AVX2 (exactly PackRows' generic loop).
func x16RecQ8KFast(x []float32, rec []byte, l x16Layout) {
	nsb := len(x) / qkK
	if nsb == 0 {
		return
	}
	h, minh, rb := 0, 0, 40
	switch {
	case l.halve && l.min:
		h, minh, rb = 1, 1, 44
	case l.halve:
		h, rb = int(-l.off), 44 // the halves' correction factor (never 0)
	}
	_ = rec[nsb*8*rb-1]
	x16RecQ8KAVX2(nsb, &x[0], &rec[0], h, minh)
}
