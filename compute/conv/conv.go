package conv

import (
	"fmt"
)

// Conv is a packed 2-D convolution with square kernel K (1 or 3), stride 1
// or 2 and zero padding (K-1)/2, as torch.nn.Conv2d(Cin, Cout, K, Stride,
// padding=(K-1)/2); NewConvPad makes the padding before the first row and
// column smaller.
type Conv struct {
	Cin, Cout, K, Stride int

	pad    int       // zero rows (and columns) before the first; (K-1)/2 after the last
	nr     int       // output channels per block: 16, 32 or 64
	pack   []float32 // (Cout/nr blocks, K, K·Cin, nr), zero beyond Cout; nil for binary16 weights
	pack16 []uint16  // the same in binary16 (NewConvF16), or nil
	bias   []float32 // (blocks·nr), zero beyond Cout or when bias-free
}

// NewConv packs weights given in PyTorch's layout w (Cout, Cin, K, K) and
// an optional bias (Cout); nil bias means none.
func NewConv(w []float32, bias []float32, cout, cin, k, stride int) (*Conv, error) {
	return NewConvPad(w, bias, cout, cin, k, stride, (k-1)/2)
}

// NewConvPad is NewConv with pad zero rows and columns before the image
// (0 ≤ pad ≤ (K-1)/2) and (K-1)/2 after it, the map's border: pad 0 with
// K 3 and stride 2 is torch's F.pad(x, (0, 1, 0, 1)) followed by
// Conv2d(Cin, Cout, 3, 2, padding=0), the downsampling of the LDM
// autoencoder (Rombach et al. 2022, ldm/modules/diffusionmodules/model.py).
func NewConvPad(w []float32, bias []float32, cout, cin, k, stride, pad int) (*Conv, error) {
	c, err := newConv(len(w), bias, cout, cin, k, stride, pad)
	if err != nil {
		return nil, err
	}
	c.pack = packKernel(w, c)
	return c, nil
}

// NewConvF16 is NewConv for weights in IEEE binary16, kept so (half the
// memory): the kernels widen each weight to float32 as they load it, so
// the result is that of NewConv on the widened weights. Activations,
// bias and arithmetic stay float32.
func NewConvF16(w []uint16, bias []float32, cout, cin, k, stride int) (*Conv, error) {
	return NewConvPadF16(w, bias, cout, cin, k, stride, (k-1)/2)
}

// NewConvPadF16 is NewConvPad for binary16 weights, kept so as
// NewConvF16 keeps them.
func NewConvPadF16(w []uint16, bias []float32, cout, cin, k, stride, pad int) (*Conv, error) {
	c, err := newConv(len(w), bias, cout, cin, k, stride, pad)
	if err != nil {
		return nil, err
	}
	c.pack16 = packKernel(w, c)
	return c, nil
}

// newConv checks the shape and padding and packs the bias.
func newConv(nw int, bias []float32, cout, cin, k, stride, pad int) (*Conv, error) {
	if pad < 0 || pad > (k-1)/2 {
		return nil, fmt.Errorf("conv %d→%d k%d: padding %d before the image, want 0 to %d", cin, cout, k, pad, (k-1)/2)
	}
	if cout <= 0 || cin <= 0 || (k != 1 && k != 3) || (stride != 1 && stride != 2) {
		return nil, fmt.Errorf("conv %d→%d k%d s%d: unsupported (kernels 1 and 3, strides 1 and 2)", cin, cout, k, stride)
	}
	if nw != cout*cin*k*k {
		return nil, fmt.Errorf("conv %d→%d k%d: %d weights, want %d", cin, cout, k, nw, cout*cin*k*k)
	}
	if bias != nil && len(bias) != cout {
		return nil, fmt.Errorf("conv %d→%d: bias of %d, want %d", cin, cout, len(bias), cout)
	}
	c := &Conv{Cin: cin, Cout: cout, K: k, Stride: stride, pad: pad, nr: blockWidth(cout)}
	blocks := (cout + c.nr - 1) / c.nr
	c.bias = make([]float32, blocks*c.nr)
	copy(c.bias, bias)
	return c, nil
}

