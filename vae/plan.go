package vae

import (
	"fmt"

	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// DecodePlan is the memory a decode will hold, predicted from the shapes
// before it runs.
type DecodePlan struct {
	H, W          int // latent size
	Tile, Overlap int // latent pixels; Tile 0 = untiled
	Tiles         int
	// Activations is the most feature-map bytes the decode's arena holds:
	// for every buffer size, the most buffers of that size alive at once
	// (the arena keeps released buffers for reuse), summed.
	Activations int64
	Output      int64 // the result image [3][8H][8W] float32, plus blending weights when tiled
	Total       int64 // Activations + Output
}

func (p DecodePlan) String() string {
	t := "untiled"
	if p.Tile > 0 {
		t = fmt.Sprintf("%d tiles of %d px (overlap %d px)", p.Tiles, Scale*p.Tile, Scale*p.Overlap)
	}
	return fmt.Sprintf("decode %dx%d px %s: %.0f MiB activations + %.0f MiB output", Scale*p.W, Scale*p.H, t,
		float64(p.Activations)/(1<<20), float64(p.Output)/(1<<20))
}

// usage counts buffers of one phase of the decode by byte length.
type usage map[int64]int

func (u usage) add(h, w, c, n int) { u[conv.MapBytes(h, w, c)] += n }

// PlanDecode predicts the memory of decoding an h×w latent with the given
// tile and overlap (as in Options). It follows the buffer use of head and
// tail in taef2.go: a Block holds its input and two temporaries; the GN
// branch adds one 256-channel map and one 64-channel sum; an upsampling
// conv holds its input and its output (twice the size).
func PlanDecode(h, w, tile, overlap int) (DecodePlan, error) {
	g, err := tiling(h, w, tile, overlap)
	if err != nil {
		return DecodePlan{}, err
	}
	p := DecodePlan{H: h, W: w, Tiles: len(g.ys) * len(g.xs)}
	if !g.single() {
		p.Tile, p.Overlap = tile, g.overlap
	}
	head := usage{}
	head.add(h, w, LatentChannels, 1)
	head.add(h, w, width, 3)
	head.add(h, w, poolWidth, 1)

	tail := usage{}
	tail.add(h, w, width, 1) // the head's output, alive through the tiles
	th, tw := g.th, g.tw
	if !g.single() {
		tail.add(th, tw, width, 1) // the tile's crop
	}
	for s := 1; s <= 3; s++ {
		tail.add(th<<s, tw<<s, width, 3)
	}
	tail.add(Scale*th, Scale*tw, 3, 1)

	peak := map[int64]int{}
	for _, u := range []usage{head, tail} {
		for k, n := range u {
			peak[k] = max(peak[k], n)
		}
	}
	for k, n := range peak {
		p.Activations += k * int64(n)
	}
	px := int64(Scale*h) * int64(Scale*w)
	p.Output = 3 * 4 * px
	if !g.single() {
		p.Output += 4 * px
	}
	p.Total = p.Activations + p.Output
	return p, nil
}

// ChooseTile returns the plan of the cheapest decode that fits budget
// bytes: untiled when it fits, otherwise the largest tile (in steps of 8
// latent pixels) that does. Overlap 0 means DefaultOverlap.
func ChooseTile(h, w, overlap int, budget int64) (DecodePlan, error) {
	return chooseTile(h, w, overlap, budget, PlanDecode)
}

// chooseTile is ChooseTile over a decoder's plan function.
func chooseTile(h, w, overlap int, budget int64, plan func(h, w, tile, overlap int) (DecodePlan, error)) (DecodePlan, error) {
	p, err := plan(h, w, 0, overlap)
	if err != nil || p.Total <= budget {
		return p, err
	}
	if overlap == 0 {
		overlap = DefaultOverlap
	}
	for t := (max(h, w) - 1) / 8 * 8; t > overlap; t -= 8 {
		q, err := plan(h, w, t, overlap)
		if err != nil {
			return q, err
		}
		if q.Total <= budget {
			return q, nil
		}
	}
	smallest := (overlap/8 + 1) * 8
	if smallest >= max(h, w) {
		return p, pipeline.Errorf(pipeline.StagePlan, "raise --mem-budget if the memory is there", "decoding %dx%d px needs %.0f MiB, more than the budget of %.0f MiB, and the image is too small to tile with a %d px overlap",
			Scale*w, Scale*h, float64(p.Total)/(1<<20), float64(budget)/(1<<20), Scale*overlap).With("need_bytes", p.Total).With("budget_bytes", budget)
	}
	q, _ := plan(h, w, smallest, overlap)
	return p, pipeline.Errorf(pipeline.StagePlan, "a smaller --overlap allows smaller tiles", "decoding %dx%d px needs %.0f MiB untiled and %.0f MiB in the smallest tiles (%d px), more than the budget of %.0f MiB",
		Scale*w, Scale*h, float64(p.Total)/(1<<20), float64(q.Total)/(1<<20), Scale*smallest, float64(budget)/(1<<20)).With("need_bytes", q.Total).With("budget_bytes", budget)
}

// Flops returns the floating-point operations (2 per multiply-add) of the
// decoder's convolutions on an h×w latent, untiled.
func (d *Decoder) Flops(h, w int) int64 {
	n := d.in.Flops(h, w)
	for i := range d.mid {
		n += blockFlops(&d.mid[i], h, w)
	}
	for s := range d.stages {
		n += d.stages[s].up.Flops(h, w)
		h, w = 2*h, 2*w
		for i := range d.stages[s].blocks {
			n += blockFlops(&d.stages[s].blocks[i], h, w)
		}
	}
	return n + d.out.Flops(h, w)
}

// Flops returns the floating-point operations of the encoder's
// convolutions on an h×w image.
func (e *Encoder) Flops(h, w int) int64 {
	n := e.in.Flops(h, w) + blockFlops(&e.first, h, w)
	for s := range e.stages {
		n += e.stages[s].down.Flops(h, w)
		h, w = e.stages[s].down.OutSize(h), e.stages[s].down.OutSize(w)
		for i := range e.stages[s].blocks {
			n += blockFlops(&e.stages[s].blocks[i], h, w)
		}
	}
	return n + e.out.Flops(h, w)
}

func blockFlops(b *block, h, w int) int64 {
	n := b.c0.Flops(h, w) + b.c2.Flops(h, w) + b.c4.Flops(h, w)
	if b.pool != nil {
		n += b.pool.expand.Flops(h, w) + b.pool.reduce.Flops(h, w)
	}
	return n
}

// EncodePlan is the memory an encode will hold, predicted from the shapes.
type EncodePlan struct {
	H, W        int   // image size
	Activations int64 // the arena's high-water mark (see DecodePlan)
	Output      int64 // the latents [32][H/8][W/8] float32
	Total       int64
}

func (p EncodePlan) String() string {
	return fmt.Sprintf("encode %dx%d px: %.0f MiB activations + %.0f MiB output", p.W, p.H,
		float64(p.Activations)/(1<<20), float64(p.Output)/(1<<20))
}

// PlanEncode predicts the memory of encoding an h×w image, following the
// buffer use of encode in taef2.go: the image, then at each resolution a
// Block's input and two temporaries (the stride-2 conv's output is the next
// resolution's first), the GN branch's 256-channel map at the lowest one,
// and the latents. The encoder is not tiled: its last stage's GroupNorm
// needs whole-image statistics, and its peak is at full resolution.
func PlanEncode(h, w int) (EncodePlan, error) {
	if h < 1 || w < 1 || h > 1<<17 || w > 1<<17 {
		return EncodePlan{}, pipeline.Errorf(pipeline.StagePlan, "", "image %dx%d px: each side must be 1 to %d", w, h, 1<<17)
	}
	u := usage{}
	u.add(h, w, 3, 1)
	u.add(h, w, width, 3)
	lh, lw := h, w
	for s := 0; s < 3; s++ {
		lh, lw = (lh-1)/2+1, (lw-1)/2+1
		u.add(lh, lw, width, 3)
	}
	u.add(lh, lw, poolWidth, 1)
	u.add(lh, lw, LatentChannels, 1)
	p := EncodePlan{H: h, W: w}
	for k, n := range u {
		p.Activations += k * int64(n)
	}
	p.Output = 4 * LatentChannels * int64(lh) * int64(lw)
	p.Total = p.Activations + p.Output
	return p, nil
}

// PlanWithin plans a decode that must fit budget bytes together with the
// decoder's weights (weights bytes): with tile > 0 it checks that tiling,
// otherwise it chooses one (ChooseTile) within what the weights leave.
// Its refusals name the whole need and the whole budget, never a negative
// remainder: the weights, the decode's own memory and their sum.
func PlanWithin(h, w, tile, overlap int, weights, budget int64) (DecodePlan, error) {
	p, err := PlanDecode(h, w, tile, overlap)
	if err != nil {
		return p, err
	}
	refuse := func(hint string, q DecodePlan, how string) error {
		need := weights + q.Total
		return pipeline.Errorf(pipeline.StagePlan, hint, "decoding %dx%d px needs %s (the decoder's %s of weights and %s for the decode %s), more than the budget of %s",
			Scale*w, Scale*h, mib(need), mib(weights), mib(q.Total), how, mib(budget)).
			With("need_bytes", need).With("weights_bytes", weights).With("budget_bytes", budget)
	}
	if tile > 0 {
		if weights+p.Total > budget {
			return p, refuse("use a smaller --tile, or drop --tile to let the planner choose", p, fmt.Sprintf("in %d tiles of %d px", p.Tiles, Scale*p.Tile))
		}
		return p, nil
	}
	if weights+p.Total <= budget {
		return p, nil
	}
	if q, err := ChooseTile(h, w, overlap, budget-weights); err == nil {
		return q, nil
	}
	ov := overlap
	if ov == 0 {
		ov = DefaultOverlap
	}
	smallest := (ov/8 + 1) * 8
	if smallest >= max(h, w) {
		return p, refuse("raise --mem-budget if the memory is there", p, fmt.Sprintf("untiled: the image is too small to tile with a %d px overlap", Scale*ov))
	}
	q, _ := PlanDecode(h, w, smallest, overlap)
	return p, refuse("raise --mem-budget if the memory is there, or use a smaller --overlap", q, fmt.Sprintf("in its smallest tiles, of %d px", Scale*smallest))
}

// mib formats a byte count in MiB, with a decimal below 10 MiB.
func mib(n int64) string {
	f := float64(n) / (1 << 20)
	if f < 10 {
		return fmt.Sprintf("%.1f MiB", f)
	}
	return fmt.Sprintf("%.0f MiB", f)
}
