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
func q8K(xb []byte) (d float32, qs []byte) {
	return math.Float32frombits(binary.LittleEndian.Uint32(xb)), xb[4:260]
}

func bsum(xb []byte, j int) int { return int(int16(binary.LittleEndian.Uint16(xb[260+2*j:]))) }

// dotSub returns Σ lv[e]·q8[e] over e in [lo, hi).
func dotSub(lv *[qkK]int8, qs []byte, lo, hi int) int {
	s := 0
	for e := lo; e < hi; e++ {
		s += int(lv[e]) * int(int8(qs[e]))
	}
	return s
}

func dotQ2KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	var lv [qkK]int8
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*84:i*84+84], x[i*292:i*292+292]
		dy, qs := q8K(xb)
		sc, q2 := wb[0:16], wb[16:80]
		for e := range qkK {
			lv[e] = int8(q2[32*(e/128)+e%32] >> (2 * (e % 128 / 32)) & 3)
		}
		isum, msum := 0, 0
		for sb := range 16 {
			msum += bsum(xb, sb) * int(sc[sb]>>4)
			isum += int(sc[sb]&0xf) * dotSub(&lv, qs, 16*sb, 16*sb+16)
		}
		sum += dy*f16(wb[80:])*float32(isum) - dy*f16(wb[82:])*float32(msum)
	}
	return sum
}

func dotQ3KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	var lv [qkK]int8
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*110:i*110+110], x[i*292:i*292+292]
		dy, qs := q8K(xb)
		hm, q3, sc := wb[0:32], wb[32:96], wb[96:108]
		for e := range qkK {
			j := e % 128 / 32
			q := int8(q3[32*(e/128)+e%32] >> (2 * j) & 3)
			if hm[e%32]&(1<<(4*(e/128)+j)) == 0 {
				q -= 4
			}
			lv[e] = q
		}
		isum := 0
		for sb := range 16 {
			isum += scaleQ3K(sb, sc) * dotSub(&lv, qs, 16*sb, 16*sb+16)
		}
		sum += dy * f16(wb[108:]) * float32(isum)
	}
	return sum
}

func dotQ4KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	var lv [qkK]int8
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*144:i*144+144], x[i*292:i*292+292]
		dy, qs := q8K(xb)
		sc, q4 := wb[4:16], wb[16:144]
		for c := range 4 {
			for l := range 32 {
				v := q4[32*c+l]
				lv[64*c+l], lv[64*c+32+l] = int8(v&0xf), int8(v>>4)
			}
		}
		isum, msum := 0, 0
		for sb := range 8 {
			s, m := scaleMinK4(sb, sc)
			msum += int(m) * (bsum(xb, 2*sb) + bsum(xb, 2*sb+1))
			isum += int(s) * dotSub(&lv, qs, 32*sb, 32*sb+32)
		}
		sum += dy*f16(wb)*float32(isum) - dy*f16(wb[2:])*float32(msum)
	}
	return sum
}

func dotQ5KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	var lv [qkK]int8
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*176:i*176+176], x[i*292:i*292+292]
		dy, qs := q8K(xb)
		sc, qh, q5 := wb[4:16], wb[16:48], wb[48:176]
		for c := range 4 {
			for l := range 32 {
				v, h := q5[32*c+l], qh[l]
				lv[64*c+l] = int8(v&0xf | (h>>(2*c)&1)<<4)
				lv[64*c+32+l] = int8(v>>4 | (h>>(2*c+1)&1)<<4)
			}
		}
		isum, msum := 0, 0
		for sb := range 8 {
			s, m := scaleMinK4(sb, sc)
			msum += int(m) * (bsum(xb, 2*sb) + bsum(xb, 2*sb+1))
			isum += int(s) * dotSub(&lv, qs, 32*sb, 32*sb+32)
		}
		sum += dy*f16(wb)*float32(isum) - dy*f16(wb[2:])*float32(msum)
	}
	return sum
}

func dotQ6KQ8KGeneric(n int, w, x []byte) float32 {
	var sum float32
	var lv [qkK]int8
	for i := 0; i < n/qkK; i++ {
		wb, xb := w[i*210:i*210+210], x[i*292:i*292+292]
		dy, qs := q8K(xb)
		ql, qh, sc := wb[0:128], wb[128:192], wb[192:208]
		for e := range qkK {
			lv[e] = int8(q6KLevel(ql, qh, e))
		}
		isum := 0
		for sb := range 16 {
			isum += int(int8(sc[sb])) * dotSub(&lv, qs, 16*sb, 16*sb+16)
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
