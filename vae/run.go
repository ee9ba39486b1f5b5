package vae

import (
	"context"
	"math"

	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// Options configure a run. The zero value runs serially, untiled, with a
// private arena.
type Options struct {
	Runner conv.Runner // *compute.Pool; nil runs on the caller's goroutine
	// Arena is where activations come from; nil for a private one. A shared
	// arena is reused across runs (no allocation after the first); after a
	// failed run it still counts the maps that run held, so drop it then.
	Arena *conv.Arena
	// Tile is the decode tile edge in latent pixels (output pixels / 8),
	// margins included; 0 decodes the whole image at once.
	Tile int
	// Overlap is the number of latent pixels adjacent tiles share; 0 means
	// DefaultOverlap. Ignored when untiled.
	Overlap int
}

// Context is how far, in latent pixels, the decoder's tiled part sees:
// 10 3×3 convs at 2×, 10 at 4× and 5 at 8× reach 5 + 2.5 + 0.625 latent
// pixels, plus rounding through the nearest-neighbour upsamplings. An
// output pixel at least Context latent pixels inside a tile is exactly the
// untiled value.
const Context = 10

// DefaultOverlap is the tile overlap in latent pixels: a margin of Context
// on each side, where a tile's weight is zero, and 4 latent pixels (32 px)
// of linear blend between them, where both tiles are exact. Tiled and
// untiled decodes then agree to rounding.
const DefaultOverlap = 2*Context + 4

func (o *Options) arena() *conv.Arena {
	if o.Arena == nil {
		o.Arena = new(conv.Arena)
	}
	return o.Arena
}

// Encode maps img [3][h][w] (RGB in [0,1]) to latents [32][lh][lw] with
// lh = ceil(h/8), lw = ceil(w/8).
func (e *Encoder) Encode(ctx context.Context, img []float32, h, w int, opt Options) (latent []float32, lh, lw int, err error) {
	if h < 1 || w < 1 || len(img) != 3*h*w {
		return nil, 0, 0, pipeline.Errorf(pipeline.StageEncode, "", "image of %d values does not match [3 %d %d]", len(img), h, w)
	}
	n := &net{ctx: ctx, r: opt.Runner, a: opt.arena()}
	x := n.a.Map(h, w, 3)
	if err := x.SetCHW(img); err != nil {
		return nil, 0, 0, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	z, err := e.encode(n, x)
	if err != nil {
		return nil, 0, 0, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	defer n.a.Release(z)
	return z.ToCHW(), z.H, z.W, nil
}

// Decode maps latents [32][h][w] to an image [3][8h][8w]. The output is
// not clamped: TAEF2's raw values run slightly outside [0,1].
func (d *Decoder) Decode(ctx context.Context, latent []float32, h, w int, opt Options) ([]float32, error) {
	fail := func(err error) ([]float32, error) { return nil, pipeline.Wrap(pipeline.StageDecode, err, "") }
	if h < 1 || w < 1 || len(latent) != LatentChannels*h*w {
		return nil, pipeline.Errorf(pipeline.StageDecode, "", "latents of %d values do not match [%d %d %d]", len(latent), LatentChannels, h, w)
	}
	if err := checkFinite(latent, h, w); err != nil {
		return nil, err
	}
	g, err := tiling(h, w, opt.Tile, opt.Overlap)
	if err != nil {
		return fail(err)
	}
	n := &net{ctx: ctx, r: opt.Runner, a: opt.arena()}
	tr := pipeline.TraceFrom(ctx)
	// The progress counts the tiles the decode makes (one when untiled):
	// 0 of them once the shared head has run, then one more per tile.
	total := int64(len(g.ys) * len(g.xs))
	m := n.a.Map(h, w, LatentChannels)
	if err := m.SetCHW(latent); err != nil {
		return fail(err)
	}
	x, err := d.head(n, m)
	if err != nil {
		return fail(err)
	}
	tr.OnProgress(pipeline.StageDecode, 0, total)
	if g.single() {
		y, err := d.tail(n, x)
		if err != nil {
			return fail(err)
		}
		out := y.ToCHW()
		n.a.Release(y)
		tr.OnProgress(pipeline.StageDecode, total, total)
		return out, nil
	}
	defer n.a.Release(x)
	bl := newBlender(Scale*h, Scale*w, g)
	done := int64(0)
	for _, ty := range g.ys {
		for _, tx := range g.xs {
			crop := n.a.Map(g.th, g.tw, width)
			for yy := 0; yy < g.th; yy++ {
				copy(crop.Row(yy), x.Row(ty + yy)[tx*width:(tx+g.tw)*width])
			}
			y, err := d.tail(n, crop)
			if err != nil {
				return fail(err)
			}
			bl.add(y, ty, tx)
			n.a.Release(y)
			done++
			tr.OnProgress(pipeline.StageDecode, done, total)
		}
	}
	return bl.result(), nil
}

// grid is a tiling of an h×w latent: tiles of th×tw starting at rows ys and
// columns xs.
type grid struct {
	h, w, th, tw, overlap int
	ys, xs                []int
}

func (g grid) single() bool { return len(g.ys) == 1 && len(g.xs) == 1 && g.th == g.h && g.tw == g.w }

// tiling places tiles of edge tile (latent pixels) sharing overlap pixels,
// the last one flush with the edge.
func tiling(h, w, tile, overlap int) (grid, error) {
	if overlap == 0 {
		overlap = DefaultOverlap
	}
	if tile < 0 || overlap < 0 {
		return grid{}, pipeline.Errorf(pipeline.StagePlan, "", "tile %d and overlap %d (latent pixels) must not be negative", tile, overlap)
	}
	if tile == 0 || (tile >= h && tile >= w) {
		return grid{h: h, w: w, th: h, tw: w, ys: []int{0}, xs: []int{0}}, nil
	}
	if tile <= overlap {
		return grid{}, pipeline.Errorf(pipeline.StagePlan, "use a larger tile or a smaller overlap", "a tile of %d px must be larger than the %d px overlap", Scale*tile, Scale*overlap)
	}
	g := grid{h: h, w: w, th: min(tile, h), tw: min(tile, w), overlap: overlap}
	g.ys = starts(h, g.th, tile-overlap)
	g.xs = starts(w, g.tw, tile-overlap)
	if n := len(g.ys) * len(g.xs); n > maxTiles {
		return grid{}, pipeline.Errorf(pipeline.StagePlan, "use larger tiles or a smaller overlap", "%d tiles of %d px with a %d px overlap (at most %d)",
			n, Scale*tile, Scale*overlap, maxTiles)
	}
	return g, nil
}

// maxTiles bounds a tiling; beyond it the overlaps are most of the work.
const maxTiles = 4096

func starts(n, t, stride int) []int {
	if t >= n {
		return []int{0}
	}
	var s []int
	for p := 0; ; p += stride {
		if p+t >= n {
			return append(s, n-t)
		}
		s = append(s, p)
	}
}

// blender accumulates weighted tile outputs: each tile's weight ramps
// linearly from near 0 to 1 across the overlap on every side that faces
// another tile, and the result is the weighted mean.
type blender struct {
	h, w int
	g    grid
	acc  []float32 // [3][h][w]
	wsum []float32 // [h][w]
}

func newBlender(h, w int, g grid) *blender {
	return &blender{h: h, w: w, g: g, acc: make([]float32, 3*h*w), wsum: make([]float32, h*w)}
}

// ramp returns the weight of position i (output pixels) in a tile of n
// pixels starting at p along an axis of length total. On a side that faces
// another tile the weight is 0 for the first m pixels (the tile has not
// seen their full context), then rises linearly over r pixels.
func ramp(i, n, p, total, overlap int) float32 {
	m := max(0, min(Scale*Context, (overlap-Scale)/2))
	r := float32(overlap - 2*m)
	wt := float32(1)
	if p > 0 && i < overlap {
		wt = min(wt, max(0, (float32(i-m)+0.5)/r))
	}
	if p+n < total && i >= n-overlap {
		wt = min(wt, max(0, (float32(n-1-i-m)+0.5)/r))
	}
	return wt
}

func (b *blender) add(y *conv.Map, ty, tx int) {
	py, px, ov := Scale*ty, Scale*tx, Scale*b.g.overlap
	wx := make([]float32, y.W)
	for x := range wx {
		wx[x] = ramp(x, y.W, px, b.w, ov)
	}
	for yy := 0; yy < y.H; yy++ {
		wy := ramp(yy, y.H, py, b.h, ov)
		row := y.Row(yy)
		o := (py+yy)*b.w + px
		for x := 0; x < y.W; x++ {
			wt := wy * wx[x]
			b.wsum[o+x] += wt
			for c := 0; c < 3; c++ {
				b.acc[c*b.h*b.w+o+x] += wt * row[x*3+c]
			}
		}
	}
}

func (b *blender) result() []float32 {
	n := b.h * b.w
	for i, s := range b.wsum {
		for c := 0; c < 3; c++ {
			b.acc[c*n+i] /= s
		}
	}
	return b.acc
}

// checkFinite refuses latents holding NaN or ±Inf (a sampler that
// overflowed): decoding them would quietly give a black or broken image.
func checkFinite(z []float32, h, w int) error {
	var nan, inf, first int
	first = -1
	for i, v := range z {
		switch {
		case v != v:
			nan++
		case math.IsInf(float64(v), 0):
			inf++
		default:
			continue
		}
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return nil
	}
	c, y, x := first/(h*w), first/w%h, first%w
	return pipeline.Errorf(pipeline.StageDecode, "the step that produced the latents overflowed; nothing to decode",
		"latents hold %d NaN and %d infinite values (first at channel %d, row %d, column %d)", nan, inf, c, y, x).
		With("nan", int64(nan)).With("inf", int64(inf))
}
