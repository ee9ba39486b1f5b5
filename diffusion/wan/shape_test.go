package wan

import (
	"strings"
	"testing"
)

// TestLatentOf: the official shapes (17 frames at 64×64 is the golden
// run's [16, 5, 8, 8] with 80 tokens; 81 frames at 832×480 is [16, 21, 60,
// 104] with 32,760 tokens) and the refusals with the nearest valid values.
func TestLatentOf(t *testing.T) {
	for _, c := range []struct {
		frames, width, height int
		want                  Latent
		tokens                int
		err                   string
	}{
		{17, 64, 64, Latent{5, 8, 8}, 80, ""},
		{81, 832, 480, Latent{21, 60, 104}, 32760, ""},
		{1, 16, 16, Latent{1, 2, 2}, 1, ""},
		{16, 64, 64, Latent{}, 0, "16 video frames: Wan 2.1 makes 4n + 1 frames (nearest: 13 or 17)"},
		{18, 64, 64, Latent{}, 0, "nearest: 17 or 21"},
		{0, 64, 64, Latent{}, 0, "0 video frames"},
		{17, 840, 480, Latent{}, 0, "width 840: want a multiple of 16 (nearest: 832 or 848)"},
		{17, 64, 8, Latent{}, 0, "height 8: want a multiple of 16 (nearest: 16 or 32)"},
	} {
		got, err := LatentOf(c.frames, c.width, c.height)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%d frames %d×%d: error %v, want %q", c.frames, c.width, c.height, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || got.Tokens() != c.tokens || got.Len() != 16*c.want.Frames*c.want.Height*c.want.Width {
			t.Errorf("%d frames %d×%d: %+v (%d tokens), %v; want %+v (%d tokens)", c.frames, c.width, c.height, got, got.Tokens(), err, c.want, c.tokens)
		}
	}
	for f, want := range map[int][2]int{1: {1, 1}, 2: {1, 5}, 5: {5, 5}, 80: {77, 81}, 81: {81, 81}, -3: {1, 1}} {
		if lo, hi := NearestFrames(f); [2]int{lo, hi} != want {
			t.Errorf("NearestFrames(%d) = %d, %d, want %v", f, lo, hi, want)
		}
	}
}
