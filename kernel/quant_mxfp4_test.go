package kernel

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// TestMXFP4MatchesGGML quantizes the blocks of testdata/mxfp4/input.f32
// (Gaussian blocks from 1e-4 to 1e3, amax at and an ulp or two around
// powers of two, ties between levels, clipping, zeros) and compares the
// bytes with those ggml's quantize_row_mxfp4_ref wrote for them
// (testdata/mxfp4/README.md).
func TestMXFP4MatchesGGML(t *testing.T) {
	in, err := os.ReadFile("testdata/mxfp4/input.f32")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/mxfp4/ggml.mxfp4")
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, len(in)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(in[4*i:]))
	}
	if len(x)%32 != 0 || len(want) != len(x)/32*17 {
		t.Fatalf("%d floats, %d bytes of blocks", len(x), len(want))
	}
	got := make([]byte, len(want))
	if err := Quantize(tensor.MXFP4, x, got); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < len(got)/17; b++ {
		if g, w := got[17*b:17*b+17], want[17*b:17*b+17]; !bytes.Equal(g, w) {
			t.Errorf("block %d: % x, ggml % x", b, g, w)
		}
	}
}

// TestE8M0Half checks the scale against its definition for every byte.
func TestE8M0Half(t *testing.T) {
	for e := range 256 {
		if got, want := e8m0Half(byte(e)), float32(math.Ldexp(1, e-128)); got != want {
			t.Errorf("e=%d: %g, want 2^%d = %g", e, got, e-128, want)
		}
	}
}

// TestMXFP4Dequant checks dequantization against the spec's formula
// kv·2^(e−128) (in float64, exact) for every e and random codes.
func TestMXFP4Dequant(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 39))
	b := make([]byte, 256*17)
	for e := range 256 {
		b[17*e] = byte(e)
		for j := 1; j < 17; j++ {
			b[17*e+j] = byte(r.Uint32())
		}
	}
	y := dequantized(t, tensor.MXFP4, b, 256*32)
	e2m1 := [8]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6} // the spec's E2M1 magnitudes
	for i, got := range y {
		blk, c := i/32, i%32
		code := b[17*blk+1+c%16] >> (4 * (c / 16)) & 15
		v := e2m1[code&7] * math.Ldexp(1, blk-127)
		if code&8 != 0 {
			v = -v
		}
		if got != float32(v) {
			t.Fatalf("block e=%d column %d (code %d): %g, want %g", blk, c, code, got, v)
		}
	}
}

// TestMXFP4Exact: a block whose values are levels times 2^(e−128), with
// one of magnitude 8 or 12 (which sets e), comes back in the same bytes.
func TestMXFP4Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 40))
	for range 200 {
		b := make([]byte, 17)
		b[0] = byte(105 + r.IntN(40))
		for j := 1; j < 17; j++ {
			lo, hi := byte(r.IntN(16)), byte(r.IntN(16))
			if lo == 8 { // −0 comes back as +0
				lo = 0
			}
			if hi == 8 {
				hi = 0
			}
			b[j] = lo | hi<<4
		}
		b[1+r.IntN(16)] = 7 | 15<<4 // 12 and −12
		x := dequantized(t, tensor.MXFP4, b, 32)
		got := quantized(t, tensor.MXFP4, x)
		if !bytes.Equal(got, b) {
			t.Fatalf("% x came back as % x", b, got)
		}
	}
}

// TestMXFP4Edges: blocks below ggml's range get the smallest exponent
// (ggml's conversion to uint8 is undefined there), NaNs are skipped in
// the maximum and coded as zero, and ties go to the smaller magnitude.
func TestMXFP4Edges(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    float32 // x[0]; x[1] = 1 sets d = 2^−3 unless tiny
		tiny bool
		e    byte
		code byte
	}{
		{"tiny", 1e-39, true, 0, 0},
		{"nan", float32(math.NaN()), false, 125, 0},
		{"half", 0.0625, false, 125, 0},   // 0.5·d: 0 before 1
		{"-half", -0.0625, false, 125, 0}, // the zero of code 0, not 8
		{"2.5", 0.3125, false, 125, 2},    // 2.5·d: 2 before 3
		{"-10", -1.25, false, 125, 14},    // −10·d: −8 before −12
		{"clip", -1.9, false, 125, 15},    // past −12·d: −12
		{"-0", float32(math.Copysign(0, -1)), false, 125, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := make([]float32, 32)
			x[0] = tc.x
			if !tc.tiny {
				x[1] = 1
			}
			b := quantized(t, tensor.MXFP4, x)
			if b[0] != tc.e || b[1]&15 != tc.code {
				t.Errorf("e %d code %d, want e %d code %d", b[0], b[1]&15, tc.e, tc.code)
			}
		})
	}
}

// mxfp4Blocks returns rows × cols MXFP4 weights, row r's blocks all with
// exponent e(r) and random codes.
func mxfp4Blocks(r *rand.Rand, rows, cols int, e func(row int) byte) []byte {
	w := make([]byte, rows*cols/32*17)
	for i := 0; i < len(w); i += 17 {
		w[i] = e(i / 17 / (cols / 32))
		for j := 1; j < 17; j++ {
			w[i+j] = byte(r.Uint32())
		}
	}
	return w
}

// TestMXFP4Scales runs every implementation's MXFP4 kernels over blocks
// of every exponent up to 207 (from the subnormal 2^−128 on; larger ones
// overflow float32 in the products): the dot products against the
// generic one, the x16 kernels against x16Generic bit for bit (they
// round d·dx and the FMA alike, subnormals included).
func TestMXFP4Scales(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 41))
	const rows, cols = 208, 96
	w := mxfp4Blocks(r, rows, cols, func(row int) byte { return byte(row) })
	rb := cols / 32 * 17
	x := randNormal(r, 3*cols, 1)
	xq := quantized(t, tensor.Q8_0, x)
	for _, impl := range Impls() {
		t.Run(impl.Name, func(t *testing.T) {
			dot := impl.Q[tensor.MXFP4]
			for row := range rows {
				got, want := dot(cols, w[row*rb:], xq), Generic.Q[tensor.MXFP4](cols, w[row*rb:], xq)
				mag := float64(Generic.F[tensor.F32](f32bytes(absAll(dequantized(t, tensor.MXFP4, w[row*rb:(row+1)*rb], cols))), absAll(dequantized(t, tensor.Q8_0, xq[:cols/32*34], cols))))
				if math.Abs(float64(got-want)) > 1e-4*mag {
					t.Errorf("e=%d: dot %g, generic %g", row, got, want)
				}
			}
			kern := impl.X16[tensor.MXFP4]
			if kern == nil {
				return
			}
			tb := X16TileBytes(tensor.MXFP4, cols)
			tiles := make([]byte, rows/X16Rows*tb)
			for rt := range rows / X16Rows {
				if err := PackX16(tensor.MXFP4, w, rb, rt*X16Rows, cols, tiles[rt*tb:]); err != nil {
					t.Fatal(err)
				}
			}
			var a XPack
			if err := a.Reset(tensor.MXFP4, 3, cols); err != nil {
				t.Fatal(err)
			}
			a.PackRows(x, 0, 3)
			got, want := make([]float32, 3*rows), make([]float32, 3*rows)
			kern(tensor.MXFP4, tiles, rows/X16Rows, &a, 0, got, rows, X16Cols{})
			x16Generic(tensor.MXFP4, tiles, rows/X16Rows, &a, 0, want, rows, X16Cols{})
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Errorf("x16 act %d e=%d: %g, generic %g", i/rows, i%rows, got[i], want[i])
				}
			}
		})
	}
}
