package kernel

import (
	"encoding/binary"
	"math"
)

// The K-quant super-blocks of 256 elements (ggml-common.h):
//
//	block_q2_K { scales [16]u8; qs [64]u8; d, dmin f16 }            16×16, 2-bit q, 4-bit scale|min
//	block_q3_K { hmask [32]u8; qs [64]u8; scales [12]u8; d f16 }    16×16, 3-bit q, 6-bit scales
//	block_q4_K { d, dmin f16; scales [12]u8; qs [128]u8 }           8×32, 4-bit q, 6-bit scale, min
//	block_q5_K { d, dmin f16; scales [12]u8; qh [32]u8; qs [128]u8 } 8×32, 5-bit q
//	block_q6_K { ql [128]u8; qh [64]u8; scales [16]i8; d f16 }      16×16, 6-bit q, 8-bit scales
//	block_q8_K { d f32; qs [256]i8; bsums [16]i16 }                 activations; bsums = Σ of each 16

const qkK = 256

// scaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block
// (ggml's get_scale_min_k4).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// scaleQ3K unpacks the i-th 6-bit scale of a Q3_K block, minus 32.
func scaleQ3K(i int, s []byte) int {
	var lo byte
	if i < 8 {
		lo = s[i] & 0xf
	} else {
		lo = s[i-8] >> 4
	}
	hi := s[8+i%4] >> (2 * (i / 4)) & 3
	return int(lo|hi<<4) - 32
}

func dequantQ2K(b []byte, y []float32) {
	sc, qs := b[0:16], b[16:80]
	d, dmin := f16(b[80:]), f16(b[82:])
	for e := 0; e < qkK; e++ {
		s := sc[e/16]
		dl := d * float32(s&0xf)
		ml := dmin * float32(s>>4)
		q := qs[32*(e/128)+e%32] >> (2 * (e % 128 / 32)) & 3
		y[e] = float32(dl*float32(q)) - ml
	}
}

func dequantQ3K(b []byte, y []float32) {
	hm, qs, sc := b[0:32], b[32:96], b[96:108]
	d := f16(b[108:])
	for e := 0; e < qkK; e++ {
		dl := d * float32(scaleQ3K(e/16, sc))
		j := e % 128 / 32
		q := int(qs[32*(e/128)+e%32] >> (2 * j) & 3)
		if hm[e%32]&(1<<(4*(e/128)+j)) == 0 {
			q -= 4
		}
		y[e] = dl * float32(q)
	}
}

func dequantQ4K(b []byte, y []float32) {
	d, dmin := f16(b), f16(b[2:])
	sc, qs := b[4:16], b[16:144]
	for e := 0; e < qkK; e++ {
		s, m := scaleMinK4(e/32, sc)
		d1, m1 := d*float32(s), dmin*float32(m)
		q := qs[32*(e/64)+e%32] >> (4 * (e % 64 / 32)) & 0xf
		y[e] = float32(d1*float32(q)) - m1
	}
}

func dequantQ5K(b []byte, y []float32) {
	d, dmin := f16(b), f16(b[2:])
	sc, qh, qs := b[4:16], b[16:48], b[48:176]
	for e := 0; e < qkK; e++ {
		s, m := scaleMinK4(e/32, sc)
		d1, m1 := d*float32(s), dmin*float32(m)
		q := qs[32*(e/64)+e%32] >> (4 * (e % 64 / 32)) & 0xf
		q |= (qh[e%32] >> (e / 32) & 1) << 4
		y[e] = float32(d1*float32(q)) - m1
	}
}

// q6KLevel returns element e (0..255) of a Q6_K block as a signed level in
// [-32, 31].
func q6KLevel(ql, qh []byte, e int) int {
	n, r := e/128, e%128
	l, k := r%32, r/32 // k: which of the four 32-element quarters
	lo := ql[64*n+l+32*(k&1)] >> (4 * (k >> 1)) & 0xf
	hi := qh[32*n+l] >> (2 * k) & 3
	return int(lo|hi<<4) - 32
}

func dequantQ6K(b []byte, y []float32) {
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	d := f16(b[208:])
	for e := 0; e < qkK; e++ {
		y[e] = float32(d*float32(int8(sc[e/16]))) * float32(q6KLevel(ql, qh, e))
	}
}

func dequantQ8K(b []byte, y []float32) {
	d := math.Float32frombits(binary.LittleEndian.Uint32(b))
	for j, q := range b[4:260] {
		y[j] = d * float32(int8(q))
	}
}
