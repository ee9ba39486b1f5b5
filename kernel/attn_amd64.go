//go:build amd64 && !purego

package kernel

//go:noescape
func scoresF16AVX2(n int, s *float32, k *byte, stride int, q *float32, width int, scale float32)

//go:noescape
func mixF16AVX2(n int, o *float32, v *byte, stride int, w *float32, width int)

// scoresF16Fast runs the AVX2 loop when a row is a multiple of 16 halves.
func scoresF16Fast(s []float32, k []byte, stride int, q []float32, scale float32) {
	if len(q) == 0 || len(q)%16 != 0 {
		scoresF16Generic(s, k, stride, q, scale)
		return
	}
	scoresF16AVX2(len(s), &s[0], &k[0], stride, &q[0], len(q), scale)
}

//go:noescape
func mixF16x64AVX2(n int, o *float32, v *byte, stride int, w *float32, width int)

// mixF16Fast runs the AVX2 loops over the columns in whole blocks of 64,
// then of 32, and the generic one over the rest.
func mixF16Fast(o []float32, v []byte, stride int, w []float32) {
	m64 := len(o) &^ 63
	if m64 > 0 {
		mixF16x64AVX2(len(w), &o[0], &v[0], stride, &w[0], m64)
	}
	m := len(o) &^ 31
	if m > m64 {
		mixF16AVX2(len(w), &o[m64], &v[2*m64], stride, &w[0], m-m64)
	}
	if m < len(o) {
		mixF16Generic(o[m:], v[2*m:], stride, w)
	}
}

//go:noescape
func scoresF16x4AVX2(n int, s *float32, sn int, k *byte, stride int, q *float32, width int, scale float32)

// scoresF16x4Asm is a four-head score loop in assembly: scoresF16x4AVX2
// or scoresF16x4AVX512 (the same bits).
type scoresF16x4Asm func(n int, s *float32, sn int, k *byte, stride int, q *float32, width int, scale float32)

// scoresF16x4With returns ScoresF16x4's implementation running loop when a
// row is a multiple of 16 halves (the bits of four scoresF16Fast calls),
// the generic twin otherwise.
func scoresF16x4With(loop scoresF16x4Asm) func(s []float32, n int, k []byte, stride int, q []float32, scale float32) {
	return func(s []float32, n int, k []byte, stride int, q []float32, scale float32) {
		width := len(q) / 4
		if width == 0 || width%16 != 0 {
			scoresF16x4Generic(s, n, k, stride, q, scale)
			return
		}
		loop(n, &s[0], len(s)/4, &k[0], stride, &q[0], width, scale)
	}
}

//go:noescape
func scoresF16x4AVX512(n int, s *float32, sn int, k *byte, stride int, q *float32, width int, scale float32)

//go:noescape
func mixF16x4AVX512(n int, o *float32, v *byte, stride int, w *float32, wn, width int)

// mixF16x4Fast512 runs the four-head AVX-512 loop when a head is a
// multiple of 64 columns (o cleared by MixF16x4), else four MixF16 loops.
func mixF16x4Fast512(o []float32, n int, v []byte, stride int, w []float32) {
	width := len(o) / 4
	if width%64 != 0 {
		mixF16x4Generic(o, n, v, stride, w)
		return
	}
	mixF16x4AVX512(n, &o[0], &v[0], stride, &w[0], len(w)/4, width)
}
