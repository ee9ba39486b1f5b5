package vae

import (
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
)

// forRows runs fn over [0, n) on r (serially when r is nil).
func forRows(r conv.Runner, n int, fn func(lo, hi int)) {
	if r == nil {
		fn(0, n)
		return
	}
	r.For(n, fn)
}

// groupNorm writes dst = GN(src) with 32 groups and eps 1e-6, then SiLU
// when silu is set (x·σ(x), compute.SiLU); dst may be src. Statistics are
// summed in float32 over a pixel's channels of a group, then in float64
// per row and over rows in row order, so the result does not depend on
// the thread count; the variance is the biased one, as torch's.
func groupNorm(r conv.Runner, dst, src *conv.Map, g gnParams, silu bool) error {
	c := src.C
	if dst.H != src.H || dst.W != src.W || dst.C != c || c%klGroups != 0 || len(g.gamma) != c || len(g.beta) != c {
		return fmt.Errorf("groupnorm: %dx%dx%d into %dx%dx%d with %d weights (%d groups)", src.H, src.W, c, dst.H, dst.W, dst.C, len(g.gamma), klGroups)
	}
	cg := c / klGroups
	part := make([]float64, src.H*klGroups*2)
	forRows(r, src.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			row, p := src.Row(y), part[y*klGroups*2:(y+1)*klGroups*2]
			for x := 0; x < src.W; x++ {
				px := row[x*c : (x+1)*c]
				for gi := 0; gi < klGroups; gi++ {
					var s, s2 float32
					for _, v := range px[gi*cg : (gi+1)*cg] {
						s += v
						s2 += v * v
					}
					p[2*gi] += float64(s)
					p[2*gi+1] += float64(s2)
				}
			}
		}
	})
	scale := make([]float32, c)
	shift := make([]float32, c)
	n := float64(src.H * src.W * cg)
	for gi := 0; gi < klGroups; gi++ {
		var s, s2 float64
		for y := 0; y < src.H; y++ {
			s += part[(y*klGroups+gi)*2]
			s2 += part[(y*klGroups+gi)*2+1]
		}
		mean := s / n
		inv := 1 / math.Sqrt(max(s2/n-mean*mean, 0)+klEps)
		for ch := gi * cg; ch < (gi+1)*cg; ch++ {
			scale[ch] = float32(inv * float64(g.gamma[ch]))
			shift[ch] = float32(float64(g.beta[ch]) - mean*inv*float64(g.gamma[ch]))
		}
	}
	forRows(r, src.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			in, out := src.Row(y), dst.Row(y)
			for x := 0; x < src.W; x++ {
				o := x * c
				for ch, v := range in[o : o+c] {
					out[o+ch] = float32(v*scale[ch]) + shift[ch]
				}
			}
			if silu {
				compute.SiLU(out)
			}
		}
	})
	return nil
}

// rows returns the view of m's image rows [y0, y0+n) as a map of n rows.
// Its border rows are m's neighbouring rows, so only operators that read
// and write interiors alone (1×1 convolutions) may use it.
func rows(m *conv.Map, y0, n int) *conv.Map {
	rs := m.RowStride()
	return &conv.Map{H: n, W: m.W, C: m.C, Data: m.Data[y0*rs : (y0+n+2)*rs]}
}

// scoreRows is how many image rows of queries attention scores at once:
// about 2M scores, at least one row.
func scoreRows(h, w int) int { return min(h, max(1, (2<<20)/((w+2)*h*w))) }

// attention runs an AttnBlock on x (from a) and releases x. The keys
// (scaled by 1/√C) and the values, transposed, become the weights of two
// 1×1 convolutions, so the scores and the weighted sum run on conv's
// micro-kernels: for a block of query rows, s = q·kᵀ/√C (N channels per
// query), softmax over them, then out = s·v. The packed keys and values are
// outside the arena and counted in the meter.
func (n *klNet) attention(a *conv.Arena, b *attnBlock, x *conv.Map) (*conv.Map, error) {
	if err := n.ctx.Err(); err != nil {
		return nil, err
	}
	t := a.Map(x.H, x.W, x.C)
	if err := groupNorm(n.r, t, x, b.norm, false); err != nil {
		return nil, err
	}
	return n.attend(a, b, x, t)
}

