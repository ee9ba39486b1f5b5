package kernel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// TestScoresF16Blocks checks the active key-block score loops against
// their generic twin over head widths and block counts (odd ones take the
// loops' single-block tails), with bytes past the last block that must not
// be read and guard floats past the scores; and that four heads at once
// give the bits of four one-head calls.
func TestScoresF16Blocks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 4))
	nan := make([]byte, 64) // halves 0xffff: NaN if read into a score
	for i := range nan {
		nan[i] = 0xff
	}
	for _, width := range []int{1, 8, 40, 64, 80, 128, 256} {
		for _, nb := range []int{0, 1, 2, 3, 5, 40} {
			kb := append(quantized(t, tensor.F16, randNormal(r, nb*KeyBlock*width, 1)), nan...)
			q := randNormal(r, 4*width, 1)
			n := KeyBlock * nb
			want := make([]float32, n)
			scoresBlocksGeneric(want, nb, kb, q[:width], 0.125)
			got := make([]float32, n+1)
			got[n] = 42
			ScoresF16Blocks(got, nb, kb, q[:width], 0.125)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-5*(1+math.Abs(float64(want[i])))) {
					t.Fatalf("ScoresF16Blocks width %d blocks %d: s[%d] = %g, want %g", width, nb, i, got[i], want[i])
				}
			}
			if got[n] != 42 {
				t.Fatalf("ScoresF16Blocks width %d blocks %d: wrote past the scores", width, nb)
			}
			sn := n + 3
			got4 := make([]float32, 4*sn)
			for i := range got4 {
				got4[i] = 42
			}
			ScoresF16Blocks4(got4, nb, kb, q, 0.125)
			for h := range 4 {
				one := make([]float32, n)
				ScoresF16Blocks(one, nb, kb, q[h*width:(h+1)*width], 0.125)
				for i := range one {
					if math.Float32bits(got4[h*sn+i]) != math.Float32bits(one[i]) {
						t.Fatalf("ScoresF16Blocks4 width %d blocks %d head %d: s[%d] = %g, one head gives %g", width, nb, h, i, got4[h*sn+i], one[i])
					}
				}
				for i := n; i < sn; i++ {
					if got4[h*sn+i] != 42 {
						t.Fatalf("ScoresF16Blocks4 width %d blocks %d head %d: wrote slot %d past its scores", width, nb, h, i)
					}
				}
			}
		}
	}
}

// TestMixF16 checks the active strided value loop against its generic
// twin over head widths the assembly takes (multiples of 32 and 64) and
// ones it leaves to the twin, with the bytes between rows and past the
// last row holding other heads' data that must not be read into the
// result, and a guard float past the output.
func TestMixF16(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 3))
	for _, width := range []int{8, 16, 40, 64, 80, 96, 128, 256} {
		for _, n := range []int{0, 1, 3, 17, 300} {
			for _, pad := range []int{0, 2 * width, 6 * width} { // other heads' halves between rows
				stride := 2*width + pad
				kv := quantized(t, tensor.F16, randNormal(r, (n*stride+pad)/2+width, 1))
				w := randNormal(r, n, 1)
				o := randNormal(r, width+1, 1) // MixF16 overwrites, whatever o held
				o[width] = 42
				wo := make([]float32, width)
				MixF16(o[:width], kv, stride, w)
				mixF16Generic(wo, kv, stride, w)
				for j := range wo {
					if d := math.Abs(float64(o[j] - wo[j])); d > 1e-5*(1+math.Abs(float64(wo[j]))) {
						t.Fatalf("MixF16 width %d n %d stride %d: o[%d] = %g, want %g", width, n, stride, j, o[j], wo[j])
					}
				}
				if o[width] != 42 {
					t.Fatalf("MixF16 width %d n %d: wrote past the output", width, n)
				}
			}
		}
	}
}

func TestStridedBounds(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"scores past the end", func() { ScoresF16Blocks(make([]float32, 48), 3, make([]byte, 3*32*16-1), make([]float32, 16), 1) }},
		{"scores too few slots", func() { ScoresF16Blocks(make([]float32, 47), 3, make([]byte, 3*32*16), make([]float32, 16), 1) }},
		{"scores x4 too few slots", func() { ScoresF16Blocks4(make([]float32, 4*31), 2, make([]byte, 2*32*16), make([]float32, 64), 1) }},
		{"scores no dimensions", func() { ScoresF16Blocks(make([]float32, 16), 1, make([]byte, 64), nil, 1) }},
		{"mix past the end", func() { MixF16(make([]float32, 16), make([]byte, 64), 40, make([]float32, 2)) }},
		{"mix x4 past the end", func() { MixF16x4(make([]float32, 64), 2, make([]byte, 64), 40, make([]float32, 8)) }},
		{"mix x4 too few weights", func() { MixF16x4(make([]float32, 64), 3, make([]byte, 1000), 40, make([]float32, 8)) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			c.f()
		}()
	}
}

// TestMixF16x4: four heads at once give the bits of four MixF16 calls
// (whatever the tier), each head's weights read only up to n and nothing
// written past the outputs.
func TestMixF16x4(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 5))
	for _, width := range []int{8, 16, 40, 64, 96, 128, 256} {
		for _, n := range []int{0, 1, 5, 130} {
			for _, stride := range []int{2 * width, 2*width*8 + 2*width} {
				kv := quantized(t, tensor.F16, randNormal(r, (n*stride)/2+width, 1))
				wn := n + 3
				w := randNormal(r, 4*wn, 1)
				for j := range 4 { // slots past n must not be read
					for i := n; i < wn; i++ {
						w[j*wn+i] = float32(math.NaN())
					}
				}
				got := randNormal(r, 4*width+1, 1) // overwritten, whatever it held
				got[4*width] = 42
				MixF16x4(got[:4*width], n, kv, stride, w)
				for j := range 4 {
					want := make([]float32, width)
					MixF16(want, kv, stride, w[j*wn:j*wn+n])
					for c := range want {
						if math.Float32bits(got[j*width+c]) != math.Float32bits(want[c]) {
							t.Fatalf("width %d n %d head %d: o[%d] = %g, MixF16 gives %g", width, n, j, c, got[j*width+c], want[c])
						}
					}
				}
				if got[4*width] != 42 {
					t.Fatalf("width %d n %d: wrote past the outputs", width, n)
				}
			}
		}
	}
}

