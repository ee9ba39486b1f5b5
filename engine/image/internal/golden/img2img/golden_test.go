// Package img2img runs img2img: the VAE encoder, the posterior draw and the start step of strength 0.6
// end to end against stable-diffusion.cpp's outputs (see package golden).
// A case is minutes on a loaded 2-core machine; -short skips them.
package img2img

import (
	"testing"

	"github.com/glassbox-ai/glassbox/engine/image/internal/golden"
)

func TestGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: full golden cases take minutes (engine/image's TestGoldenNoiseAndEncode covers their noise and conditioning)")
	}
	for _, name := range []string{"i2i_astronaut_s060"} {
		t.Run(name, func(t *testing.T) { golden.Check(t, golden.Find(t, name)) })
	}
}
