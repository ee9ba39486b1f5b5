package kernel

import (
	"encoding/binary"
	"math"
)

// Reference round-to-nearest quantizers for the K-quants. Each sub-block's
// scale (and min) comes from its extreme values, the sub-block scales are
// themselves quantized against the super-block's f16 scale, and then every
// element is rounded to the nearest level under its final, quantized scale.
// (ggml's quantizers additionally search for better scales; any valid
// block is readable by every K-quant decoder.)

// clampInt rounds f to the nearest integer and clamps it to [lo, hi].
func clampInt(f float32, lo, hi int) int {
	if f != f { // NaN
		return lo
	}
	return min(hi, max(lo, nearestInt(f)))
}

// subScalesSym picks, for symmetric formats, a signed scale per sub-block
// so that its largest-magnitude element maps to -nmax, then quantizes those
// scales to signed integers in [-smax, smax-1] against one f16 super-scale.
// It returns the f16-rounded super-scale and the integer scales.
func subScalesSym(x []float32, sub, nmax, smax int, ls []int) float32 {
	scales := make([]float32, len(x)/sub)
	for i := range scales {
		scales[i] = searchSym(x[i*sub:(i+1)*sub], nmax)
	}
	m, amax := absMax(scales)
	if amax == 0 {
		clear(ls)
		return 0
	}
	d := FP16ToFP32(FP32ToFP16(m / float32(-smax)))
	if d == 0 {
		clear(ls)
		return 0
	}
	for i, s := range scales {
		ls[i] = clampInt(s/d, -smax, smax-1)
	}
	return d
}

// subScalesMin picks, for formats with a min, per sub-block scale = range /
// nmax and min = -min(x, 0), and quantizes both against f16 super-scales to
// integers in [0, smax]. It returns d and dmin (f16-rounded).
func subScalesMin(x []float32, sub, nmax, smax int, ls, lm []int) (d, dmin float32) {
	n := len(x) / sub
	scales := make([]float32, n)
	mins := make([]float32, n)
	var maxScale, maxMin float32
	for i := range scales {
		scales[i], mins[i] = searchMin(x[i*sub:(i+1)*sub], nmax)
		maxScale, maxMin = max(maxScale, scales[i]), max(maxMin, mins[i])
	}
	d = FP16ToFP32(FP32ToFP16(maxScale / float32(smax)))
	dmin = FP16ToFP32(FP32ToFP16(maxMin / float32(smax)))
	for i := range scales {
		ls[i], lm[i] = 0, 0
		if d > 0 {
			ls[i] = clampInt(scales[i]/d, 0, smax)
		}
		if dmin > 0 {
			lm[i] = clampInt(mins[i]/dmin, 0, smax)
		}
	}
	return d, dmin
}

// levelMin returns the level of v under scale dl and offset ml (v ≈ dl·q - ml).
func levelMin(v, dl, ml float32, nmax int) int {
	if dl == 0 {
		return 0
	}
	return clampInt((v+ml)/dl, 0, nmax)
}

func quantQ2K(x []float32, b []byte) {
	var ls, lm [16]int
	d, dmin := subScalesMin(x[:qkK], 16, 3, 15, ls[:], lm[:])
	clear(b[:84])
	for i := range ls {
		b[i] = byte(ls[i]) | byte(lm[i])<<4
	}
	qs := b[16:80]
	for e, v := range x[:qkK] {
		q := levelMin(v, d*float32(ls[e/16]), dmin*float32(lm[e/16]), 3)
		qs[32*(e/128)+e%32] |= byte(q) << (2 * (e % 128 / 32))
	}
	putF16(b[80:], d)
	putF16(b[82:], dmin)
}

func quantQ3K(x []float32, b []byte) {
	var ls [16]int
	d := subScalesSym(x[:qkK], 16, 4, 32, ls[:])
	clear(b[:110])
	hm, qs, sc := b[0:32], b[32:96], b[96:108]
	for i, l := range ls {
		u := byte(l + 32)
		if i < 8 {
			sc[i] |= u & 0xf
		} else {
			sc[i-8] |= (u & 0xf) << 4
		}
		sc[8+i%4] |= (u >> 4) << (2 * (i / 4))
	}
	for e, v := range x[:qkK] {
		q := 0
		if dl := d * float32(ls[e/16]); dl != 0 {
			q = clampInt(v/dl, -4, 3)
		}
		q += 4
		j := e % 128 / 32
		qs[32*(e/128)+e%32] |= byte(q&3) << (2 * j)
		if q > 3 {
			hm[e%32] |= 1 << (4*(e/128) + j)
		}
	}
	putF16(b[108:], d)
}

// packScaleMinK4 is the inverse of scaleMinK4.
func packScaleMinK4(sc []byte, ls, lm []int) {
	clear(sc[:12])
	for j := range 8 {
		s, m := byte(ls[j]), byte(lm[j])
		if j < 4 {
			sc[j] |= s
			sc[j+4] |= m
		} else {
			sc[j+4] = s&0xf | (m&0xf)<<4
			sc[j-4] |= (s >> 4) << 6
			sc[j] |= (m >> 4) << 6
		}
	}
}

