package kernel

import (
	"encoding/binary"
	"math"
)

// Generic dot products: the specification of every fast dot kernel. Each
// takes n elements of a weight row w (its format's blocks) and an
// activation row x quantized to the format's vec-dot type, sums integer
// products inside each block and scales by the two block scales, as ggml's
// ggml_vec_dot_*_ref do.

func dotQ4_0Q8_0Generic(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		wb, xb := w[i*18:i*18+18], x[i*34:i*34+34]
		s := 0
		for j := 0; j < 16; j++ {
			s += (int(wb[2+j]&0xf) - 8) * int(int8(xb[2+j]))
			s += (int(wb[2+j]>>4) - 8) * int(int8(xb[18+j]))
		}
		sum += float32(s) * f16(wb) * f16(xb)
	}
	return sum
}

func dotQ4_1Q8_1Generic(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		wb, xb := w[i*20:i*20+20], x[i*36:i*36+36]
		s := 0
		for j := 0; j < 16; j++ {
			s += int(wb[4+j]&0xf) * int(int8(xb[4+j]))
			s += int(wb[4+j]>>4) * int(int8(xb[20+j]))
		}
		sum += f16(wb)*f16(xb)*float32(s) + f16(wb[2:])*f16(xb[2:])
	}
	return sum
}

func dotQ5_0Q8_0Generic(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		wb, xb := w[i*22:i*22+22], x[i*34:i*34+34]
		qh := binary.LittleEndian.Uint32(wb[2:])
		s := 0
		for j := 0; j < 16; j++ {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			s += (int(wb[6+j]&0xf|h0) - 16) * int(int8(xb[2+j]))
			s += (int(wb[6+j]>>4|h1) - 16) * int(int8(xb[18+j]))
		}
		sum += float32(s) * f16(wb) * f16(xb)
	}
	return sum
}

func dotQ5_1Q8_1Generic(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		wb, xb := w[i*24:i*24+24], x[i*36:i*36+36]
		qh := binary.LittleEndian.Uint32(wb[4:])
		s := 0
		for j := 0; j < 16; j++ {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			s += int(wb[8+j]&0xf|h0) * int(int8(xb[4+j]))
			s += int(wb[8+j]>>4|h1) * int(int8(xb[20+j]))
		}
		sum += f16(wb)*f16(xb)*float32(s) + f16(wb[2:])*f16(xb[2:])
	}
	return sum
}

func dotQ8_0Q8_0Generic(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		wb, xb := w[i*34:i*34+34], x[i*34:i*34+34]
		s := 0
		for j := 2; j < 34; j++ {
			s += int(int8(wb[j])) * int(int8(xb[j]))
		}
		sum += float32(s) * f16(wb) * f16(xb)
	}
	return sum
}

// q8K splits a Q8_K block into its scale, quants and 16-element sums.
func q8K(xb []byte) (d float32, qs []byte, bsum func(j int) int) {
	d = math.Float32frombits(binary.LittleEndian.Uint32(xb))
	return d, xb[4:260], func(j int) int { return int(int16(binary.LittleEndian.Uint16(xb[260+2*j:]))) }
}

// dotLevels returns Σ q8[i]·lv(i) over sub-block sb of size sub.
func dotLevels(qs []byte, sb, sub int, lv func(e int) int) int {
	s := 0
	for e := sb * sub; e < (sb+1)*sub; e++ {
		s += int(int8(qs[e])) * lv(e)
	}
	return s
}

func dotQ2KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*84:i*84+84], x[i*292:i*292+292]
		dy, qs, bsum := q8K(xb)
		sc, q2 := wb[0:16], wb[16:80]
		isum, msum := 0, 0
		for sb := range 16 {
			msum += bsum(sb) * int(sc[sb]>>4)
			isum += int(sc[sb]&0xf) * dotLevels(qs, sb, 16, func(e int) int {
				return int(q2[32*(e/128)+e%32] >> (2 * (e % 128 / 32)) & 3)
			})
		}
		sum += dy*f16(wb[80:])*float32(isum) - dy*f16(wb[82:])*float32(msum)
	}
	return sum
}

func dotQ3KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*110:i*110+110], x[i*292:i*292+292]
		dy, qs, _ := q8K(xb)
		hm, q3, sc := wb[0:32], wb[32:96], wb[96:108]
		isum := 0
		for sb := range 16 {
			isum += scaleQ3K(sb, sc) * dotLevels(qs, sb, 16, func(e int) int {
				j := e % 128 / 32
				q := int(q3[32*(e/128)+e%32] >> (2 * j) & 3)
				if hm[e%32]&(1<<(4*(e/128)+j)) == 0 {
					q -= 4
				}
				return q
			})
		}
		sum += dy * f16(wb[108:]) * float32(isum)
	}
	return sum
}

func dotQ4KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*144:i*144+144], x[i*292:i*292+292]
		dy, qs, bsum := q8K(xb)
		sc, q4 := wb[4:16], wb[16:144]
		isum, msum := 0, 0
		for sb := range 8 {
			s, m := scaleMinK4(sb, sc)
			msum += int(m) * (bsum(2*sb) + bsum(2*sb+1))
			isum += int(s) * dotLevels(qs, sb, 32, func(e int) int {
				return int(q4[32*(e/64)+e%32] >> (4 * (e % 64 / 32)) & 0xf)
			})
		}
		sum += dy*f16(wb)*float32(isum) - dy*f16(wb[2:])*float32(msum)
	}
	return sum
}

func dotQ5KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*176:i*176+176], x[i*292:i*292+292]
		dy, qs, bsum := q8K(xb)
		sc, qh, q5 := wb[4:16], wb[16:48], wb[48:176]
		isum, msum := 0, 0
		for sb := range 8 {
			s, m := scaleMinK4(sb, sc)
			msum += int(m) * (bsum(2*sb) + bsum(2*sb+1))
			isum += int(s) * dotLevels(qs, sb, 32, func(e int) int {
				q := int(q5[32*(e/64)+e%32] >> (4 * (e % 64 / 32)) & 0xf)
				return q | int(qh[e%32]>>(e/32)&1)<<4
			})
		}
		sum += dy*f16(wb)*float32(isum) - dy*f16(wb[2:])*float32(msum)
	}
	return sum
}

func dotQ6KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*210:i*210+210], x[i*292:i*292+292]
		dy, qs, _ := q8K(xb)
		ql, qh, sc := wb[0:128], wb[128:192], wb[192:208]
		isum := 0
		for sb := range 16 {
			isum += int(int8(sc[sb])) * dotLevels(qs, sb, 16, func(e int) int { return q6KLevel(ql, qh, e) })
		}
		sum += dy * f16(wb[208:]) * float32(isum)
	}
	return sum
}

// Float weight rows against F32 activations, accumulated in float32 in
// order (the reference; fast versions reassociate).

func dotF32Generic(w []byte, x []float32) float32 {
	var sum float32
	for i, v := range x {
		sum += math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) * v
	}
	return sum
}

func dotF16Generic(w []byte, x []float32) float32 {
	var sum float32
	for i, v := range x {
		sum += fp16Table[binary.LittleEndian.Uint16(w[2*i:])] * v
	}
	return sum
}

func dotBF16Generic(w []byte, x []float32) float32 {
	var sum float32
	for i, v := range x {
		sum += BF16ToFP32(binary.LittleEndian.Uint16(w[2*i:])) * v
	}
	return sum
}
