package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// chunks is a Runner that splits loops into k chunks, run one after the
// other, to check that results do not depend on the partition.
type chunks int

func (k chunks) For(n int, fn func(lo, hi int)) {
	for c := 0; c < int(k); c++ {
		if lo, hi := c*n/int(k), (c+1)*n/int(k); lo < hi {
			fn(lo, hi)
		}
	}
}

func fillNaN(m *Map) {
	for y := 0; y < m.H; y++ {
		row := m.Row(y)
		for i := range row {
			row[i] = float32(math.NaN())
		}
	}
}

func borderIsZero(m *Map) bool {
	for y := -1; y <= m.H; y++ {
		for x := -1; x <= m.W; x++ {
			if y >= 0 && y < m.H && x >= 0 && x < m.W {
				continue
			}
			o := ((y+1)*(m.W+2) + x + 1) * m.C
			for _, v := range m.Data[o : o+m.C] {
				if v != 0 {
					return false
				}
			}
		}
	}
	return true
}

func TestConvAgainstReference(t *testing.T) {
	cases := []struct {
		cin, cout, k, stride, h, w int
		bias, skip, relu           bool
	}{
		{64, 64, 3, 1, 9, 13, true, false, true},
		{64, 64, 3, 1, 4, 3, true, true, true}, // narrower than a tile
		{64, 64, 3, 2, 10, 14, false, false, false},
		{64, 64, 3, 2, 7, 9, false, false, false}, // odd sizes with stride 2
		{3, 64, 3, 1, 11, 17, true, false, false},
		{64, 32, 3, 1, 8, 19, true, false, false},
		{64, 3, 3, 1, 6, 21, true, false, false},
		{64, 256, 1, 1, 5, 11, false, false, false},
		{256, 64, 1, 1, 5, 11, false, true, false},
		{32, 64, 3, 1, 6, 6, true, false, true},
		{5, 7, 3, 1, 6, 9, true, true, true},
		{64, 64, 3, 1, 3, 25, true, true, true}, // several whole tiles with a skip, then a shifted tail
		{64, 32, 3, 1, 2, 26, true, true, false},
		{128, 64, 3, 1, 4, 4, true, true, false}, // a UNet's lowest levels: rows of 4 and 2 pixels
		{64, 128, 3, 2, 4, 4, true, false, false},
		{64, 16, 3, 1, 2, 2, false, true, true},
		{64, 64, 1, 1, 3, 1, true, true, false},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		name := fmt.Sprintf("%d-%d-k%d-s%d-%dx%d", c.cin, c.cout, c.k, c.stride, c.h, c.w)
		x := randSlice(rng, c.cin*c.h*c.w, 1)
		wt := randSlice(rng, c.cout*c.cin*c.k*c.k, 0.1)
		var bias []float32
		if c.bias {
			bias = randSlice(rng, c.cout, 0.5)
		}
		want, ho, wo := refConv(x, c.cin, c.h, c.w, wt, bias, c.cout, c.k, c.stride)
		var skipCHW []float32
		if c.skip {
			skipCHW = randSlice(rng, len(want), 1)
			for i := range want {
				want[i] += skipCHW[i]
			}
		}
		if c.relu {
			for i, v := range want {
				want[i] = max(v, 0)
			}
		}
		cv, err := NewConv(wt, bias, c.cout, c.cin, c.k, c.stride)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := FromCHW(x, c.cin, c.h, c.w)
		var skip *Map
		if c.skip {
			skip, _ = FromCHW(skipCHW, c.cout, ho, wo)
		}
		for implName, impl := range tileImpls() {
			t.Run(name+"/"+implName, func(t *testing.T) {
				var first []float32
				for _, r := range []Runner{nil, chunks(3), chunks(7)} {
					out := NewMap(ho, wo, c.cout)
					fillNaN(out)
					if err := cv.apply(r, out, in, skip, c.relu, impl); err != nil {
						t.Fatal(err)
					}
					got := out.ToCHW()
					if d := maxAbsDiff(got, want); d > 2e-5 {
						t.Fatalf("max abs diff %g against the reference", d)
					}
					if !borderIsZero(out) {
						t.Fatal("border was written")
					}
					if first == nil {
						first = got
					} else if maxAbsDiff(first, got) != 0 {
						t.Fatal("result depends on the loop partition")
					}
				}
			})
		}
	}
}

