// Package samplers runs the ancestral and second-order samplers on their golden cases (euler_a's Philox noise calls 1..3; DPM++(2M) on Karras σ)
// end to end against stable-diffusion.cpp's outputs (see package golden).
// A case is minutes on a loaded 2-core machine; -short skips them.
package samplers

import (
	"testing"

	"github.com/glassbox-ai/glassbox/engine/image/internal/golden"
)

func TestGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: full golden cases take minutes (engine/image's TestGoldenNoiseAndEncode covers their noise and conditioning)")
	}
	for _, name := range []string{"t2i_euler_a", "t2i_dpmpp2m_karras"} {
		t.Run(name, func(t *testing.T) { golden.Check(t, golden.Find(t, name)) })
	}
}
