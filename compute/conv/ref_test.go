package conv

import (
	"math"
	"math/rand/v2"
)

// The reference operators below work on planar CHW data with explicit
// bounds checks, straight from the definitions; they are the spec the
// packed, tiled operators are tested against.

func refConv(x []float32, cin, h, w int, wt, bias []float32, cout, k, stride int) ([]float32, int, int) {
	return refConvPad(x, cin, h, w, wt, bias, cout, k, stride, (k-1)/2, (k-1)/2)
}

// refConvPad zero-pads p rows and columns before the image and q after it,
// then convolves without padding.
func refConvPad(x []float32, cin, h, w int, wt, bias []float32, cout, k, stride, p, q int) ([]float32, int, int) {
	ho, wo := (h+p+q-k)/stride+1, (w+p+q-k)/stride+1
	out := make([]float32, cout*ho*wo)
	for co := 0; co < cout; co++ {
		for oy := 0; oy < ho; oy++ {
			for ox := 0; ox < wo; ox++ {
				var s float64
				for ci := 0; ci < cin; ci++ {
					for ky := 0; ky < k; ky++ {
						for kx := 0; kx < k; kx++ {
							iy, ix := oy*stride+ky-p, ox*stride+kx-p
							if iy < 0 || iy >= h || ix < 0 || ix >= w {
								continue
							}
							s += float64(x[(ci*h+iy)*w+ix]) * float64(wt[((co*cin+ci)*k+ky)*k+kx])
						}
					}
				}
				if bias != nil {
					s += float64(bias[co])
				}
				out[(co*ho+oy)*wo+ox] = float32(s)
			}
		}
	}
	return out, ho, wo
}

func refGroupNorm(x []float32, c, h, w, groups int, gamma, beta []float32, eps float64) []float32 {
	out := make([]float32, len(x))
	cg := c / groups
	n := cg * h * w
	for g := 0; g < groups; g++ {
		seg := x[g*n : (g+1)*n]
		var mean, v float64
		for _, e := range seg {
			mean += float64(e)
		}
		mean /= float64(n)
		for _, e := range seg {
			v += (float64(e) - mean) * (float64(e) - mean)
		}
		v /= float64(n)
		for i, e := range seg {
			ch := g*cg + i/(h*w)
			out[g*n+i] = float32((float64(e)-mean)/math.Sqrt(v+eps)*float64(gamma[ch]) + float64(beta[ch]))
		}
	}
	return out
}

func refUpsample(x []float32, c, h, w int) []float32 {
	out := make([]float32, c*4*h*w)
	for ci := 0; ci < c; ci++ {
		for y := 0; y < 2*h; y++ {
			for xx := 0; xx < 2*w; xx++ {
				out[(ci*2*h+y)*2*w+xx] = x[(ci*h+y/2)*w+xx/2]
			}
		}
	}
	return out
}

func randSlice(r *rand.Rand, n int, scale float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = (2*r.Float32() - 1) * scale
	}
	return s
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		if math.IsNaN(float64(a[i])) != math.IsNaN(float64(b[i])) {
			return math.Inf(1)
		}
	}
	return d
}
