//go:build amd64 && !purego

package kernel

//go:noescape
func siluAVX2(n int, x, u *float32, c *[15][8]uint32) int

// siluFast runs the AVX2 loop, the generic one over any block it stops at
// and over the tail.
func siluFast(x []float32) {
	m := len(x) &^ 7
	for i := 0; i < m; {
		i += siluAVX2(m-i, &x[i], nil, &siluConsts)
		if i < m {
			siluGeneric(x[i : i+8])
			i += 8
		}
	}
	siluGeneric(x[m:])
}

//go:noescape
func siluAVX512(n int, x, u *float32, c *[15][8]uint32) int

// siluMulFast512 is siluMulFast with AVX-512 over blocks of 16 (the AVX2
// loop takes a block it stops at, and the tail): BenchmarkSiLU, 8192
// floats, 5.0 → 3.0 µs (docs/BENCHMARKS.md, session 12).
func siluMulFast512(x, u []float32) { silu512(x, u[:len(x)]) }

// siluFast512 is siluFast with AVX-512 over blocks of 16.
func siluFast512(x []float32) { silu512(x, nil) }

// silu512 is SiLU of x, times u's when u is not nil.
func silu512(x, u []float32) {
	avx2 := func(lo, hi int) {
		if u == nil {
			siluFast(x[lo:hi])
		} else {
			siluMulFast(x[lo:hi], u[lo:hi])
		}
	}
	m := len(x) &^ 15
	for i := 0; i < m; {
		var ui *float32
		if u != nil {
			ui = &u[i]
		}
		i += siluAVX512(m-i, &x[i], ui, &siluConsts)
		if i < m {
			avx2(i, i+16)
			i += 16
		}
	}
	avx2(m, len(x))
}

// siluMulFast is siluFast with each result times u's.
func siluMulFast(x, u []float32) {
	m := len(x) &^ 7
	for i := 0; i < m; {
		i += siluAVX2(m-i, &x[i], &u[i], &siluConsts)
		if i < m {
			siluMulGeneric(x[i:i+8], u[i:i+8])
			i += 8
		}
	}
	siluMulGeneric(x[m:], u[m:])
}

//go:noescape
func expShiftAVX2(n int, x *float32, m *[8]float32, c *[15][8]uint32) int

// expShiftFast runs the AVX2 loop, the generic one over any block it stops
// at and over the tail.
func expShiftFast(x []float32, m float32) { expShiftBlocks(x, m, false) }

//go:noescape
func expShiftAVX512(n int, x *float32, m *[8]float32, c *[15][8]uint32) int

// expShiftFast512 is expShiftFast with AVX-512 over blocks of 16 (the AVX2
// loop takes a block it stops at, and the tail): softmax's exponentials,
// 32 heads × (position + 1) per layer of a 1B decode step.
func expShiftFast512(x []float32, m float32) { expShiftBlocks(x, m, true) }

// expShiftBlocks runs the AVX-512 loop (wide) or the AVX2 one over x's
// whole blocks of 16 or 8, and the next narrower way over any block it
// stops at and over the tail. The loops are called directly (not as
// function values), so m's lanes stay on the stack.
func expShiftBlocks(x []float32, m float32, wide bool) {
	rest := func(b []float32) {
		if wide {
			expShiftBlocks(b, m, false)
		} else {
			expShiftGeneric(b, m)
		}
	}
	mm := [8]float32{m, m, m, m, m, m, m, m}
	w := 8
	if wide {
		w = 16
	}
	n := len(x) / w * w
	for i := 0; i < n; {
		if wide {
			i += expShiftAVX512(n-i, &x[i], &mm, &siluConsts)
		} else {
			i += expShiftAVX2(n-i, &x[i], &mm, &siluConsts)
		}
		if i < n {
			rest(x[i : i+w])
			i += w
		}
	}
	rest(x[n:])
}
