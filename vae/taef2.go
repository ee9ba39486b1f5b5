package vae

import (
	"context"
	"fmt"

	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/pth"
)

// TAEF2 hyper-parameters (taesd.py, arch_variant "flux_2").
const (
	LatentChannels = 32 // latent channels
	Scale          = 8  // pixels per latent pixel, each way
	width          = 64 // channels of every hidden layer
	poolWidth      = 256
	poolGroups     = 4
	gnEps          = 1e-5 // torch.nn.GroupNorm's default
	clampScale     = 3    // Clamp: tanh(x/3)·3
)

// block is TAESD's Block(64, 64): relu(conv(relu(conv(relu(conv(x))))) + x),
// all 3×3 with bias. In TAEF2's lowest-resolution blocks a "midblock GN"
// branch is first added to the input: x += conv1x1(relu(GN(conv1x1(x)))).
type block struct {
	c0, c2, c4 *conv.Conv // .conv.0/.2/.4: (64, 64, 3, 3)
	pool       *gnBranch  // nil outside the GN blocks
}

type gnBranch struct {
	expand      *conv.Conv // .pool.0: (256, 64, 1, 1), no bias
	gamma, beta []float32  // .pool.1: GroupNorm(4, 256) affine (256)
	reduce      *conv.Conv // .pool.3: (64, 256, 1, 1), no bias
}

func bindBlock(b *binder, prefix string, gn bool) block {
	bl := block{
		c0: b.conv(prefix+".conv.0", width, width, 3, 1, true),
		c2: b.conv(prefix+".conv.2", width, width, 3, 1, true),
		c4: b.conv(prefix+".conv.4", width, width, 3, 1, true),
	}
	if gn {
		bl.pool = &gnBranch{
			expand: b.conv(prefix+".pool.0", poolWidth, width, 1, 1, false),
			gamma:  b.tensor(prefix+".pool.1.weight", poolWidth),
			beta:   b.tensor(prefix+".pool.1.bias", poolWidth),
			reduce: b.conv(prefix+".pool.3", width, poolWidth, 1, 1, false),
		}
	}
	return bl
}

// Encoder maps an RGB image [3][H][W] in [0,1] to latents [32][H/8][W/8].
type Encoder struct {
	in     *conv.Conv // 0: (64, 3, 3, 3)
	first  block      // 1
	stages [3]struct {
		down   *conv.Conv // 2, 6, 10: (64, 64, 3, 3), stride 2, no bias
		blocks [3]block   // 3-5, 7-9, 11-13 (11-13 with the GN branch)
	}
	out *conv.Conv // 14: (32, 64, 3, 3)
}

// Decoder maps latents [32][h][w] to an RGB image [3][8h][8w].
type Decoder struct {
	in     *conv.Conv // 1: (64, 32, 3, 3), then ReLU (2); 0 is the Clamp
	mid    [3]block   // 3-5, with the GN branch
	stages [3]struct {
		up     *conv.UpConv // 6+7, 11+12, 16+17: ×2 upsampling, then (64, 64, 3, 3), no bias
		blocks []block      // 8-10, 13-15, 18
	}
	out *conv.Conv // 19: (3, 64, 3, 3)
}

// NewEncoder binds the weights of a taef2_encoder.pth checkpoint.
func NewEncoder(f *pth.File) (*Encoder, error) {
	b := newBinder(f)
	e := &Encoder{}
	e.in = b.conv("0", width, 3, 3, 1, true)
	e.first = bindBlock(b, "1", false)
	for s := range e.stages {
		base := 2 + 4*s
		e.stages[s].down = b.conv(fmt.Sprint(base), width, width, 3, 2, false)
		for i := range e.stages[s].blocks {
			e.stages[s].blocks[i] = bindBlock(b, fmt.Sprint(base+1+i), s == 2)
		}
	}
	e.out = b.conv("14", LatentChannels, width, 3, 1, true)
	if err := b.finish(); err != nil {
		return nil, err
	}
	return e, nil
}

// NewDecoder binds the weights of a taef2_decoder.pth checkpoint.
func NewDecoder(f *pth.File) (*Decoder, error) {
	b := newBinder(f)
	d := &Decoder{}
	d.in = b.conv("1", width, LatentChannels, 3, 1, true)
	for i := range d.mid {
		d.mid[i] = bindBlock(b, fmt.Sprint(3+i), true)
	}
	for s, n := range []int{3, 3, 1} {
		base := 6 + 5*s // index of the Upsample module
		d.stages[s].up = b.upconv(fmt.Sprint(base+1), width, width)
		for i := 0; i < n; i++ {
			d.stages[s].blocks = append(d.stages[s].blocks, bindBlock(b, fmt.Sprint(base+2+i), false))
		}
	}
	d.out = b.conv("19", 3, width, 3, 1, true)
	if err := b.finish(); err != nil {
		return nil, err
	}
	return d, nil
}

