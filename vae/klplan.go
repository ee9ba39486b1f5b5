package vae

import (
	"strings"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/tensor"
)

// packedBytes is what conv.NewConv's packed weights and bias of a
// cout×cin×k×k convolution occupy: blocks of 64, 32 or 16 output channels
// (the widest that divides cout), zero beyond cout.
func packedBytes(cout, cin, k int) int64 {
	return 4 * int64(blockLanes(cout)) * int64(k*k*cin+1)
}

// PlanKLDecode predicts the memory of decoding an h×w latent with the KL
// decoder, untiled (tile 0) or in tiles of tile latent pixels sharing
// overlap (0: KLDefaultOverlap). It follows the buffers of kl.go, where every
// resolution has its own arena and the previous one is dropped when the
// next starts, so the peak is the largest of these moments:
//
//   - the mid-block attention at latent resolution: 2 maps of 4 channels
//     and 3 of 512 (a ResBlock holds its input, SiLU(GN(x)) and conv1's
//     output), one block of scores (scoreRows rows × N positions), and the
//     packed keys and values (each N·512) with one of their unpacked copies
//   - each upsampling: the arena of the resolution it leaves plus its
//     output; a ResBlock that narrows the channels (512→256, 256→128) holds
//     its input (normalised in place after the shortcut) and 3 maps of its
//     output width
//   - the end: the last arena (3 maps of 128 channels, 1 of 256, the RGB
//     map) and the result.
//
// Tiled, the latent-resolution part runs once as above; then its output
// (512 channels) and the blended result (RGB and weights) stay while each
// tile runs the upsampling part at the tile's size. Total is the peak;
// Output the result (with the blending weights when tiled).
func PlanKLDecode(h, w, tile, overlap int) (DecodePlan, error) {
	if h < 1 || w < 1 || h > 1<<14 || w > 1<<14 {
		return DecodePlan{}, pipeline.Errorf(pipeline.StagePlan, "", "latent %dx%d: each side must be 1 to %d", w, h, 1<<14)
	}
	g, err := tiling(h, w, tile, klOverlap(overlap))
	if err != nil {
		return DecodePlan{}, err
	}
	p := DecodePlan{H: h, W: w, Tiles: len(g.ys) * len(g.xs)}
	if !g.single() {
		p.Tile, p.Overlap = tile, g.overlap
	}
	np := h * w
	mb := func(s, c int) int64 { return conv.MapBytes(h<<s, w<<s, c) }
	head := 2*mb(0, KLLatentChannels) + 3*mb(0, klMid)
	scores := conv.MapBytes(scoreRows(h, w), w, np)
	kv := packedBytes(np, klMid, 1) + packedBytes(klMid, np, 1)
	unpacked := 4 * int64(np) * klMid
	peak := max(head+kv+unpacked, head+scores+kv)
	px := int64(Scale*h) * int64(Scale*w)
	p.Output = 3 * 4 * px

	// The upsampling part on a th×tw input: its peak, and where it ends.
	tail := func(th, tw int, first int64) (peak, end int64) {
		tb := func(s, c int) int64 { return conv.MapBytes(th<<s, tw<<s, c) }
		l1 := 3 * tb(1, 512)
		l2 := tb(2, 512) + 3*tb(2, 256)
		l3 := tb(3, 256) + 3*tb(3, 128) + tb(3, 3)
		peak = max(first+tb(1, 512), l1+tb(2, 512), l2+tb(3, 256), l3)
		return peak, l3
	}
	if g.single() {
		tp, end := tail(h, w, head+scores)
		p.Total = max(peak, tp, end+p.Output)
	} else {
		p.Output += 4 * px
		keep := mb(0, klMid) + p.Output
		crop := conv.MapBytes(g.th, g.tw, klMid)
		tp, _ := tail(g.th, g.tw, crop)
		p.Total = max(peak, head+scores, keep+tp)
	}
	p.Activations = p.Total - p.Output
	return p, nil
}

// KLDecodeBytes returns the peak bytes of decoding an h×w latent with the
// tiling of plan (its Tile and Overlap; the zero plan is untiled), as
// PlanKLDecode computes them; 0 for sizes it refuses.
func KLDecodeBytes(h, w int, plan DecodePlan) int64 {
	p, err := PlanKLDecode(h, w, plan.Tile, plan.Overlap)
	if err != nil {
		return 0
	}
	return p.Total
}

