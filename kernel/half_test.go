package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestFP16RoundTripAll(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := FP16ToFP32(h)
		if f != f {
			if g := FP32ToFP16(f); FP16ToFP32(g) == FP16ToFP32(g) {
				t.Fatalf("NaN %#04x came back as %#04x", h, g)
			}
			continue
		}
		if g := FP32ToFP16(f); g != h {
			t.Fatalf("half %#04x → %g → %#04x", h, f, g)
		}
	}
}

// TestFP32ToFP16Nearest checks round-to-nearest-even against the two
// neighbouring halves, over random floats spread across the half range.
func TestFP32ToFP16Nearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := float32(math.Ldexp(r.Float64()*2-1, r.IntN(40)-26))
		h := FP32ToFP16(f)
		got := float64(FP16ToFP32(h))
		if math.IsInf(got, 0) {
			if math.Abs(float64(f)) < 65520 {
				t.Fatalf("%g overflowed", f)
			}
			continue
		}
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7c00 == 0x7c00 || (h&0x7fff == 0 && nb == h-1) {
				continue
			}
			alt := float64(FP16ToFP32(nb))
			d, da := math.Abs(got-float64(f)), math.Abs(alt-float64(f))
			if da < d || (da == d && h&1 == 1) {
				t.Fatalf("%g → %#04x (%g) but %#04x (%g) is nearer or even", f, h, got, nb, alt)
			}
		}
	}
}

func TestFP16Specials(t *testing.T) {
	for _, tc := range []struct {
		f float32
		h uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff},
		{65520, 0x7c00}, {float32(math.Inf(1)), 0x7c00}, {5.960464477539063e-08, 1}, {2.9802322387695312e-08, 0},
		{2.98023259e-08, 1}, {6.097555160522461e-05, 0x3ff},
	} {
		if got := FP32ToFP16(tc.f); got != tc.h {
			t.Errorf("FP32ToFP16(%g) = %#04x, want %#04x", tc.f, got, tc.h)
		}
	}
}

func TestBF16(t *testing.T) {
	for _, tc := range []struct {
		f float32
		h uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {1.00390625, 0x3f80}, {1.01171875, 0x3f82}, {float32(math.Inf(-1)), 0xff80},
	} {
		if got := FP32ToBF16(tc.f); got != tc.h {
			t.Errorf("FP32ToBF16(%g) = %#04x, want %#04x", tc.f, got, tc.h)
		}
		if tc.f == 1 || tc.f == -2 {
			if back := BF16ToFP32(tc.h); back != tc.f {
				t.Errorf("BF16ToFP32(%#04x) = %g, want %g", tc.h, back, tc.f)
			}
		}
	}
	if f := BF16ToFP32(FP32ToBF16(float32(math.NaN()))); f == f {
		t.Error("NaN did not stay NaN")
	}
}

func TestRounding(t *testing.T) {
	for _, tc := range []struct {
		f           float32
		even, ahead int
	}{
		{0.5, 0, 1}, {1.5, 2, 2}, {2.5, 2, 3}, {-0.5, 0, -1}, {-2.5, -2, -3}, {0.49999997, 0, 0},
		{-0.49999997, 0, 0}, {126.5, 126, 127}, {-127.5, -128, -128}, {3.4e6 + 0.5, 3400000, 3400001},
		{1e9, 1000000000, 1000000000}, {-8388609, -8388609, -8388609},
	} {
		if got := nearestInt(tc.f); got != tc.even {
			t.Errorf("nearestInt(%v) = %d, want %d", tc.f, got, tc.even)
		}
		if got := roundAway(tc.f); got != tc.ahead {
			t.Errorf("roundAway(%v) = %d, want %d", tc.f, got, tc.ahead)
		}
	}
	r := rand.New(rand.NewPCG(9, 9))
	for range 100000 {
		f := float32(r.NormFloat64() * 200)
		if nearestInt(f) != int(math.RoundToEven(float64(f))) || roundAway(f) != int(math.Round(float64(f))) {
			t.Fatalf("rounding of %v differs from the math package", f)
		}
	}
}

// TestSliceConversions checks the (F16C) slice conversions bit for bit
// against the scalar ones over random bit patterns, NaNs, infinities and
// subnormals included.
func TestSliceConversions(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{0, 1, 7, 8, 9, 100, 1000} {
		f := make([]float32, n)
		h := make([]byte, 2*n+2)
		for i := range f {
			switch i % 4 {
			case 0:
				f[i] = math.Float32frombits(r.Uint32())
			case 1:
				f[i] = float32(r.NormFloat64() * 1e-6) // half subnormals
			default:
				f[i] = float32(r.NormFloat64() * 1000)
			}
		}
		FP32sToFP16(h[:2*n], f)
		for i, v := range f {
			if got, want := uint16(h[2*i])|uint16(h[2*i+1])<<8, FP32ToFP16(v); got != want {
				t.Fatalf("n=%d: FP32sToFP16(%g) = %#04x, want %#04x", n, v, got, want)
			}
		}
		if h[2*n] != 0 || h[2*n+1] != 0 {
			t.Fatal("wrote past dst")
		}
		for i := range n {
			h[2*i], h[2*i+1] = byte(r.Uint32()), byte(r.Uint32())
		}
		back := make([]float32, n)
		FP16sToFP32(back, h[:2*n])
		for i := range back {
			want := FP16ToFP32(uint16(h[2*i]) | uint16(h[2*i+1])<<8)
			if math.Float32bits(back[i]) != math.Float32bits(want) {
				t.Fatalf("n=%d: FP16sToFP32[%d] = %#x, want %#x", n, i, math.Float32bits(back[i]), math.Float32bits(want))
			}
		}
	}
}
