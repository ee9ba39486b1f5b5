package kernel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

func randNormal(r *rand.Rand, n int, sd float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * sd)
	}
	return x
}

// nrmse is ‖a-b‖/‖b‖.
func nrmse(a, b []float32) float64 {
	var num, den float64
	for i := range b {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// quantBound is the largest normalised RMS error accepted for a
// quantize→dequantize round trip of Gaussian data. A b-bit uniform
// quantizer over the block's range has RMS error ≈ range/(2^b·√12); for
// Gaussian blocks the range is about 4–6σ, giving the values below with
// some margin.
var quantBound = map[tensor.DType]float64{
	tensor.F32: 0, tensor.F16: 1e-3, tensor.BF16: 5e-3,
	tensor.Q8_0: 0.01, tensor.Q8_1: 0.01, tensor.Q8_K: 0.015,
	tensor.Q6_K: 0.04, tensor.Q5_0: 0.06, tensor.Q5_1: 0.05, tensor.Q5_K: 0.06,
	tensor.Q4_0: 0.12, tensor.Q4_1: 0.11, tensor.Q4_K: 0.12,
	tensor.Q3_K: 0.25, tensor.Q2_K: 0.45, tensor.IQ4_NL: 0.12, tensor.IQ4_XS: 0.12, tensor.MXFP4: 0.15,
}

func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dt := range SupportedTypes() {
		t.Run(dt.String(), func(t *testing.T) {
			bound, ok := quantBound[dt]
			if !ok {
				t.Fatalf("no error bound for %s", dt)
			}
			n := 4 * 256
			x := randNormal(r, n, 0.5)
			x[7] = 3 // an outlier in the first block
			nb64, _ := dt.RowBytes(int64(n))
			nb := int(nb64)
			b := make([]byte, nb+8)
			for i := nb; i < len(b); i++ {
				b[i] = 0xa5 // guard bytes
			}
			if err := Quantize(dt, x, b[:nb]); err != nil {
				t.Fatal(err)
			}
			for i := nb; i < len(b); i++ {
				if b[i] != 0xa5 {
					t.Fatalf("guard byte %d overwritten", i-nb)
				}
			}
			y := make([]float32, n)
			if err := Dequantize(dt, b[:nb], y); err != nil {
				t.Fatal(err)
			}
			if e := nrmse(y, x); e > bound {
				t.Errorf("round-trip NRMSE %.4f > bound %.4f", e, bound)
			} else {
				t.Logf("NRMSE %.5f (bound %.3f)", e, bound)
			}
			// A block of zeros must come back as zeros (no NaN from 0/0).
			z := make([]float32, dt.BlockSize())
			zb := make([]byte, dt.TypeSize())
			if err := Quantize(dt, z, zb); err != nil {
				t.Fatal(err)
			}
			if err := Dequantize(dt, zb, z); err != nil {
				t.Fatal(err)
			}
			for i, v := range z {
				if v != 0 {
					t.Fatalf("zero block element %d came back as %g", i, v)
				}
			}
		})
	}
}

func TestCodecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		dt   tensor.DType
		n    int
		nb   int
	}{
		{"partial block", tensor.Q4_0, 33, 36},
		{"short bytes", tensor.Q8_0, 32, 33},
		{"long bytes", tensor.Q4_K, 256, 145},
		{"unsupported", tensor.IQ2_XXS, 256, 66},
		{"unknown", tensor.DType(99), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Dequantize(tc.dt, make([]byte, tc.nb), make([]float32, tc.n)); err == nil {
				t.Error("Dequantize: no error")
			} else {
				t.Log(err)
			}
			if err := Quantize(tc.dt, make([]float32, tc.n), make([]byte, tc.nb)); err == nil {
				t.Error("Quantize: no error")
			}
		})
	}
}

// TestQuantRowQ8_0 checks the row quantizer (assembly on amd64) against
// the block reference byte for byte, including ties, zeros and extremes.
func TestQuantRowQ8_0(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, nb := range []int{1, 2, 7, 128} {
		x := randNormal(r, nb*32, 2)
		x[0] = 127 // a tie after scaling: 127·(1/(127/127))… and exact halves below
		if nb > 1 {
			for i := 32; i < 64; i++ {
				x[i] = float32(i-48) * 0.5 // amax 8 → id 127/8: many exact halves? keep as a pattern
			}
			clear(x[len(x)-32:]) // a zero block
		}
		x[5] = -x[6]
		want := make([]byte, nb*34)
		for i := range nb {
			quantQ8_0(x[i*32:(i+1)*32], want[i*34:])
		}
		got := make([]byte, nb*34+4)
		quantRowQ8_0(x, got[:nb*34])
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("nb=%d: byte %d (block %d) = %#x, want %#x", nb, i, i/34, got[i], want[i])
			}
		}
		for _, g := range got[nb*34:] {
			if g != 0 {
				t.Fatal("wrote past the row")
			}
		}
	}
	// Exact halves: x·id lands on k+0.5 for these values.
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i) - 15.5
	}
	x[31] = 127
	want, got := make([]byte, 34), make([]byte, 34)
	quantQ8_0(x, want)
	quantRowQ8_0(x, got)
	if string(want) != string(got) {
		t.Fatalf("halves: got %v, want %v", got, want)
	}
}
