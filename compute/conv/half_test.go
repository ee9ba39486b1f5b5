package conv

import (
	"math"
	"testing"
)

// floatToHalf rounds a float32 to the nearest binary16 (ties to even),
// overflowing to infinity, as VCVTPS2PH with rounding mode 0 does.
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal or zero in binary16
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: still correct
	}
	return sign | uint16(h)
}

func TestHalfToFloat(t *testing.T) {
	known := []struct {
		h uint16
		f float32
	}{
		{0x0000, 0}, {0x3c00, 1}, {0xc000, -2}, {0x3555, 0.333251953125}, {0x7bff, 65504},
		{0x0001, 1.0 / (1 << 24)}, {0x03ff, 1023.0 / (1 << 24)}, {0x0400, 1.0 / (1 << 14)},
		{0x7c00, float32(math.Inf(1))}, {0xfc00, float32(math.Inf(-1))},
	}
	for _, k := range known {
		if got := halfToFloat(k.h); got != k.f {
			t.Errorf("halfToFloat(%#04x) = %g, want %g", k.h, got, k.f)
		}
	}
	if b := math.Float32bits(halfToFloat(0x8000)); b != 0x80000000 {
		t.Errorf("halfToFloat(0x8000) = %#08x, want -0", b)
	}
	for h := range 1 << 16 {
		f := halfToFloat(uint16(h))
		if f != f {
			continue // NaN
		}
		if back := floatToHalf(f); back != uint16(h) {
			t.Fatalf("%#04x → %g → %#04x", h, f, back)
		}
	}
}
