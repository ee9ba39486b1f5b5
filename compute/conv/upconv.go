package conv

import "fmt"

// UpConv is a 3×3, stride-1, padding-1 convolution applied to the ×2
// nearest-neighbour upsampling of its input — torch's
// Sequential(Upsample(scale_factor=2), Conv2d(Cin, Cout, 3, padding=1)) —
// computed without building the upsampled map.
//
// Output row y = 2i+py reads upsampled rows y-1, y, y+1, which are input
// rows i-1, i, i (py = 0) or i, i, i+1 (py = 1): two input rows, the
// kernel rows that land on the same input row summed. Columns work the
// same way, so each of the four output parities (py, px) is a 2×2
// convolution of the input with combined weights: 4/9 of the
// multiply-adds, and no 4× larger intermediate map.
type UpConv struct {
	Cin, Cout int

	nr     int
	pack   [4][]float32 // per parity 2·py+px: (blocks, 2, 2·Cin, nr)
	pack16 [4][]uint16  // the same rounded to binary16 (NewUpConvF16), or nil
	bias   []float32
}

// taps lists, for output parity p and window position t (0, 1), the
// 3×3 kernel indices that fall on that input row (or column).
var taps = [2][2][]int{{{0}, {1, 2}}, {{0, 1}, {2}}}

// NewUpConv packs w (Cout, Cin, 3, 3) and an optional bias (Cout).
func NewUpConv(w, bias []float32, cout, cin int) (*UpConv, error) {
	if cout <= 0 || cin <= 0 || len(w) != cout*cin*9 || (bias != nil && len(bias) != cout) {
		return nil, fmt.Errorf("upconv %d→%d: %d weights and %d biases, want %d and %d or none", cin, cout, len(w), len(bias), cout*cin*9, cout)
	}
	c := &UpConv{Cin: cin, Cout: cout, nr: 16}
	switch {
	case cout%64 == 0:
		c.nr = 64
	case cout%32 == 0:
		c.nr = 32
	}
	blocks := (cout + c.nr - 1) / c.nr
	run := 2 * cin
	c.bias = make([]float32, blocks*c.nr)
	for co := 0; co < cout && bias != nil; co++ {
		c.bias[co] = bias[co]
	}
	for par := 0; par < 4; par++ {
		py, px := par/2, par%2
		pk := make([]float32, blocks*2*run*c.nr)
		for co := 0; co < cout; co++ {
			blk, lane := co/c.nr, co%c.nr
			for ci := 0; ci < cin; ci++ {
				for ty := 0; ty < 2; ty++ {
					for tx := 0; tx < 2; tx++ {
						var s float32
						for _, ky := range taps[py][ty] {
							for _, kx := range taps[px][tx] {
								s += w[((co*cin+ci)*3+ky)*3+kx]
							}
						}
						pk[((blk*2+ty)*run+tx*cin+ci)*c.nr+lane] = s
					}
				}
			}
		}
		c.pack[par] = pk
	}
	return c, nil
}

// NewUpConvF16 is NewUpConv keeping the combined weights (sums of two or
// four 3×3 taps, formed in float32) as binary16, rounded to nearest: half
// the memory, at one more rounding of each combined weight (relative
// error ≤ 2⁻¹¹).
func NewUpConvF16(w, bias []float32, cout, cin int) (*UpConv, error) {
	c, err := NewUpConv(w, bias, cout, cin)
	if err != nil {
		return nil, err
	}
	for par, pk := range c.pack {
		h := make([]uint16, len(pk))
		for i, v := range pk {
			h[i] = floatToHalf(v)
		}
		c.pack16[par], c.pack[par] = h, nil
	}
	return c, nil
}

// Bytes returns the memory the packed weights and bias occupy.
func (c *UpConv) Bytes() int64 {
	n := 2 * len(c.bias)
	for par := range c.pack {
		n += 2*len(c.pack[par]) + len(c.pack16[par])
	}
	return 2 * int64(n)
}

// Flops returns the multiply-adds ×2 of one application to an h×w input.
func (c *UpConv) Flops(h, w int) int64 {
	return 2 * 4 * int64(h) * int64(w) * int64(c.Cout) * int64(4*c.Cin)
}

// Apply computes out = act(conv(upsample2x(in)) + bias + skip), out being
// 2H×2W; skip may be nil, act is ReLU when relu is set.
func (c *UpConv) Apply(r Runner, out, in, skip *Map, relu bool) error {
	return c.apply(r, out, in, skip, relu, pickTile())
}

func (c *UpConv) apply(r Runner, out, in, skip *Map, relu bool, tf tileFuncs) error {
	if err := in.check(); err != nil {
		return fmt.Errorf("upconv input: %w", err)
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("upconv output: %w", err)
	}
	if in.C != c.Cin || out.C != c.Cout || out.H != 2*in.H || out.W != 2*in.W {
		return fmt.Errorf("upconv %d→%d: input %dx%dx%d gives %dx%dx%d, output is %dx%dx%d",
			c.Cin, c.Cout, in.H, in.W, in.C, 2*in.H, 2*in.W, c.Cout, out.H, out.W, out.C)
	}
	if skip != nil && (skip.check() != nil || skip.H != out.H || skip.W != out.W || skip.C != out.C) {
		return fmt.Errorf("upconv skip does not match output %dx%dx%d", out.H, out.W, out.C)
	}
	if &in.Data[0] == &out.Data[0] || (skip != nil && &skip.Data[0] == &out.Data[0]) {
		return fmt.Errorf("upconv: output aliases an input")
	}
	if c.pack16[0] != nil {
		upRows(r, c, tf.forNRH(c.nr), c.pack16, out, in, skip, relu)
	} else {
		upRows(r, c, tf.forNR(c.nr), c.pack, out, in, skip, relu)
	}
	return nil
}

// upRows computes every output row, column parity and channel block with
// the kernel kern over the packed weights pack.
func upRows[W weight](r Runner, c *UpConv, kern tile[W], pack [4][]W, out, in, skip *Map, relu bool) {
	blocks := (c.Cout + c.nr - 1) / c.nr
	run := 2 * c.Cin
	// One work item per output row, parity of column and channel block.
	parallel(r, out.H*2*blocks, func(lo, hi int) {
		var scratch []float32 // only a partial last channel block needs it
		if c.Cout%c.nr != 0 {
			scratch = make([]float32, kern.mr*c.nr)
		}
		for it := lo; it < hi; it++ {
			y, px, blk := it/(2*blocks), it/blocks%2, it%blocks
			i, py := y/2, y%2
			g := rowGeom{
				// Window of output (y, px): input rows i-1+py.., columns j-1+px.., padded +1.
				aBase: ((i+py)*(in.W+2) + px) * c.Cin,
				aPix:  c.Cin,
				aRow:  in.RowStride(),
				kh:    2,
				run:   run,
				oBase: out.At(y, px),
				oPix:  2 * out.C,
				n:     in.W,
			}
			pk := pack[2*py+px]
			b := pk[blk*2*run*c.nr : (blk+1)*2*run*c.nr]
			runRow(kern, g, in.Data, b, c.bias[blk*c.nr:(blk+1)*c.nr], out, skip, blk*c.nr, relu, scratch)
		}
	})
}