// Repack1x1 replaces the weights of a 1×1 convolution made by NewConv
// with the (Cout, Cin) matrix read as w[co·rowStride + ci·colStride],
// reusing c's memory (the bias stays): a product x·Wᵀ over the pixels of
// a map whose W changes from call to call, such as attention's q·kᵀ (W = k,
// strides dim, 1) and p·v (W = vᵀ, strides 1, dim) for one head.
func (c *Conv) Repack1x1(w []float32, rowStride, colStride int) error {
	if c.K != 1 || c.pack == nil {
		return fmt.Errorf("conv %d→%d k%d: Repack1x1 needs a 1×1 convolution with float32 weights", c.Cin, c.Cout, c.K)
	}
	if rowStride < 0 || colStride < 0 || (c.Cout-1)*rowStride+(c.Cin-1)*colStride >= len(w) {
		return fmt.Errorf("conv %d→%d: a (%d, %d) matrix with strides %d, %d does not fit %d weights",
			c.Cin, c.Cout, c.Cout, c.Cin, rowStride, colStride, len(w))
	}
	nr, run := c.nr, c.Cin
	for co := 0; co < c.Cout; co++ {
		blk, lane := co/nr, co%nr
		dst := c.pack[blk*run*nr+lane:]
		src := w[co*rowStride:]
		for ci := 0; ci < run; ci++ {
			dst[ci*nr] = src[ci*colStride]
		}
	}
	return nil
}

// PackedBytes returns the bytes a float32 convolution of cin → cout
// channels with a k×k kernel occupies (Conv.Bytes of NewConv's result).
func PackedBytes(cout, cin, k int) int64 {
	nr := blockWidth(cout)
	blocks := (cout + nr - 1) / nr
	return 4 * int64(blocks*nr) * int64(k*k*cin+1)
}

// blockWidth is the output channels per packed block for cout channels.
func blockWidth(cout int) int {
	switch {
	case cout%64 == 0:
		return 64
	case cout%32 == 0:
		return 32
	}
	return 16
}

// packKernel rearranges w (Cout, Cin, K, K) into c's blocks
// (Cout/nr, K, K·Cin, nr), zero beyond Cout.
func packKernel[W weight](w []W, c *Conv) []W {
	k, cin, nr := c.K, c.Cin, c.nr
	blocks := (c.Cout + nr - 1) / nr
	run := k * cin
	pack := make([]W, blocks*k*run*nr)
	for co := 0; co < c.Cout; co++ {
		blk, lane := co/nr, co%nr
		for ci := 0; ci < cin; ci++ {
			for ky := 0; ky < k; ky++ {
				for kx := 0; kx < k; kx++ {
					j := kx*cin + ci
					pack[((blk*k+ky)*run+j)*nr+lane] = w[((co*cin+ci)*k+ky)*k+kx]
				}
			}
		}
	}
	return pack
}

// OutSize returns the output height (or width) for input size n.
func (c *Conv) OutSize(n int) int {
	return (n+c.pad+(c.K-1)/2-c.K)/c.Stride + 1
}

// Flops returns the multiply-adds ×2 of one application to an h×w input.
func (c *Conv) Flops(h, w int) int64 {
	return 2 * int64(c.OutSize(h)) * int64(c.OutSize(w)) * int64(c.Cout) * int64(c.Cin*c.K*c.K)
}

// Apply computes out = act(conv(in) + bias + skip), where skip (nil for
// none) has out's shape and act is ReLU when relu is set. out's interior is
// overwritten; out must not alias in or skip.
func (c *Conv) Apply(r Runner, out, in, skip *Map, relu bool) error {
	return c.apply(r, out, in, skip, relu, pickTile())
}

