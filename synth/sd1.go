package synth

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/safetensors"
	"github.com/glassbox-ai/glassbox/tensor"
)

// SD1Seed is the seed of spec sd15-rand-v1 (golden/sd15/README.md §2.3).
const SD1Seed = 0x5D150001

// SD1Options describe the random-weight SD 1.5 checkpoint sd15-rand
// (spec v1 of the shared golden set: shared/golden/sd15/README.md §2).
type SD1Options struct {
	// F32 writes the F32 variant (§2.6: the same F16 values widened
	// exactly) instead of the F16 file.
	F32 bool
	// Workers generate chunks in parallel; 0 means GOMAXPROCS. The output
	// does not depend on it.
	Workers int
	// Progress, if set, is called after each chunk with the bytes of
	// tensor data written so far and the total.
	Progress func(done, total int64)
}

// sd1GainRules are §2.4's gains: a tensor whose name ends with suffix has
// its weights' standard deviation multiplied by gain, in output rows
// [r0, r1) of dimension 0 (r1 = 0: all rows).
var sd1GainRules = []struct {
	suffix string
	r0, r1 int
	gain   float64
}{
	{"model.diffusion_model.out.2.weight", 0, 0, 3.0},
	{"emb_layers.1.weight", 0, 0, 2.0},
	{"model.diffusion_model.input_blocks.0.0.weight", 0, 0, 0.1},
	{"first_stage_model.encoder.conv_out.weight", 0, 0, 16.0},
	{"first_stage_model.quant_conv.weight", 4, 8, 0.03125},
}

// sd1Metadata is the header's __metadata__, in the file's order.
func sd1Metadata(dt tensor.DType) []safetensors.KV {
	var rules []string
	for _, r := range sd1GainRules {
		s := fmt.Sprintf("%s=%.1f", r.suffix, r.gain)
		if r.r1 > 0 {
			s = fmt.Sprintf("%s@%d:%d=%g", r.suffix, r.r0, r.r1, r.gain)
		}
		rules = append(rules, s)
	}
	meta := []safetensors.KV{
		{Key: "format", Value: "pt"},
		{Key: "spec", Value: "sd15-rand-v1"},
		{Key: "seed", Value: fmt.Sprintf("0x%X", SD1Seed)},
		{Key: "gain_rules", Value: strings.Join(rules, ";")},
	}
	if dt == tensor.F32 {
		meta = append(meta, safetensors.KV{Key: "note", Value: "F32 widening of the F16 sd15-rand file"})
	}
	return meta
}

// sdKind is how a tensor's values are drawn (§2.2).
type sdKind uint8

const (
	kindWeight sdKind = iota // u·s, s = gain·√3/√fan_in
	kindBias                 // u/√fan_in of the weight beside it
	kindNormW                // 1 + u/8
	kindNormB                // u/8
	kindEmbed                // u
)

// sdSegment is a run of elements [begin, end) drawn with one scale.
type sdSegment struct {
	begin, end int64
	scale      float32
}

// sdPlan is how one tensor's values are made.
type sdPlan struct {
	SDTensor
	k        uint64 // index in the sorted order: the PRNG stream
	kind     sdKind
	segments []sdSegment // kindWeight and kindBias
}

func (p *sdPlan) numel() int64 {
	n := int64(1)
	for _, d := range p.Shape {
		n *= int64(d)
	}
	return n
}

