// Package prompts runs the prompt cases: a negative prompt as the unconditional context, and A1111 emphasis weights
// end to end against stable-diffusion.cpp's outputs (see package golden).
// A case is minutes on a loaded 2-core machine; -short skips them.
package prompts

import (
	"testing"

	"github.com/glassbox-ai/glassbox/engine/image/internal/golden"
)

func TestGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: full golden cases take minutes (engine/image's TestGoldenNoiseAndEncode covers their noise and conditioning)")
	}
	for _, name := range []string{"t2i_negative", "t2i_emphasis"} {
		t.Run(name, func(t *testing.T) { golden.Check(t, golden.Find(t, name)) })
	}
}
