//go:build amd64 && !purego

package kernel

//go:noescape
func mixF16AVX2(n int, o *float32, v *byte, stride int, w *float32, width int)

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
func scoresBlocksAVX2(nb int, s *float32, k *byte, q *float32, width int, scale float32)

// scoresBlocksFast is ScoresF16Blocks's AVX2 loop (every tier: with one
// head, 16-lane sums would leave the loop waiting on each multiply-add).
func scoresBlocksFast(s []float32, nb int, k []byte, q []float32, scale float32) {
	scoresBlocksAVX2(nb, &s[0], &k[0], &q[0], len(q), scale)
}

//go:noescape
func scoresBlocks4AVX2(nb int, s *float32, sn int, k *byte, q *float32, width int, scale float32)

//go:noescape
func scoresBlocks4AVX512(nb int, s *float32, sn int, k *byte, q *float32, width int, scale float32)

// scoresBlocks4With returns ScoresF16Blocks4's implementation running loop
// (scoresBlocks4AVX2 or scoresBlocks4AVX512: the same bits, and those of
// scoresBlocksFast on each head).
func scoresBlocks4With(loop func(nb int, s *float32, sn int, k *byte, q *float32, width int, scale float32)) func(s []float32, nb int, k []byte, q []float32, scale float32) {
	return func(s []float32, nb int, k []byte, q []float32, scale float32) {
		loop(nb, &s[0], len(s)/4, &k[0], &q[0], len(q)/4, scale)
	}
}

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

//go:noescape
func mixQ8x4AVX512(n int, o *float32, v *byte, stride int, w *float32, wn, width int)

// mixQ8x4Fast512 runs the four-head AVX-512 Q8_0 loop when a head is a
// multiple of 64 columns (o cleared by MixQ8_0x4), else the generic one.
func mixQ8x4Fast512(o []float32, n int, v []byte, stride int, w []float32) {
	width := len(o) / 4
	if width%64 != 0 {
		mixQ8x4Generic(o, n, v, stride, w)
		return
	}
	mixQ8x4AVX512(n, &o[0], &v[0], stride, &w[0], len(w)/4, width)
}

//go:noescape
func scoresQ8x4AVX512(nb int, s *float32, sn int, k *byte, q *float32, width int, scale float32)

// scoresQ8x4Fast512 is ScoresQ8Blocks4's AVX-512 loop.
func scoresQ8x4Fast512(s []float32, nb int, k []byte, q []float32, scale float32) {
	scoresQ8x4AVX512(nb, &s[0], len(s)/4, &k[0], &q[0], len(q)/4, scale)
}

//go:noescape
func scoresQ8x4AVX2(nb int, s *float32, sn int, k *byte, q *float32, width int, scale float32)

// scoresQ8x4Fast is ScoresQ8Blocks4's AVX2 loop (the AVX-512 loop's bits).
func scoresQ8x4Fast(s []float32, nb int, k []byte, q []float32, scale float32) {
	scoresQ8x4AVX2(nb, &s[0], len(s)/4, &k[0], &q[0], len(q)/4, scale)
}

//go:noescape
func mixQ8x4AVX2(n int, o *float32, v *byte, stride int, w *float32, wn, width int)

// mixQ8x4Fast is MixQ8_0x4's AVX2 loop (width a multiple of 32, as
// MixQ8_0x4 requires).
func mixQ8x4Fast(o []float32, n int, v []byte, stride int, w []float32) {
	mixQ8x4AVX2(n, &o[0], &v[0], stride, &w[0], len(w)/4, len(o)/4)
}
