package vae

import "math"

// Quantize converts a decoded image [3][h][w] to 8-bit samples in the same
// layout: round(clamp(v, 0, 1)·255), rounding half to even (as numpy's rint).
func Quantize(img []float32) []uint8 {
	out := make([]uint8, len(img))
	for i, v := range img {
		f := math.RoundToEven(float64(min(max(v, 0), 1)) * 255)
		out[i] = uint8(f)
	}
	return out
}
