package conv

import (
	"fmt"
	"math"
)

// Upsample2x writes nearest-neighbour ×2 upsampling of in to out
// (torch.nn.Upsample(scale_factor=2, mode="nearest")): out(y, x) = in(y/2, x/2).
func Upsample2x(r Runner, out, in *Map) error {
	if err := in.check(); err != nil {
		return fmt.Errorf("upsample input: %w", err)
	}
	if err := out.check(); err != nil {
		return fmt.Errorf("upsample output: %w", err)
	}
	if out.H != 2*in.H || out.W != 2*in.W || out.C != in.C {
		return fmt.Errorf("upsample ×2 of %dx%dx%d needs %dx%dx%d, output is %dx%dx%d",
			in.H, in.W, in.C, 2*in.H, 2*in.W, in.C, out.H, out.W, out.C)
	}
	c := in.C
	parallel(r, out.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			src, dst := in.Row(y/2), out.Row(y)
			for x := 0; x < in.W; x++ {
				s := src[x*c : x*c+c]
				copy(dst[2*x*c:], s)
				copy(dst[(2*x+1)*c:], s)
			}
		}
	})
	return nil
}

// GroupNorm normalises m in place over groups of C/groups channels and all
// pixels (torch.nn.GroupNorm(groups, C, eps) for a batch of one):
//
//	y = (x - mean_g) / sqrt(var_g + eps) · gamma[c] + beta[c]
//
// with the biased variance, then ReLU when relu is set. Statistics are
// accumulated in float64 per row and combined in row order, so the result
// does not depend on the thread count. Wu & He, "Group Normalization", 2018.
func GroupNorm(r Runner, m *Map, groups int, gamma, beta []float32, eps float64, relu bool) error {
	if err := m.check(); err != nil {
		return fmt.Errorf("groupnorm: %w", err)
	}
	if groups <= 0 || m.C%groups != 0 || len(gamma) != m.C || len(beta) != m.C {
		return fmt.Errorf("groupnorm: %d groups over %d channels with %d weights and %d biases", groups, m.C, len(gamma), len(beta))
	}
	cg := m.C / groups
	part := make([]float64, m.H*groups*2) // per row: Σx, Σx² per group
	parallel(r, m.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			row, p := m.Row(y), part[y*groups*2:(y+1)*groups*2]
			for x := 0; x < m.W; x++ {
				px := row[x*m.C : (x+1)*m.C]
				for g := 0; g < groups; g++ {
					var s, s2 float64
					for _, v := range px[g*cg : (g+1)*cg] {
						s += float64(v)
						s2 += float64(v) * float64(v)
					}
					p[2*g] += s
					p[2*g+1] += s2
				}
			}
		}
	})
	scale := make([]float32, m.C)
	shift := make([]float32, m.C)
	n := float64(m.H * m.W * cg)
	for g := 0; g < groups; g++ {
		var s, s2 float64
		for y := 0; y < m.H; y++ {
			s += part[(y*groups+g)*2]
			s2 += part[(y*groups+g)*2+1]
		}
		mean := s / n
		variance := max(s2/n-mean*mean, 0)
		inv := 1 / math.Sqrt(variance+eps)
		for c := g * cg; c < (g+1)*cg; c++ {
			scale[c] = float32(inv * float64(gamma[c]))
			shift[c] = float32(float64(beta[c]) - mean*inv*float64(gamma[c]))
		}
	}
	parallel(r, m.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			row := m.Row(y)
			for i := range row {
				c := i % m.C
				v := row[i]*scale[c] + shift[c]
				if relu && v < 0 {
					v = 0
				}
				row[i] = v
			}
		}
	})
	return nil
}

// ReLU sets negative interior values of m to zero.
func ReLU(r Runner, m *Map) {
	parallel(r, m.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			row := m.Row(y)
			for i, v := range row {
				if v < 0 {
					row[i] = 0
				}
			}
		}
	})
}

// SoftClamp applies x = tanh(x/s)·s to the interior of m (TAESD's Clamp
// module uses s = 3).
func SoftClamp(r Runner, m *Map, s float32) {
	parallel(r, m.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			row := m.Row(y)
			for i, v := range row {
				row[i] = float32(math.Tanh(float64(v/s))) * s
			}
		}
	})
}

// Add sets dst += src over the interior; the shapes must match.
func Add(r Runner, dst, src *Map) error {
	if dst.H != src.H || dst.W != src.W || dst.C != src.C {
		return fmt.Errorf("add: %dx%dx%d += %dx%dx%d", dst.H, dst.W, dst.C, src.H, src.W, src.C)
	}
	parallel(r, dst.H, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			d, s := dst.Row(y), src.Row(y)
			for i := range d {
				d[i] += s[i]
			}
		}
	})
	return nil
}
