package conv

import (
	"math"
	"testing"
)

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
