package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestUpConvAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		cin, cout, h, w  int
		bias, skip, relu bool
	}{
		{64, 64, 5, 7, false, false, false},
		{64, 64, 3, 2, true, true, true}, // narrower than a tile
		{64, 3, 4, 9, true, false, false},
		{5, 32, 6, 13, true, false, true},
		{64, 64, 2, 13, true, true, true}, // several whole tiles with a skip
	} {
		x := randSlice(rng, c.cin*c.h*c.w, 1)
		wt := randSlice(rng, c.cout*c.cin*9, 0.1)
		var bias []float32
		if c.bias {
			bias = randSlice(rng, c.cout, 0.5)
		}
		want, _, _ := refConv(refUpsample(x, c.cin, c.h, c.w), c.cin, 2*c.h, 2*c.w, wt, bias, c.cout, 3, 1)
		var skip *Map
		if c.skip {
			s := randSlice(rng, len(want), 1)
			skip, _ = FromCHW(s, c.cout, 2*c.h, 2*c.w)
			for i := range want {
				want[i] += s[i]
			}
		}
		if c.relu {
			for i, v := range want {
				want[i] = max(v, 0)
			}
		}
		uc, err := NewUpConv(wt, bias, c.cout, c.cin)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := FromCHW(x, c.cin, c.h, c.w)
		for name, impl := range tileImpls() {
			t.Run(fmt.Sprintf("%d-%d-%dx%d/%s", c.cin, c.cout, c.h, c.w, name), func(t *testing.T) {
				out := NewMap(2*c.h, 2*c.w, c.cout)
				fillNaN(out)
				if err := uc.apply(chunks(3), out, in, skip, c.relu, impl); err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(out.ToCHW(), want); d > 2e-5 {
					t.Fatalf("max abs diff %g", d)
				}
				if !borderIsZero(out) {
					t.Fatal("border written")
				}
			})
		}
	}
	uc, _ := NewUpConv(make([]float32, 4*2*9), nil, 4, 2)
	if err := uc.Apply(nil, NewMap(8, 9, 4), NewMap(4, 4, 2), nil, false); err == nil {
		t.Error("wrong output size accepted")
	}
}

// TestUpConvF16 checks NewUpConvF16 against the float32 reference within
// the rounding of its combined weights, with every kernel set.
func TestUpConvF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const cin, cout, h, w = 64, 64, 3, 5
	x := randSlice(rng, cin*h*w, 1)
	wt := randSlice(rng, cout*cin*9, 0.1)
	bias := randSlice(rng, cout, 0.5)
	c32, err := NewUpConv(wt, bias, cout, cin)
	if err != nil {
		t.Fatal(err)
	}
	c16, err := NewUpConvF16(wt, bias, cout, cin)
	if err != nil {
		t.Fatal(err)
	}
	if 2*c16.Bytes() > c32.Bytes()+4*int64(len(bias))+64*4 {
		t.Errorf("F16 upconv %d bytes, float32 %d", c16.Bytes(), c32.Bytes())
	}
	in, _ := FromCHW(x, cin, h, w)
	for name, impl := range tileImpls() {
		t.Run(name, func(t *testing.T) {
			want, got := NewMap(2*h, 2*w, cout), NewMap(2*h, 2*w, cout)
			if err := c32.apply(nil, want, in, nil, false, impl); err != nil {
				t.Fatal(err)
			}
			if err := c16.apply(chunks(3), got, in, nil, false, impl); err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(got.ToCHW(), want.ToCHW()); d > 5e-3 || d == 0 {
				t.Errorf("max abs diff %g from float32 weights (want rounding-sized, > 0 and ≤ 5e-3)", d)
			}
			if !borderIsZero(got) {
				t.Error("border was written")
			}
		})
	}
}
