package imageio

import (
	"fmt"
	"image"
	"math"
)

// RGB8 builds an 8-bit RGB image from planar samples [3][h][w].
func RGB8(samples []uint8, h, w int) (*image.NRGBA, error) {
	if h < 1 || w < 1 || len(samples) != 3*h*w {
		return nil, fmt.Errorf("deliver: %d samples do not make a %dx%d RGB image", len(samples), w, h)
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	n := h * w
	for i := 0; i < n; i++ {
		p := img.Pix[4*i : 4*i+4]
		p[0], p[1], p[2], p[3] = samples[i], samples[n+i], samples[2*n+i], 255
	}
	return img, nil
}

// Quantize maps planar float samples to 8 bits: round(clamp(v,0,1)·255),
// rounding half to even (numpy's rint), NaN to 0.
func Quantize(v []float32) []uint8 {
	out := make([]uint8, len(v))
	for i, x := range v {
		if x != x {
			continue
		}
		out[i] = uint8(math.RoundToEven(float64(min(max(x, 0), 1)) * 255))
	}
	return out
}

// Planar returns img's RGB samples as planar float32 [3][h][w] in [0,1]
// (8-bit value / 255 for 8-bit images; alpha is ignored, colours are not
// un-premultiplied beyond what image.Image's RGBA reports).
func Planar(img image.Image) ([]float32, int, int) {
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	out := make([]float32, 3*h*w)
	n := h * w
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var r, g, bl uint32
			switch p := img.(type) {
			case *image.NRGBA:
				o := p.PixOffset(b.Min.X+x, b.Min.Y+y)
				r, g, bl = uint32(p.Pix[o])*0x101, uint32(p.Pix[o+1])*0x101, uint32(p.Pix[o+2])*0x101
			default:
				r, g, bl, _ = img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			}
			i := y*w + x
			out[i] = float32(r>>8) / 255
			out[n+i] = float32(g>>8) / 255
			out[2*n+i] = float32(bl>>8) / 255
		}
	}
	return out, h, w
}