func (c *Conv) apply(r Runner, out, in, skip *Map, relu bool, tf tileFuncs) error {
	if err := in.check(); err != nil {
		return fmt.Errorf("conv input: %w", err)
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("conv output: %w", err)
	}
	if in.C != c.Cin || out.C != c.Cout || out.H != c.OutSize(in.H) || out.W != c.OutSize(in.W) {
		return fmt.Errorf("conv %d→%d k%d s%d: input %dx%dx%d gives %dx%dx%d, output is %dx%dx%d",
			c.Cin, c.Cout, c.K, c.Stride, in.H, in.W, in.C, c.OutSize(in.H), c.OutSize(in.W), c.Cout, out.H, out.W, out.C)
	}
	if skip != nil {
		if err := skip.check(); err != nil {
			return fmt.Errorf("conv skip: %w", err)
		}
		if skip.H != out.H || skip.W != out.W || skip.C != out.C {
			return fmt.Errorf("conv skip %dx%dx%d does not match output %dx%dx%d", skip.H, skip.W, skip.C, out.H, out.W, out.C)
		}
	}
	if &in.Data[0] == &out.Data[0] || (skip != nil && &skip.Data[0] == &out.Data[0]) {
		return fmt.Errorf("conv: output aliases an input")
	}
	if c.pack16 != nil {
		rows(r, c, tf.forNRH(c.nr), c.pack16, out, in, skip, relu)
	} else {
		rows(r, c, tf.forNR(c.nr), c.pack, out, in, skip, relu)
	}
	return nil
}

// Rows applies a 1×1 convolution to n pixels given as dense rows — the
// product x·Wᵀ + bias (+ skip) of a linear layer, on the convolution's
// packed weights and micro-kernels: out[i][co] = bias[co] + Σ_ci
// x[i][ci]·W[co][ci] (+ skip[i][co]), x (n, Cin), out and skip (n, Cout),
// skip nil for none. out must not alias x or skip. Chunks of rowsPerTask
// pixels times channel blocks run in parallel; each value is reduced in
// the order Apply uses, whatever the partition.
func (c *Conv) Rows(r Runner, out, x, skip []float32, n int) error {
	if c.K != 1 || c.Stride != 1 {
		return fmt.Errorf("conv %d→%d k%d s%d: Rows needs a 1×1, stride-1 convolution", c.Cin, c.Cout, c.K, c.Stride)
	}
	if n <= 0 || len(x) < n*c.Cin || len(out) < n*c.Cout || (skip != nil && len(skip) < n*c.Cout) {
		return fmt.Errorf("conv %d→%d: %d rows need %d inputs and %d outputs, have %d and %d (skip %d)",
			c.Cin, c.Cout, n, n*c.Cin, n*c.Cout, len(x), len(out), len(skip))
	}
	if &out[0] == &x[0] || (skip != nil && &skip[0] == &out[0]) {
		return fmt.Errorf("conv Rows: output aliases an input")
	}
	om := &Map{H: 1, W: n, C: c.Cout, Data: out} // runRow reads only Data and C
	var sm *Map
	if skip != nil {
		sm = &Map{H: 1, W: n, C: c.Cout, Data: skip}
	}
	tf := pickTile()
	if c.pack16 != nil {
		denseRows(r, c, tf.forNRH(c.nr), c.pack16, om, x, sm, n)
	} else {
		denseRows(r, c, tf.forNR(c.nr), c.pack, om, x, sm, n)
	}
	return nil
}

// rowsPerTask is the pixels one task of Rows takes (a multiple of every
// kernel's mr): its weight block is reused across them from L2.
const rowsPerTask = 96

func denseRows[W weight](r Runner, c *Conv, kern tile[W], pack []W, out *Map, x []float32, skip *Map, n int) {
	blocks := (c.Cout + c.nr - 1) / c.nr
	chunks := (n + rowsPerTask - 1) / rowsPerTask
	parallel(r, chunks*blocks, func(lo, hi int) {
		var scratch []float32 // only a partial last channel block needs it
		if c.Cout%c.nr != 0 {
			scratch = make([]float32, kern.mr*c.nr)
		}
		for t := lo; t < hi; t++ {
			i0, blk := t/blocks*rowsPerTask, t%blocks
			g := rowGeom{aBase: i0 * c.Cin, aPix: c.Cin, aRow: 0, kh: 1, run: c.Cin,
				oBase: i0 * c.Cout, oPix: c.Cout, n: min(rowsPerTask, n-i0)}
			b := pack[blk*c.Cin*c.nr : (blk+1)*c.Cin*c.nr]
			runRow(kern, g, x, b, c.bias[blk*c.nr:(blk+1)*c.nr], out, skip, blk*c.nr, false, scratch)
		}
	})
}