func TestConvErrors(t *testing.T) {
	if _, err := NewConv(make([]float32, 10), nil, 2, 2, 3, 1); err == nil {
		t.Error("short weights accepted")
	}
	if _, err := NewConv(make([]float32, 2*2*25), nil, 2, 2, 5, 1); err == nil {
		t.Error("5x5 kernel accepted")
	}
	cv, _ := NewConv(make([]float32, 4*2*9), nil, 4, 2, 3, 1)
	if err := cv.Apply(nil, NewMap(4, 4, 4), NewMap(4, 5, 2), nil, false); err == nil {
		t.Error("wrong output size accepted")
	}
	if err := cv.Apply(nil, NewMap(4, 4, 4), NewMap(4, 4, 3), nil, false); err == nil {
		t.Error("wrong input channels accepted")
	}
	if err := cv.Apply(nil, NewMap(4, 4, 4), NewMap(4, 4, 2), NewMap(4, 4, 2), false); err == nil {
		t.Error("wrong skip accepted")
	}
	if err := cv.Apply(nil, &Map{H: 4, W: 4, C: 4}, NewMap(4, 4, 2), nil, false); err == nil {
		t.Error("map without data accepted")
	}
}

func TestGroupNormAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ c, h, w, groups int }{{256, 5, 7, 4}, {8, 3, 3, 2}, {6, 4, 1, 3}} {
		t.Run(fmt.Sprintf("%dx%dx%d-g%d", c.c, c.h, c.w, c.groups), func(t *testing.T) {
			x := randSlice(rng, c.c*c.h*c.w, 2)
			for i := range x {
				x[i] += 0.7 // a mean away from zero
			}
			gamma, beta := randSlice(rng, c.c, 1), randSlice(rng, c.c, 1)
			want := refGroupNorm(x, c.c, c.h, c.w, c.groups, gamma, beta, 1e-5)
			for _, relu := range []bool{false, true} {
				m, _ := FromCHW(x, c.c, c.h, c.w)
				if err := GroupNorm(chunks(3), m, c.groups, gamma, beta, 1e-5, relu); err != nil {
					t.Fatal(err)
				}
				w := append([]float32(nil), want...)
				if relu {
					for i, v := range w {
						w[i] = max(v, 0)
					}
				}
				if d := maxAbsDiff(m.ToCHW(), w); d > 1e-5 {
					t.Fatalf("relu=%v: max abs diff %g", relu, d)
				}
			}
		})
	}
	if err := GroupNorm(nil, NewMap(2, 2, 6), 4, make([]float32, 6), make([]float32, 6), 1e-5, false); err == nil {
		t.Error("groups not dividing channels accepted")
	}
}

func TestUpsampleAddClampReLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := randSlice(rng, 3*5*7, 4)
	in, _ := FromCHW(x, 3, 5, 7)
	out := NewMap(10, 14, 3)
	fillNaN(out)
	if err := Upsample2x(chunks(2), out, in); err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(out.ToCHW(), refUpsample(x, 3, 5, 7)); d != 0 {
		t.Fatalf("upsample differs by %g", d)
	}
	if err := Upsample2x(nil, NewMap(10, 13, 3), in); err == nil {
		t.Error("wrong upsample size accepted")
	}
	m, _ := FromCHW(x, 3, 5, 7)
	SoftClamp(nil, m, 3)
	ReLU(nil, m)
	if err := Add(nil, m, in); err != nil {
		t.Fatal(err)
	}
	got := m.ToCHW()
	for i, v := range x {
		want := max(float32(math.Tanh(float64(v/3)))*3, 0) + v
		if math.Abs(float64(got[i]-want)) > 1e-6 {
			t.Fatalf("element %d: %v, want %v", i, got[i], want)
		}
	}
	if !borderIsZero(m) {
		t.Fatal("border written")
	}
	if err := Add(nil, m, NewMap(5, 7, 4)); err == nil {
		t.Error("mismatched add accepted")
	}
}