func quantQ4K(x []float32, b []byte) {
	var ls, lm [8]int
	d, dmin := subScalesMin(x[:qkK], 32, 15, 63, ls[:], lm[:])
	putF16(b, d)
	putF16(b[2:], dmin)
	packScaleMinK4(b[4:16], ls[:], lm[:])
	qs := b[16:144]
	clear(qs)
	for e, v := range x[:qkK] {
		q := levelMin(v, d*float32(ls[e/32]), dmin*float32(lm[e/32]), 15)
		qs[32*(e/64)+e%32] |= byte(q) << (4 * (e % 64 / 32))
	}
}

func quantQ5K(x []float32, b []byte) {
	var ls, lm [8]int
	d, dmin := subScalesMin(x[:qkK], 32, 31, 63, ls[:], lm[:])
	putF16(b, d)
	putF16(b[2:], dmin)
	packScaleMinK4(b[4:16], ls[:], lm[:])
	qh, qs := b[16:48], b[48:176]
	clear(qh)
	clear(qs)
	for e, v := range x[:qkK] {
		q := levelMin(v, d*float32(ls[e/32]), dmin*float32(lm[e/32]), 31)
		qs[32*(e/64)+e%32] |= byte(q&0xf) << (4 * (e % 64 / 32))
		qh[e%32] |= byte(q>>4) << (e / 32)
	}
}

func quantQ6K(x []float32, b []byte) {
	var ls [16]int
	d := subScalesSym(x[:qkK], 16, 32, 128, ls[:])
	clear(b[:210])
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	for i, l := range ls {
		sc[i] = byte(int8(l))
	}
	for e, v := range x[:qkK] {
		q := 0
		if dl := d * float32(ls[e/16]); dl != 0 {
			q = clampInt(v/dl, -32, 31)
		}
		q += 32
		n, r := e/128, e%128
		l, k := r%32, r/32
		ql[64*n+l+32*(k&1)] |= byte(q&0xf) << (4 * (k >> 1))
		qh[32*n+l] |= byte(q>>4) << (2 * k)
	}
	putF16(b[208:], d)
}

// quantQ8K follows ggml's quantize_row_q8_K_ref: the largest-magnitude
// element maps to -127 (clamped at 127), d is kept as f32, and bsums holds
// the sum of each 16 quants.
func quantQ8K(x []float32, b []byte) {
	max, amax := absMax(x[:qkK])
	qs := b[4:260]
	if amax == 0 {
		clear(b[:292])
		return
	}
	iscale := -127 / max
	for j, v := range x[:qkK] {
		qs[j] = byte(int8(min(127, nearestInt(iscale*v))))
	}
	for j := range 16 {
		s := 0
		for _, q := range qs[16*j : 16*j+16] {
			s += int(int8(q))
		}
		binary.LittleEndian.PutUint16(b[260+2*j:], uint16(int16(s)))
	}
	binary.LittleEndian.PutUint32(b, math.Float32bits(1/iscale))
}

// searchSym picks a sub-block's signed scale d (x ≈ d·L, L integer in
// [-nmax, nmax-1]): the largest-magnitude element maps near -nmax, and of
// 11 nearby candidate scales the one whose least-squares refit
// (d = ΣL·x / ΣL²) leaves the smallest squared error wins.
func searchSym(x []float32, nmax int) float32 {
	m, amax := absMax(x)
	if amax == 0 {
		return 0
	}
	best, bestD := -1.0, m/float32(-nmax)
	for k := -5; k <= 5; k++ {
		iscale := -(float32(nmax) + 0.1*float32(k)) / m
		var slx, sll float64
		for _, v := range x {
			l := float64(clampInt(iscale*v, -nmax, nmax-1))
			slx += l * float64(v)
			sll += l * l
		}
		// The squared error of the refit is Σx² − (ΣLx)²/ΣL².
		if sll > 0 && slx*slx/sll > best {
			best, bestD = slx*slx/sll, float32(slx/sll)
		}
	}
	return bestD
}

// searchMin picks a sub-block's scale and min (x ≈ d·L − m, L in
// [0, nmax], m ≥ 0): levels from 11 candidate scales around the block's
// range, each refit by least squares for (d, m); the smallest squared
// error (computed from the sums, no second pass) wins.
func searchMin(x []float32, nmax int) (d, m float32) {
	lo, hi := minMax(x)
	lo = min(lo, 0)
	if hi == lo {
		return 0, -lo
	}
	n := float64(len(x))
	var sx, sxx float64
	for _, v := range x {
		sx += float64(v)
		sxx += float64(v) * float64(v)
	}
	bestErr := math.Inf(1)
	d, m = (hi-lo)/float32(nmax), -lo
	for k := -5; k <= 5; k++ {
		iscale := (float32(nmax) + 0.1*float32(k)) / (hi - lo)
		var sl, sll, slx float64
		for _, v := range x {
			l := float64(clampInt((v-lo)*iscale, 0, nmax))
			sl += l
			sll += l * l
			slx += l * float64(v)
		}
		det := n*sll - sl*sl
		if det <= 0 {
			continue
		}
		cd := (n*slx - sl*sx) / det // x ≈ cd·L + c0
		c0 := (sx - cd*sl) / n
		if c0 > 0 { // the min must not be positive: refit through 0
			c0, cd = 0, slx/sll
		}
		if cd <= 0 {
			continue
		}
		// Σ (cd·L + c0 − x)² expanded over the sums.
		e := cd*cd*sll + n*c0*c0 + sxx + 2*cd*c0*sl - 2*cd*slx - 2*c0*sx
		if e < bestErr {
			bestErr, d, m = e, float32(cd), float32(-c0)
		}
	}
	return d, m
}
