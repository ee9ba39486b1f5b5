package kernel

import (
	"encoding/binary"
	"math"
)

// The 32-element block formats (ggml-common.h):
//
//	block_q4_0 { d f16; qs [16]u8 }           x = (q-8)·d
//	block_q4_1 { d, m f16; qs [16]u8 }        x = q·d + m
//	block_q5_0 { d f16; qh u32; qs [16]u8 }   x = (q-16)·d, q's bit 4 in qh
//	block_q5_1 { d, m f16; qh u32; qs [16]u8 } x = q·d + m
//	block_q8_0 { d f16; qs [32]i8 }           x = q·d
//	block_q8_1 { d, s f16; qs [32]i8 }        x = q·d, s = d·Σq
//
// In the 4- and 5-bit formats element j (j < 16) is the low nibble of
// qs[j] and element j+16 its high nibble.

const qk = 32 // elements per block of the legacy formats

// nearestInt rounds to the nearest integer, ties to even, as ggml's
// nearest_int does for the magnitudes quantizers use.
func nearestInt(f float32) int {
	if f > -1<<22 && f < 1<<22 {
		// Adding 1.5·2²³ leaves the rounded integer in the mantissa (the
		// float32 addition rounds to nearest even); ggml's trick.
		return int(f+12582912) - 12582912
	}
	return int(math.RoundToEven(float64(f)))
}

func dequantQ4_0(b []byte, y []float32) {
	d := f16(b)
	qs := b[2:18]
	for j := 0; j < 16; j++ {
		y[j] = float32(int(qs[j]&0xf)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

func dequantQ4_1(b []byte, y []float32) {
	d, m := f16(b), f16(b[2:])
	qs := b[4:20]
	for j := 0; j < 16; j++ {
		y[j] = float32(float32(qs[j]&0xf)*d) + m
		y[j+16] = float32(float32(qs[j]>>4)*d) + m
	}
}

func dequantQ5_0(b []byte, y []float32) {
	d := f16(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	qs := b[6:22]
	for j := 0; j < 16; j++ {
		h0 := byte(qh>>j<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(int(qs[j]&0xf|h0)-16) * d
		y[j+16] = float32(int(qs[j]>>4|h1)-16) * d
	}
}

func dequantQ5_1(b []byte, y []float32) {
	d, m := f16(b), f16(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	qs := b[8:24]
	for j := 0; j < 16; j++ {
		h0 := byte(qh>>j<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(float32(qs[j]&0xf|h0)*d) + m
		y[j+16] = float32(float32(qs[j]>>4|h1)*d) + m
	}
}

func dequantQ8_0(b []byte, y []float32) {
	d := f16(b)
	for j, q := range b[2:34] {
		y[j] = float32(int8(q)) * d
	}
}

func dequantQ8_1(b []byte, y []float32) {
	d := f16(b)
	for j, q := range b[4:36] {
		y[j] = float32(int8(q)) * d
	}
}

// absMax returns the element of largest magnitude (with its sign) and that
// magnitude.
func absMax(x []float32) (max, amax float32) {
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, max = a, v
		}
	}
	return max, amax
}

func minMax(x []float32) (lo, hi float32) {
	lo, hi = x[0], x[0]
	for _, v := range x[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func inv(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// quantQ4_0 follows ggml's quantize_row_q4_0_ref: the element of largest
// magnitude maps to -8, the rest round to nearest.
func quantQ4_0(x []float32, b []byte) {
	max, _ := absMax(x[:qk])
	d := max / -8
	id := inv(d)
	putF16(b, d)
	for j := 0; j < 16; j++ {
		q0 := min(15, int(int8(x[j]*id+8.5)))
		q1 := min(15, int(int8(x[j+16]*id+8.5)))
		b[2+j] = byte(q0) | byte(q1)<<4
	}
}

// quantQ4_1 follows quantize_row_q4_1_ref: 16 levels from the block's min to
// its max.
func quantQ4_1(x []float32, b []byte) {
	lo, hi := minMax(x[:qk])
	d := (hi - lo) / 15
	id := inv(d)
	putF16(b, d)
	putF16(b[2:], lo)
	for j := 0; j < 16; j++ {
		q0 := min(15, int(int8((x[j]-lo)*id+0.5)))
		q1 := min(15, int(int8((x[j+16]-lo)*id+0.5)))
		b[4+j] = byte(q0) | byte(q1)<<4
	}
}

// quantQ5_0 follows quantize_row_q5_0_ref.
func quantQ5_0(x []float32, b []byte) {
	max, _ := absMax(x[:qk])
	d := max / -16
	id := inv(d)
	putF16(b, d)
	var qh uint32
	for j := 0; j < 16; j++ {
		q0 := min(31, int(int8(x[j]*id+16.5)))
		q1 := min(31, int(int8(x[j+16]*id+16.5)))
		b[6+j] = byte(q0&0xf) | byte(q1&0xf)<<4
		qh |= uint32(q0>>4&1) << j
		qh |= uint32(q1>>4&1) << (j + 16)
	}
	binary.LittleEndian.PutUint32(b[2:], qh)
}

// quantQ5_1 follows quantize_row_q5_1_ref.
func quantQ5_1(x []float32, b []byte) {
	lo, hi := minMax(x[:qk])
	d := (hi - lo) / 31
	id := inv(d)
	putF16(b, d)
	putF16(b[2:], lo)
	var qh uint32
	for j := 0; j < 16; j++ {
		q0 := min(31, int(uint8((x[j]-lo)*id+0.5)))
		q1 := min(31, int(uint8((x[j+16]-lo)*id+0.5)))
		b[8+j] = byte(q0&0xf) | byte(q1&0xf)<<4
		qh |= uint32(q0>>4&1) << j
		qh |= uint32(q1>>4&1) << (j + 16)
	}
	binary.LittleEndian.PutUint32(b[4:], qh)
}

// quantQ8_0 follows quantize_row_q8_0_ref: d = amax/127, q = round(x/d).
func quantQ8_0(x []float32, b []byte) {
	x, q := x[:qk], b[2:34]
	var amax float32
	for _, v := range x {
		if a := math.Float32frombits(math.Float32bits(v) & 0x7fffffff); a > amax {
			amax = a
		}
	}
	d := amax / 127
	id := inv(d)
	putF16(b, d)
	for j, v := range x {
		q[j] = byte(int8(roundAway(v * id)))
	}
}

// quantQ8_1 follows quantize_row_q8_1_ref; s = d·Σq.
func quantQ8_1(x []float32, b []byte) {
	_, amax := absMax(x[:qk])
	d := amax / 127
	id := inv(d)
	sum := 0
	for j, v := range x[:qk] {
		q := int8(roundAway(v * id))
		b[4+j] = byte(q)
		sum += int(q)
	}
	putF16(b, d)
	putF16(b[2:], float32(sum)*d)
}

// roundAway is C's roundf: halves round away from zero. In float64 the
// sum is exact, so truncating it rounds correctly.
func roundAway(f float32) int {
	g := float64(f)
	return int(g + math.Copysign(0.5, g))
}