// sd1Plans classifies every tensor of ts (sorted; k is the index) by §2.2
// and computes its scales by §2.4.
func sd1Plans(ts []SDTensor) []sdPlan {
	byName := make(map[string]SDTensor, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	fanIn := func(shape []int) int64 {
		n := int64(1)
		for _, d := range shape[1:] {
			n *= int64(d)
		}
		return n
	}
	plans := make([]sdPlan, len(ts))
	for k, t := range ts {
		p := sdPlan{SDTensor: t, k: uint64(k)}
		n := p.numel()
		switch {
		case strings.HasSuffix(t.Name, "embedding.weight"):
			p.kind = kindEmbed
		case strings.HasSuffix(t.Name, ".weight") && len(t.Shape) == 1:
			p.kind = kindNormW
		case strings.HasSuffix(t.Name, ".weight"):
			p.kind = kindWeight
			fi := fanIn(t.Shape)
			rowElems := n / int64(t.Shape[0])
			scale := func(gain float64) float32 { return float32(gain * math.Sqrt(3.0) / math.Sqrt(float64(fi))) }
			p.segments = []sdSegment{{0, n, scale(1)}}
			for _, r := range sd1GainRules {
				if !strings.HasSuffix(t.Name, r.suffix) {
					continue
				}
				if r.r1 == 0 {
					p.segments = []sdSegment{{0, n, scale(r.gain)}}
				} else {
					b, e := int64(r.r0)*rowElems, int64(r.r1)*rowElems
					p.segments = []sdSegment{{0, b, scale(1)}, {b, e, scale(r.gain)}, {e, n, scale(1)}}
				}
				break
			}
		default: // .bias
			w, ok := byName[strings.TrimSuffix(t.Name, ".bias")+".weight"]
			if ok && len(w.Shape) == 1 {
				p.kind = kindNormB
			} else {
				p.kind = kindBias
				p.segments = []sdSegment{{0, n, float32(1.0 / math.Sqrt(float64(fanIn(w.Shape))))}}
			}
		}
		plans[k] = p
	}
	return plans
}

// sdUniform is §2.3: the uniform variate in [-1, 1) for element i of
// tensor k, exact in float32 (a 24-bit integer times 2^-23).
func sdUniform(k, i uint64) float32 {
	z := SD1Seed + k<<40 + i + 0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	z ^= z >> 31
	return float32(int64(z>>40)-1<<23) * (1.0 / (1 << 23))
}

// values fills x with elements [i0, i0+len(x)) of the tensor (§2.4, in
// float32, one rounding per operation).
func (p *sdPlan) values(x []float32, i0 int64) {
	switch p.kind {
	case kindEmbed:
		for j := range x {
			x[j] = sdUniform(p.k, uint64(i0)+uint64(j))
		}
	case kindNormW:
		for j := range x {
			x[j] = float32(1) + float32(sdUniform(p.k, uint64(i0)+uint64(j))*0.125)
		}
	case kindNormB:
		for j := range x {
			x[j] = sdUniform(p.k, uint64(i0)+uint64(j)) * 0.125
		}
	default:
		for _, s := range p.segments {
			b, e := max(s.begin, i0), min(s.end, i0+int64(len(x)))
			for i := b; i < e; i++ {
				x[i-i0] = float32(sdUniform(p.k, uint64(i)) * s.scale)
			}
		}
	}
}

// encode writes x rounded to binary16 (round to nearest even, subnormals
// kept) into buf as dt: F16 as is, F32 as the half's exact widening.
func encode(buf []byte, x []float32, dt tensor.DType) {
	switch dt {
	case tensor.F16:
		kernel.FP32sToFP16(buf, x)
	default: // halves in buf's second half, widened into x, x into buf
		n := len(x)
		kernel.FP32sToFP16(buf[2*n:], x)
		kernel.FP16sToFP32(x, buf[2*n:])
		for j, v := range x {
			binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(v))
		}
	}
}

// WriteSD1 writes the sd15-rand checkpoint to w: byte for byte the file of
// shared/golden/sd15/README.md §2 (F16, 2,132,625,446 bytes) or its F32
// widening (§2.6, 4,265,096,604 bytes). It streams: at most a few chunks
// per worker are in memory.
func WriteSD1(ctx context.Context, w io.Writer, o SD1Options) error {
	dt := o.dtype()
	plans := sd1Plans(SD1Tensors())
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var total int64
	for i := range plans {
		total += plans[i].numel() * int64(dt.TypeSize())
	}
	g := newChunker(ctx, workers, total, o.Progress)
	defer g.stop()
	wts := make([]safetensors.WriteTensor, len(plans))
	for i := range plans {
		p := &plans[i]
		wts[i] = safetensors.WriteTensor{Name: p.Name, DType: dt, Shape: p.Shape, Fill: func(w io.Writer) error {
			return g.write(w, p.numel(), dt.TypeSize(), func(buf []byte, x []float32, i0 int64) {
				p.values(x, i0)
				encode(buf, x, dt)
			})
		}}
	}
	return safetensors.Write(w, wts, sd1Metadata(dt))
}

// WriteSD1File writes the checkpoint to path through a temporary file in
// the same folder, renamed into place only when complete.
func WriteSD1File(ctx context.Context, path string, o SD1Options) error {
	return writeAtomic(path, func(w io.Writer) error { return WriteSD1(ctx, w, o) })
}