// net carries what a forward pass needs: the thread runner, the arena the
// activations come from and the context that may cancel it.
type net struct {
	ctx context.Context
	r   conv.Runner
	a   *conv.Arena
}

// conv applies c to x and releases x.
func (n *net) conv(c *conv.Conv, x *conv.Map, relu bool) (*conv.Map, error) {
	if err := n.ctx.Err(); err != nil {
		return nil, err
	}
	y := n.a.Map(c.OutSize(x.H), c.OutSize(x.W), c.Cout)
	err := c.Apply(n.r, y, x, nil, relu)
	n.a.Release(x)
	return y, err
}

// block runs bl on x and releases x.
func (n *net) block(bl *block, x *conv.Map) (*conv.Map, error) {
	if err := n.ctx.Err(); err != nil {
		return nil, err
	}
	if p := bl.pool; p != nil {
		h := n.a.Map(x.H, x.W, poolWidth)
		if err := p.expand.Apply(n.r, h, x, nil, false); err != nil {
			return nil, err
		}
		if err := conv.GroupNorm(n.r, h, poolGroups, p.gamma, p.beta, gnEps, true); err != nil {
			return nil, err
		}
		x2 := n.a.Map(x.H, x.W, width)
		err := p.reduce.Apply(n.r, x2, h, x, false) // x + branch(x)
		n.a.Release(h)
		n.a.Release(x)
		if err != nil {
			return nil, err
		}
		x = x2
	}
	t1 := n.a.Map(x.H, x.W, width)
	t2 := n.a.Map(x.H, x.W, width)
	err := bl.c0.Apply(n.r, t1, x, nil, true)
	if err == nil {
		err = bl.c2.Apply(n.r, t2, t1, nil, true)
	}
	if err == nil {
		err = bl.c4.Apply(n.r, t1, t2, x, true) // relu(conv + x)
	}
	n.a.Release(t2)
	n.a.Release(x)
	return t1, err
}

// encode runs the encoder on x (an image map) and releases x.
func (e *Encoder) encode(n *net, x *conv.Map) (*conv.Map, error) {
	tr := pipeline.TraceFrom(n.ctx)
	total, done := int64(3+4*3), int64(0)
	step := func() { done++; tr.OnProgress(pipeline.StageEncode, done, total) }
	x, err := n.conv(e.in, x, false)
	if err != nil {
		return nil, err
	}
	step()
	if x, err = n.block(&e.first, x); err != nil {
		return nil, err
	}
	step()
	for s := range e.stages {
		if x, err = n.conv(e.stages[s].down, x, false); err != nil {
			return nil, err
		}
		step()
		for i := range e.stages[s].blocks {
			if x, err = n.block(&e.stages[s].blocks[i], x); err != nil {
				return nil, err
			}
			step()
		}
	}
	x, err = n.conv(e.out, x, false)
	step()
	return x, err
}

// head runs the decoder's whole-image part (Clamp, conv, ReLU and the three
// GN blocks, all at latent resolution) on z and releases z.
func (d *Decoder) head(n *net, z *conv.Map) (*conv.Map, error) {
	conv.SoftClamp(n.r, z, clampScale)
	x, err := n.conv(d.in, z, true)
	if err != nil {
		return nil, err
	}
	for i := range d.mid {
		if x, err = n.block(&d.mid[i], x); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// tail runs the upsampling part on x (64 channels, any crop of the head's
// output) and releases x; it has no whole-image statistics, so it can run
// on tiles.
func (d *Decoder) tail(n *net, x *conv.Map) (*conv.Map, error) {
	var err error
	for s := range d.stages {
		if err = n.ctx.Err(); err != nil {
			return nil, err
		}
		y := n.a.Map(2*x.H, 2*x.W, width)
		err = d.stages[s].up.Apply(n.r, y, x, nil, false)
		n.a.Release(x)
		if err != nil {
			return nil, err
		}
		x = y
		for i := range d.stages[s].blocks {
			if x, err = n.block(&d.stages[s].blocks[i], x); err != nil {
				return nil, err
			}
		}
	}
	return n.conv(d.out, x, false)
}
