package kernel

import (
	"encoding/binary"
	"math"
)

// IQ4_NL and IQ4_XS: four-bit indices into one fixed non-linear table of
// sixteen int8 levels (ggml's kvalues_iq4nl, ggml-common.h). IQ4_NL has a
// f16 scale per block of 32; IQ4_XS has a f16 scale per 256 and a 6-bit
// scale (minus 32) per 32:
//
//	IQ4_NL (18 bytes): d f16, qs[16]: column j < 16 in the low nibble of
//	  qs[j], column j+16 in its high nibble; value d·kv[nibble].
//	IQ4_XS (136 bytes): d f16, scales_h u16, scales_l[4], qs[128]: sub-block
//	  b (32 columns) has ls = (scales_l[b/2] >> 4(b%2)) & 15 |
//	  ((scales_h >> 2b) & 3) << 4 and its nibbles in qs[16b:16b+16] as
//	  IQ4_NL's; value d·(ls−32)·kv[nibble].
var iq4Values = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

func dequantIQ4NL(b []byte, y []float32) {
	d := f16(b)
	for j := range 16 {
		y[j] = d * float32(iq4Values[b[2+j]&0xf])
		y[j+16] = d * float32(iq4Values[b[2+j]>>4])
	}
}

// iq4XSScale returns sub-block s's scale of an IQ4_XS block, minus 32.
func iq4XSScale(b []byte, s int) int {
	lo := int(b[4+s/2]>>(4*(s%2))) & 0xf
	hi := int(binary.LittleEndian.Uint16(b[2:])>>(2*s)) & 3
	return (lo | hi<<4) - 32
}

func dequantIQ4XS(b []byte, y []float32) {
	d := f16(b)
	for s := range 8 {
		dl := d * float32(iq4XSScale(b, s))
		q := b[8+16*s:]
		for j := range 16 {
			y[32*s+j] = dl * float32(iq4Values[q[j]&0xf])
			y[32*s+j+16] = dl * float32(iq4Values[q[j]>>4])
		}
	}
}

// iq4Nearest returns the index of the table level nearest to v (the lower
// one on a tie).
func iq4Nearest(v float32) int {
	if v <= float32(iq4Values[0]) {
		return 0
	}
	if v >= float32(iq4Values[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 { // iq4Values is increasing
		mid := (lo + hi) / 2
		if v < float32(iq4Values[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if v-float32(iq4Values[lo]) <= float32(iq4Values[hi])-v {
		return lo
	}
	return hi
}

// iq4Fit chooses a scale and indices for x (a block of 32): our own
// least-squares search, not llama-quantize's (which also weighs by an
// importance matrix). Starting from the scale that maps the element of
// largest magnitude to −127 (or +113), it tries scales around it, and for
// each the indices nearest to x/scale refit the scale as Σx·v/Σv²; the
// pair with the smallest squared error wins. It returns the scale.
func iq4Fit(x []float32, idx []byte) float32 {
	var amax, max float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, max = a, v
		}
	}
	if amax == 0 {
		for i := range idx {
			idx[i] = 8 // level 1 × scale 0
		}
		return 0
	}
	var try [32]byte
	best, bestErr := float32(0), float32(math.Inf(1))
	for t := -7; t <= 7; t++ {
		d := max / (float32(iq4Values[0]) + 0.1*float32(t))
		if d == 0 {
			continue
		}
		id := 1 / d
		var sxv, svv float32
		for i, v := range x {
			k := iq4Nearest(v * id)
			try[i] = byte(k)
			l := float32(iq4Values[k])
			sxv += v * l
			svv += l * l
		}
		if svv == 0 {
			continue
		}
		d = sxv / svv
		var e float32
		for i, v := range x {
			r := v - d*float32(iq4Values[try[i]])
			e += r * r
		}
		if e < bestErr {
			best, bestErr = d, e
			copy(idx, try[:len(x)])
		}
	}
	return best
}

func quantIQ4NL(x []float32, b []byte) {
	var idx [32]byte
	d := iq4Fit(x[:32], idx[:])
	putF16(b, d)
	// Refit the indices to the stored (rounded) scale.
	d = f16(b)
	for j := range 16 {
		lo, hi := idx[j], idx[j+16]
		if d != 0 {
			lo, hi = byte(iq4Nearest(x[j]/d)), byte(iq4Nearest(x[j+16]/d))
		}
		b[2+j] = lo | hi<<4
	}
}

func quantIQ4XS(x []float32, b []byte) {
	var idx [32]byte
	var ds [8]float32
	var dmax float32
	for s := range 8 {
		ds[s] = iq4Fit(x[32*s:32*s+32], idx[:])
		if a := float32(math.Abs(float64(ds[s]))); a > dmax {
			dmax = a
		}
	}
	// One scale per block: d·(ls−32) with ls in 0..63, so d = dmax/32
	// covers every sub-block's scale at its sign.
	d := dmax / 32
	putF16(b, d)
	d = f16(b)
	var sh uint16
	clear(b[4:8])
	for s := range 8 {
		l := 32
		if d != 0 {
			l = int(math.Round(float64(ds[s]/d))) + 32
			l = min(63, max(0, l))
		}
		b[4+s/2] |= byte(l&0xf) << (4 * (s % 2))
		sh |= uint16(l>>4) << (2 * s)
		dl := d * float32(l-32)
		q := b[8+16*s:]
		for j := range 16 {
			var lo, hi byte
			if dl != 0 {
				lo, hi = byte(iq4Nearest(x[32*s+j]/dl)), byte(iq4Nearest(x[32*s+j+16]/dl))
			}
			q[j] = lo | hi<<4
		}
	}
	binary.LittleEndian.PutUint16(b[2:], sh)
}

func dotIQ4NLQ8_0Generic(n int, w, x []byte) float32 {
	return dotTableQ8_0(n, w, x, 2, &iq4Values, f16)
}

// dotTableQ8_0 is the dot product of blocks of 32 four-bit indices into
// table (a block: hb bytes of scale, decoded by scale, then IQ4_NL's 16
// bytes of nibbles) against Q8_0 activations: per block
// float(Σ table[w]·x.qs)·scale(w)·x.d. IQ4_NL and MXFP4 differ only in
// their tables and scales.
func dotTableQ8_0(n int, w, x []byte, hb int, table *[16]int8, scale func([]byte) float32) float32 {
	var sum float32
	bs := hb + 16
	for i := 0; i < n/qk; i++ {
		wb, xb := w[i*bs:(i+1)*bs], x[i*34:i*34+34]
		s := 0
		for j := range 16 {
			s += int(table[wb[hb+j]&0xf]) * int(int8(xb[2+j]))
			s += int(table[wb[hb+j]>>4]) * int(int8(xb[18+j]))
		}
		sum += float32(s) * scale(wb) * f16(xb)
	}
	return sum
}

func dotIQ4XSQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*136:i*136+136], x[i*292:i*292+292]
		dy, qs := q8K(xb)
		isum := 0
		for s := range 8 {
			q := wb[8+16*s:]
			t := 0
			for j := range 16 {
				t += int(iq4Values[q[j]&0xf]) * int(int8(qs[32*s+j]))
				t += int(iq4Values[q[j]>>4]) * int(int8(qs[32*s+j+16]))
			}
			isum += iq4XSScale(wb, s) * t
		}
		sum += dy * f16(wb) * float32(isum)
	}
	return sum
}
