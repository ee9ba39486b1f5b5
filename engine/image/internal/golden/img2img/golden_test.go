// Package img2img runs the golden case i2i_astronaut_s060 (the VAE
// encoder, the posterior draw, strength 0.6's start step) end to end
// against stable-diffusion.cpp's outputs (see package golden).
// One case a package (minutes on a loaded 2-core machine); -short skips it.
package img2img

import (
	"testing"

	"github.com/glassbox-ai/glassbox/engine/image/internal/golden"
)

func TestGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: full golden cases take minutes (engine/image's TestGoldenNoiseAndEncode covers their noise and conditioning)")
	}
	golden.Check(t, golden.Find(t, "i2i_astronaut_s060"))
}