func TestArena(t *testing.T) {
	var a Arena
	m1 := a.Map(4, 4, 8)
	m2 := a.Map(4, 4, 8)
	if a.Peak() != 2*MapBytes(4, 4, 8) {
		t.Fatalf("peak %d", a.Peak())
	}
	m1.Data[0] = 7 // dirty the border
	a.Release(m1)
	m3 := a.Map(4, 4, 8) // reuses m1's buffer
	if a.Peak() != 2*MapBytes(4, 4, 8) || !borderIsZero(m3) {
		t.Fatalf("peak %d after reuse, border zero %v", a.Peak(), borderIsZero(m3))
	}
	a.Release(m2)
	a.Release(m3)
	if a.InUse() != 0 {
		t.Fatalf("in use %d", a.InUse())
	}
}

func TestCHWRoundTrip(t *testing.T) {
	x := randSlice(rand.New(rand.NewPCG(7, 8)), 5*3*4, 1)
	m, err := FromCHW(x, 5, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	if maxAbsDiff(m.ToCHW(), x) != 0 || !borderIsZero(m) {
		t.Fatal("round trip changed the data")
	}
	if _, err := FromCHW(x, 5, 3, 5); err == nil {
		t.Fatal("wrong shape accepted")
	}
}

// TestConvPadAgainstReference checks NewConvPad's smaller leading padding
// (the LDM autoencoder's F.pad(x, (0, 1, 0, 1)) before a stride-2 conv).
func TestConvPadAgainstReference(t *testing.T) {
	cases := []struct{ cin, cout, k, stride, pad, h, w int }{
		{64, 64, 3, 2, 0, 10, 14},
		{64, 64, 3, 2, 0, 7, 9},
		{32, 64, 3, 2, 0, 16, 3},
		{64, 32, 3, 1, 0, 5, 11},
		{5, 7, 3, 2, 1, 6, 9},
		{16, 16, 1, 2, 0, 6, 7},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		name := fmt.Sprintf("%d-%d-k%d-s%d-p%d-%dx%d", c.cin, c.cout, c.k, c.stride, c.pad, c.h, c.w)
		x := randSlice(rng, c.cin*c.h*c.w, 1)
		wt := randSlice(rng, c.cout*c.cin*c.k*c.k, 0.1)
		bias := randSlice(rng, c.cout, 0.5)
		want, ho, wo := refConvPad(x, c.cin, c.h, c.w, wt, bias, c.cout, c.k, c.stride, c.pad, (c.k-1)/2)
		cv, err := NewConvPad(wt, bias, c.cout, c.cin, c.k, c.stride, c.pad)
		if err != nil {
			t.Fatal(err)
		}
		if cv.OutSize(c.h) != ho || cv.OutSize(c.w) != wo {
			t.Fatalf("%s: OutSize gives %dx%d, want %dx%d", name, cv.OutSize(c.h), cv.OutSize(c.w), ho, wo)
		}
		in, _ := FromCHW(x, c.cin, c.h, c.w)
		for implName, impl := range tileImpls() {
			t.Run(name+"/"+implName, func(t *testing.T) {
				out := NewMap(ho, wo, c.cout)
				fillNaN(out)
				if err := cv.apply(chunks(3), out, in, nil, false, impl); err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(out.ToCHW(), want); d > 2e-5 {
					t.Fatalf("max abs diff %g against the reference", d)
				}
				if !borderIsZero(out) {
					t.Fatal("border was written")
				}
			})
		}
	}
	for _, pad := range []int{-1, 2} {
		if _, err := NewConvPad(make([]float32, 4*2*9), nil, 4, 2, 3, 2, pad); err == nil {
			t.Errorf("padding %d accepted for a 3×3 kernel", pad)
		}
	}
}

// TestConvF16 checks NewConvPadF16 (NewConvF16 at the symmetric padding)
// against NewConvPad on the widened weights: the same bits with every
// kernel set (the weights are widened exactly).
func TestConvF16(t *testing.T) {
	cases := []struct{ cin, cout, k, stride, pad, h, w int }{
		{64, 64, 3, 1, 1, 9, 13},
		{64, 128, 3, 1, 1, 4, 4},
		{32, 64, 3, 2, 1, 8, 10},
		{32, 64, 3, 2, 0, 8, 10}, // the LDM downsampling's (0, 1, 0, 1) padding
		{64, 64, 3, 2, 0, 9, 7},
		{3, 32, 3, 1, 1, 7, 15},
		{64, 16, 1, 1, 0, 5, 11},
		{40, 4, 3, 1, 1, 6, 20},
		{128, 64, 3, 1, 1, 2, 2},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		x := randSlice(rng, c.cin*c.h*c.w, 1)
		w32 := randSlice(rng, c.cout*c.cin*c.k*c.k, 0.1)
		w16 := make([]uint16, len(w32))
		for i, v := range w32 {
			w16[i] = floatToHalf(v)
			w32[i] = halfToFloat(w16[i])
		}
		bias := randSlice(rng, c.cout, 0.5)
		cf, err := NewConvPad(w32, bias, c.cout, c.cin, c.k, c.stride, c.pad)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := NewConvPadF16(w16, bias, c.cout, c.cin, c.k, c.stride, c.pad)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Bytes() >= cf.Bytes() {
			t.Errorf("binary16 conv takes %d bytes, float32 %d", ch.Bytes(), cf.Bytes())
		}
		in, _ := FromCHW(x, c.cin, c.h, c.w)
		ho, wo := cf.OutSize(c.h), cf.OutSize(c.w)
		skip, _ := FromCHW(randSlice(rng, c.cout*ho*wo, 1), c.cout, ho, wo)
		for implName, impl := range tileImpls() {
			t.Run(fmt.Sprintf("%d-%d-k%d-s%d-p%d-%dx%d/%s", c.cin, c.cout, c.k, c.stride, c.pad, c.h, c.w, implName), func(t *testing.T) {
				want, got := NewMap(ho, wo, c.cout), NewMap(ho, wo, c.cout)
				fillNaN(got)
				if err := cf.apply(chunks(3), want, in, skip, true, impl); err != nil {
					t.Fatal(err)
				}
				if err := ch.apply(chunks(5), got, in, skip, true, impl); err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(got.ToCHW(), want.ToCHW()); d != 0 {
					t.Fatalf("max abs diff %g from the float32 kernel on the widened weights", d)
				}
				if !borderIsZero(got) {
					t.Fatal("border was written")
				}
			})
		}
	}
	if _, err := NewConvF16(make([]uint16, 5), nil, 2, 2, 3, 1); err == nil {
		t.Error("NewConvF16 took 5 weights for 2→2 k3")
	}
	if _, err := NewConvPadF16(make([]uint16, 36), nil, 2, 2, 3, 2, 2); err == nil {
		t.Error("NewConvPadF16 took padding 2 for k3")
	}
}

// TestRepack1x1 checks that a repacked 1×1 convolution equals one made by
// NewConv from the same matrix (read through strides), and PackedBytes.
func TestRepack1x1(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ cout, cin int }{{64, 40}, {77, 40}, {40, 77}, {4096, 16}, {48, 1024}} {
		// The matrix (cout, cin) sits transposed inside a wider buffer: W[co][ci] = buf[3 + ci·stride + co].
		stride := c.cout + 5
		buf := randSlice(rng, 3+c.cin*stride, 1)
		w := make([]float32, c.cout*c.cin)
		for co := range c.cout {
			for ci := range c.cin {
				w[co*c.cin+ci] = buf[3+ci*stride+co]
			}
		}
		want, err := NewConv(w, nil, c.cout, c.cin, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := NewConv(randSlice(rng, c.cout*c.cin, 1), nil, c.cout, c.cin, 1, 1)
		if err := got.Repack1x1(buf[3:], 1, stride); err != nil {
			t.Fatal(err)
		}
		in, _ := FromCHW(randSlice(rng, c.cin*2*9, 1), c.cin, 2, 9)
		a, b := NewMap(2, 9, c.cout), NewMap(2, 9, c.cout)
		if err := want.Apply(nil, a, in, nil, false); err != nil {
			t.Fatal(err)
		}
		if err := got.Apply(nil, b, in, nil, false); err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(a.ToCHW(), b.ToCHW()); d != 0 {
			t.Errorf("%d→%d: repacked differs by %g", c.cin, c.cout, d)
		}
		if pb := PackedBytes(c.cout, c.cin, 1); pb != want.Bytes() {
			t.Errorf("%d→%d: PackedBytes %d, Bytes %d", c.cin, c.cout, pb, want.Bytes())
		}
		if err := got.Repack1x1(buf[:c.cin], 1, stride); err == nil {
			t.Errorf("%d→%d: Repack1x1 took a too short matrix", c.cin, c.cout)
		}
	}
	c3, _ := NewConv(make([]float32, 9*4), nil, 2, 2, 3, 1)
	if err := c3.Repack1x1(make([]float32, 4), 2, 1); err == nil {
		t.Error("Repack1x1 took a 3×3 convolution")
	}
}

// TestRows checks Rows against Apply on the same pixels as a map, for
// float32 and binary16 weights, with and without a skip, at sizes with and
// without a partial last chunk and tile.
func TestRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ n, cin, cout int }{{1, 64, 64}, {5, 40, 77}, {96, 64, 128}, {203, 320, 64}, {1024, 32, 48}} {
		x := randSlice(rng, c.n*c.cin, 1)
		w := randSlice(rng, c.cout*c.cin, 0.1)
		w16 := make([]uint16, len(w))
		for i, v := range w {
			w16[i] = floatToHalf(v)
			w[i] = halfToFloat(w16[i])
		}
		bias := randSlice(rng, c.cout, 0.5)
		skip := randSlice(rng, c.n*c.cout, 1)
		c32, _ := NewConv(w, bias, c.cout, c.cin, 1, 1)
		c16, _ := NewConvF16(w16, bias, c.cout, c.cin, 1, 1)
		in, _ := FromCHW(transpose(x, c.n, c.cin), c.cin, 1, c.n)
		sk, _ := FromCHW(transpose(skip, c.n, c.cout), c.cout, 1, c.n)
		for _, withSkip := range []bool{false, true} {
			want := NewMap(1, c.n, c.cout)
			var s []float32
			var sm *Map
			if withSkip {
				s, sm = skip, sk
			}
			if err := c32.Apply(nil, want, in, sm, false); err != nil {
				t.Fatal(err)
			}
			for name, cv := range map[string]*Conv{"f32": c32, "f16": c16} {
				got := make([]float32, c.n*c.cout)
				if err := cv.Rows(chunks(3), got, x, s, c.n); err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(got, want.Row(0)); d != 0 {
					t.Errorf("n %d, %d→%d, %s, skip %v: differs from Apply by %g", c.n, c.cin, c.cout, name, withSkip, d)
				}
			}
		}
	}
	c3, _ := NewConv(make([]float32, 9*4), nil, 2, 2, 3, 1)
	if err := c3.Rows(nil, make([]float32, 2), make([]float32, 2), nil, 1); err == nil {
		t.Error("Rows took a 3×3 convolution")
	}
	c1, _ := NewConv(make([]float32, 4), nil, 2, 2, 1, 1)
	if err := c1.Rows(nil, make([]float32, 2), make([]float32, 3), nil, 2); err == nil {
		t.Error("Rows took too few inputs")
	}
}

// transpose turns rows (n, c) into planes (c, n).
func transpose(x []float32, n, c int) []float32 {
	out := make([]float32, len(x))
	for i := range n {
		for j := range c {
			out[j*n+i] = x[i*c+j]
		}
	}
	return out
}