// rows computes every output row and channel block with the kernel kern
// over the packed weights pack.
func rows[W weight](r Runner, c *Conv, kern tile[W], pack []W, out, in, skip *Map, relu bool) {
	blocks := (c.Cout + c.nr - 1) / c.nr
	parallel(r, out.H*blocks, func(lo, hi int) {
		var scratch []float32 // only a partial last channel block needs it
		if c.Cout%c.nr != 0 {
			scratch = make([]float32, kern.mr*c.nr)
		}
		for i := lo; i < hi; i++ {
			row(c, kern, pack, out, in, skip, relu, i/blocks, i%blocks, scratch)
		}
	})
}

// row computes output row oy, channel block blk.
func row[W weight](c *Conv, kern tile[W], pack []W, out, in, skip *Map, relu bool, oy, blk int, scratch []float32) {
	p := c.pad
	run := c.K * c.Cin
	g := rowGeom{
		aBase: ((oy*c.Stride+1-p)*(in.W+2) + 1 - p) * c.Cin, // padded coordinates of (oy, 0)'s window
		aPix:  c.Stride * c.Cin,
		aRow:  in.RowStride(),
		kh:    c.K,
		run:   run,
		oBase: out.At(oy, 0),
		oPix:  out.C,
		n:     out.W,
	}
	b := pack[blk*c.K*run*c.nr : (blk+1)*c.K*run*c.nr]
	runRow(kern, g, in.Data, b, c.bias[blk*c.nr:(blk+1)*c.nr], out, skip, blk*c.nr, relu, scratch)
}

// rowGeom places n output pixels of one row: pixel i reads the implicit
// A row at aBase+i·aPix (kh kernel rows aRow apart, run values each) and
// writes channels at oBase+i·oPix.
type rowGeom struct {
	aBase, aPix, aRow, kh, run int
	oBase, oPix, n             int
}

// runRow covers a row with micro-kernel tiles for output channels
// [co, co+nr). A last tile shorter than mr is moved back to overlap the
// previous one (its outputs are overwritten with identical values), so
// every pixel goes through the same kernel whatever the row length.
func runRow[W weight](kern tile[W], g rowGeom, a []float32, b []W, bias []float32, out, skip *Map, co int, relu bool, scratch []float32) {
	nr := len(bias)
	mr := kern.mr
	full := co+nr <= out.C
	if full {
		var sk []float32
		if skip != nil {
			sk = skip.Data
		}
		call := func(x0, n int) {
			o := g.oBase + x0*g.oPix + co
			var s []float32
			if sk != nil {
				s = sk[o:]
			}
			kern.fn(a[g.aBase+x0*g.aPix:], g.aPix, g.aRow, g.kh, g.run, b, bias, out.Data[o:], g.oPix, s, g.oPix, relu, n)
		}
		whole := g.n / mr * mr
		switch {
		case g.n < mr:
			call(0, g.n)
		case whole == g.n:
			call(0, whole)
		default:
			call(0, whole)
			call(g.n-mr, mr) // overlaps the previous tile; outputs are overwritten, not accumulated
		}
		return
	}
	for x0 := 0; x0 < g.n; x0 += mr {
		n := min(mr, g.n-x0)
		if n < mr && g.n >= mr {
			x0, n = g.n-mr, mr
		}
		ap := a[g.aBase+x0*g.aPix:]
		o := g.oBase + x0*g.oPix + co
		// Fewer channels than a block: compute into scratch, copy the valid part.
		kern.fn(ap, g.aPix, g.aRow, g.kh, g.run, b, bias, scratch, nr, nil, 0, false, n)
		valid := out.C - co
		for i := 0; i < n; i++ {
			oi := o + i*g.oPix
			for j, v := range scratch[i*nr : i*nr+valid] {
				if skip != nil {
					v += skip.Data[oi+j]
				}
				if relu && v < 0 {
					v = 0
				}
				out.Data[oi+j] = v
			}
		}
	}
}

// Bytes returns the memory the packed weights and bias occupy.
func (c *Conv) Bytes() int64 { return 4*int64(len(c.pack)+len(c.bias)) + 2*int64(len(c.pack16)) }