// ChooseKLTile returns the plan of the cheapest KL decode that fits budget
// bytes: untiled when it fits, otherwise the largest tile (in steps of 8
// latent pixels) that does. Overlap 0 means KLDefaultOverlap. The
// latent-resolution part is never tiled, so its peak is a floor.
func ChooseKLTile(h, w, overlap int, budget int64) (DecodePlan, error) {
	return chooseTile(h, w, klOverlap(overlap), budget, PlanKLDecode)
}

// PlanKLEncode predicts the memory of encoding an h×w image (multiples of
// 8) with the KL encoder, following kl.go as PlanKLDecode does: at each
// resolution the arena holds the level's input, and a ResBlock's 3 maps of
// its output width (a widening block normalises its input in place after
// the shortcut); each downsampling adds its output to the arena it leaves;
// at latent resolution the mid-block attention adds its scores and packed
// keys and values, and the end the 8-channel moments twice and the result.
func PlanKLEncode(h, w int) (EncodePlan, error) {
	if h < Scale || w < Scale || h%Scale != 0 || w%Scale != 0 || h > Scale<<14 || w > Scale<<14 {
		return EncodePlan{}, pipeline.Errorf(pipeline.StagePlan, "resize the image to multiples of 8", "image %dx%d px: each side must be a multiple of 8 from 8 to %d", w, h, Scale<<14)
	}
	mb := func(s, c int) int64 { return conv.MapBytes(h>>s, w>>s, c) }
	lh, lw := h/Scale, w/Scale
	np := lh * lw
	l3 := 3 * mb(3, klMid)
	scores := conv.MapBytes(scoreRows(lh, lw), lw, np)
	kv := packedBytes(np, klMid, 1) + packedBytes(klMid, np, 1)
	p := EncodePlan{H: h, W: w, Output: 4 * 2 * KLLatentChannels * int64(np)}
	p.Total = max(
		mb(0, 3)+3*mb(0, 128)+mb(1, 128),
		mb(1, 128)+3*mb(1, 256)+mb(2, 256),
		mb(2, 256)+3*mb(2, 512)+mb(3, 512),
		l3+kv+4*int64(np)*klMid,
		l3+scores+kv,
		l3+scores+2*mb(3, 2*KLLatentChannels)+p.Output,
	)
	p.Activations = p.Total - p.Output
	return p, nil
}

// KLWeightBytes is what NewKL(src) keeps, from the tensors' shapes and
// element types without reading them: each convolution packed as the
// conv package packs it (binary16 kernels where the file stores F16,
// float32 otherwise; the upsampling convs' combined 2×2 kernels of four
// parities likewise), the group norms widened to float32. The file's pages are not counted: the binder drops
// them once copied.
func KLWeightBytes(src checkpoint.Source) int64 {
	var n int64
	for _, name := range src.Names() {
		if !strings.HasPrefix(name, "encoder.") && !strings.HasPrefix(name, "decoder.") &&
			!strings.HasPrefix(name, "quant_conv.") && !strings.HasPrefix(name, "post_quant_conv.") {
			continue
		}
		t, ok := src.Tensor(name)
		if !ok {
			continue
		}
		if strings.Contains(name, "norm") {
			n += 4 * int64(t.Numel())
			continue
		}
		if !strings.HasSuffix(name, ".weight") {
			continue // a conv's bias: counted with its kernel
		}
		cout, cin, k := 0, 0, 1
		switch len(t.Shape) {
		case 4:
			cout, cin, k = t.Shape[0], t.Shape[1], t.Shape[2]
		case 2: // an attention projection stored as a matrix
			cout, cin = t.Shape[0], t.Shape[1]
		default:
			continue
		}
		lanes := int64(blockLanes(cout))
		switch {
		case strings.Contains(name, "upsample.conv") && t.DType == tensor.F16:
			n += lanes * (2*int64(16*cin) + 4)
		case strings.Contains(name, "upsample.conv"):
			n += 4 * lanes * int64(16*cin+1)
		case t.DType == tensor.F16:
			n += lanes * (2*int64(k*k*cin) + 4)
		default:
			n += packedBytes(cout, cin, k)
		}
	}
	return n
}

// blockLanes is the output channels a packed convolution holds, cout
// rounded up to its blocks of 64, 32 or 16.
func blockLanes(cout int) int {
	nr := 16
	switch {
	case cout%64 == 0:
		nr = 64
	case cout%32 == 0:
		nr = 32
	}
	return (cout + nr - 1) / nr * nr
}