// attend is attention's part after the norm: t is the normalised x (both
// from a), released here with x; b.norm is not used.
func (n *klNet) attend(a *conv.Arena, b *attnBlock, x, t *conv.Map) (*conv.Map, error) {
	h, w, c := x.H, x.W, x.C
	np := h * w
	// Keys: weights [N][C] of a conv with N outputs.
	km := a.Map(h, w, c)
	if err := b.k.Apply(n.r, km, t, nil, false); err != nil {
		return nil, err
	}
	kw := make([]float32, np*c)
	sc := float32(1 / math.Sqrt(float64(c)))
	for y := 0; y < h; y++ {
		row := km.Row(y)
		dst := kw[y*w*c : (y+1)*w*c]
		for i, v := range row {
			dst[i] = v * sc
		}
	}
	a.Release(km)
	kc, err := conv.NewConv(kw, nil, np, c, 1, 1)
	if err != nil {
		return nil, err
	}
	n.m.fixed += 4*int64(len(kw)) + kc.Bytes()
	n.m.sample()
	n.m.fixed -= 4 * int64(len(kw))
	kw = nil
	// Values: weights [C][N] of a conv with C outputs.
	vm := a.Map(h, w, c)
	if err := b.v.Apply(n.r, vm, t, nil, false); err != nil {
		return nil, err
	}
	vw := make([]float32, c*np)
	for y := 0; y < h; y++ {
		row := vm.Row(y)
		for xx := 0; xx < w; xx++ {
			p := y*w + xx
			for ch, v := range row[xx*c : (xx+1)*c] {
				vw[ch*np+p] = v
			}
		}
	}
	a.Release(vm)
	vc, err := conv.NewConv(vw, nil, c, np, 1, 1)
	if err != nil {
		return nil, err
	}
	n.m.fixed += 4*int64(len(vw)) + vc.Bytes()
	n.m.sample()
	n.m.fixed -= 4 * int64(len(vw))
	vw = nil
	defer func() { n.m.fixed -= kc.Bytes() + vc.Bytes() }()

	q := a.Map(h, w, c)
	err = b.q.Apply(n.r, q, t, nil, false)
	a.Release(t)
	if err != nil {
		return nil, err
	}
	att := a.Map(h, w, c)
	rb := scoreRows(h, w)
	s := a.Map(rb, w, np)
	n.m.sample()
	for y0 := 0; y0 < h; y0 += rb {
		if err := n.ctx.Err(); err != nil {
			return nil, err
		}
		nr := min(rb, h-y0)
		sv := s
		if nr < rb {
			sv = &conv.Map{H: nr, W: w, C: np, Data: s.Data[:conv.MapLen(nr, w, np)]}
		}
		if err := kc.Apply(n.r, sv, rows(q, y0, nr), nil, false); err != nil {
			return nil, err
		}
		forRows(n.r, nr*w, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				o := sv.At(i/w, i%w)
				compute.Softmax(sv.Data[o : o+np])
			}
		})
		if err := vc.Apply(n.r, rows(att, y0, nr), sv, nil, false); err != nil {
			return nil, err
		}
	}
	a.Release(s)
	a.Release(q)
	out := a.Map(h, w, c)
	err = b.o.Apply(n.r, out, att, x, false) // x + proj_out(attention)
	a.Release(att)
	a.Release(x)
	return out, err
}

// KLBytes maps a decoded image (RGB [3][H][W] in about [-1, 1], Decode's
// output) to the 8-bit samples stable-diffusion.cpp writes, in the same
// planar order: v = clamp((x+1)·0.5, 0, 1), then 0 for v ≤ 0, 255 for
// v ≥ 1, else uint8(v·255 + 0.5), all in float32 (round half up, unlike
// imageio.Quantize's half to even).
func KLBytes(img []float32) []uint8 {
	out := make([]uint8, len(img))
	for i, x := range img {
		v := min(max(float32(x+1)*0.5, 0), 1)
		switch {
		case v != v || v <= 0:
		case v >= 1:
			out[i] = 255
		default:
			out[i] = uint8(float32(v*255) + 0.5)
		}
	}
	return out
}

// KLImage maps 8-bit samples (planar [3][H][W]) to the encoder's input as
// stable-diffusion.cpp does: (u/255)·2 − 1 in float32.
func KLImage(samples []uint8) []float32 {
	out := make([]float32, len(samples))
	for i, u := range samples {
		out[i] = float32(float32(u)/255)*2 - 1
	}
	return out
}

// KLSample draws the img2img starting latent from the posterior as
// stable-diffusion.cpp does (AutoEncoderKL::gaussian_latent_sample, then
// vae_to_diffusion_latents): (mean + exp(0.5·clamp(logvar, −30, 20))·noise)
// · KLScaleFactor, in float32. noise is standard normal, one value per
// latent element (sd.cpp draws it with its RNG right after seeding: Philox
// call 0 for --rng cuda).
func KLSample(mean, logvar, noise []float32) ([]float32, error) {
	if len(logvar) != len(mean) || len(noise) != len(mean) {
		return nil, fmt.Errorf("encode: posterior sample: mean %d, logvar %d and noise %d values differ", len(mean), len(logvar), len(noise))
	}
	z := make([]float32, len(mean))
	for i := range z {
		lv := min(max(logvar[i], -30), 20)
		std := float32(math.Exp(float64(float32(0.5 * lv))))
		z[i] = float32(mean[i]+float32(std*noise[i])) * KLScaleFactor
	}
	return z, nil
}
