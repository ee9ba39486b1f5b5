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
