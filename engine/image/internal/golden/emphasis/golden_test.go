// Package emphasis runs the golden case t2i_emphasis: A1111 emphasis weights and the window's mean
// kept, end to end against stable-diffusion.cpp's outputs (see package golden). One case a
// package: a case is minutes on a loaded 2-core machine, and each package's tests must fit go
// test's 10-minute timeout. -short skips it.
package emphasis

import (
	"testing"

	"github.com/glassbox-ai/glassbox/engine/image/internal/golden"
)

func TestGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a full golden case takes minutes (engine/image's TestGoldenNoiseAndEncode covers its noise and conditioning)")
	}
	golden.Check(t, golden.Find(t, "t2i_emphasis"))
}