// TestMixF16Blocks: the 64-column loop gives the bits of the 32-column one
// (each column sums the rows in the same order).
func TestMixF16Blocks(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 1))
	for _, width := range []int{64, 96, 128, 256} {
		n, stride := 37, 2*width+64
		kv := quantized(t, tensor.F16, randNormal(r, n*stride/2+width, 1))
		w := randNormal(r, n, 1)
		got := make([]float32, width)
		MixF16(got, kv, stride, w)
		want := make([]float32, width) // 32 columns at a time, as before
		for c := 0; c+32 <= width; c += 32 {
			MixF16(want[c:c+32], kv[2*c:], stride, w)
		}
		for j := range want {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("width %d: o[%d] = %g, 32-column blocks give %g", width, j, got[j], want[j])
			}
		}
	}
}

// TestMixQ8_0x4 checks the active Q8_0 value loop against its generic twin
// over head widths the assembly takes (multiples of 64) and ones it leaves
// to the twin, with other heads' bytes between rows that must not be read,
// weight slots past n holding NaN, and a guard float past the outputs.
func TestMixQ8_0x4(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 6))
	for _, width := range []int{32, 64, 96, 128, 256} {
		rb := width / 32 * 34
		for _, n := range []int{0, 1, 5, 130} {
			for _, stride := range []int{rb, 8 * rb} {
				kv := quantized(t, tensor.Q8_0, randNormal(r, (n*stride)/34*32+width, 1))
				wn := n + 3
				w := randNormal(r, 4*wn, 1)
				for j := range 4 {
					for i := n; i < wn; i++ {
						w[j*wn+i] = float32(math.NaN())
					}
				}
				got := randNormal(r, 4*width+1, 1) // overwritten, whatever it held
				got[4*width] = 42
				MixQ8_0x4(got[:4*width], n, kv, stride, w)
				want := make([]float32, 4*width)
				mixQ8x4Generic(want, n, kv, stride, w)
				for c := range want {
					if d := math.Abs(float64(got[c] - want[c])); !(d <= 1e-5*(1+math.Abs(float64(want[c])))) {
						t.Fatalf("width %d n %d stride %d: o[%d] = %g, want %g", width, n, stride, c, got[c], want[c])
					}
				}
				if got[4*width] != 42 {
					t.Fatalf("width %d n %d: wrote past the outputs", width, n)
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"width not a multiple of 32", func() { MixQ8_0x4(make([]float32, 4*40), 1, make([]byte, 100), 50, make([]float32, 4)) }},
		{"rows past the end", func() { MixQ8_0x4(make([]float32, 4*64), 2, make([]byte, 100), 68, make([]float32, 8)) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			c.f()
		}()
	}
}

// TestScoresQ8Blocks4 checks the active Q8_0 key-block score loop against
// its generic twin, and the twin against scores computed from the keys'
// Q8_0 rows directly (PutKeyQ8's layout read back), with guard slots past
// the scores and bytes past the last block that must not be read.
func TestScoresQ8Blocks4(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, width := range []int{32, 64, 128} {
		bb, rb := KeyBlockQ8Bytes(width), width/32*34
		for _, nb := range []int{0, 1, 2, 3, 9} {
			kb := make([]byte, nb*bb+64)
			for i := nb * bb; i < len(kb); i++ {
				kb[i] = 0x7f // levels of 127 with NaN-free scales: would show in the sums
			}
			rows := make([][]byte, nb*KeyBlock)
			for p := range rows {
				rows[p] = quantized(t, tensor.Q8_0, randNormal(r, width, 1))[:rb]
				PutKeyQ8(kb[p/KeyBlock*bb:], p%KeyBlock, rows[p])
			}
			q := randNormal(r, 4*width, 1)
			sn := KeyBlock*nb + 3
			got, want := make([]float32, 4*sn), make([]float32, 4*sn)
			for i := range got {
				got[i], want[i] = 42, 42
			}
			ScoresQ8Blocks4(got, nb, kb, q, 0.125)
			scoresQ8x4Generic(want, nb, kb, q, 0.125)
			for h := range 4 {
				for p := range KeyBlock * nb {
					deq := make([]float32, width)
					if err := Dequantize(tensor.Q8_0, rows[p], deq); err != nil {
						t.Fatal(err)
					}
					var ref float64
					for j := range width {
						ref += float64(deq[j]) * float64(q[h*width+j])
					}
					ref *= 0.125
					g, w := float64(got[h*sn+p]), float64(want[h*sn+p])
					if math.Abs(g-w) > 1e-5*(1+math.Abs(w)) || math.Abs(w-ref) > 1e-4*(1+math.Abs(ref)) {
						t.Fatalf("width %d blocks %d head %d: s[%d] = %g, twin %g, from the rows %g", width, nb, h, p, g, w, ref)
					}
				}
				for i := KeyBlock * nb; i < sn; i++ {
					if got[h*sn+i] != 42 {
						t.Fatalf("width %d blocks %d head %d: wrote slot %d past its scores", width, nb, h, i)
					}
				}
			}
		}
	}
}
