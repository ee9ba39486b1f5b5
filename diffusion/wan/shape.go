package wan

import "fmt"

// VAETimeStride and VAESpaceStride are Wan 2.1's VAE compression: 4 frames and 8×8 pixels per
// latent position (wan/configs/shared_config.py vae_stride), the first
// frame alone.
const (
	VAETimeStride  = 4
	VAESpaceStride = 8
	LatentChannels = 16
)

// Latent is the latent of a video as Wan's generate shapes it
// (wan/text2video.py: target_shape, seq_len).
type Latent struct {
	Frames, Height, Width int // latent frames (1 + (video frames − 1)/4), rows and columns (pixels / 8)
}

// Len returns the number of latent values, LatentChannels·Frames·Height·Width.
func (l Latent) Len() int { return LatentChannels * l.Frames * l.Height * l.Width }

// Tokens returns the DiT's sequence length, one token per 1×2×2 patch.
func (l Latent) Tokens() int { return l.Frames * (l.Height / 2) * (l.Width / 2) }

// NearestFrames returns the valid video frame counts (4n + 1) nearest to
// frames: lo ≤ frames ≤ hi (equal when frames is valid; lo is 1 at least).
func NearestFrames(frames int) (lo, hi int) {
	if frames <= 1 {
		return 1, 1
	}
	lo = (frames-1)/VAETimeStride*VAETimeStride + 1
	if lo == frames {
		return lo, lo
	}
	return lo, lo + VAETimeStride
}

// LatentOf returns the latent of a video of frames frames of width×height
// pixels. Wan's VAE needs 4n + 1 frames (the first frame is encoded alone,
// then groups of 4) and the DiT 2×2 patches of 8×8-pixel latents, so the
// sizes must be multiples of 16; anything else is refused with the nearest
// valid values.
func LatentOf(frames, width, height int) (Latent, error) {
	if frames < 1 {
		return Latent{}, fmt.Errorf("wan: %d video frames: want 4n + 1 ≥ 1 (1, 5, 9, …, 81)", frames)
	}
	if lo, hi := NearestFrames(frames); lo != hi {
		return Latent{}, fmt.Errorf("wan: %d video frames: Wan 2.1 makes 4n + 1 frames (nearest: %d or %d)", frames, lo, hi)
	}
	const m = 2 * VAESpaceStride
	for _, s := range []struct {
		name string
		v    int
	}{{"width", width}, {"height", height}} {
		if s.v < m || s.v%m != 0 {
			lo := max(m, s.v/m*m)
			return Latent{}, fmt.Errorf("wan: %s %d: want a multiple of %d (nearest: %d or %d)", s.name, s.v, m, lo, lo+m)
		}
	}
	return Latent{Frames: (frames-1)/VAETimeStride + 1, Height: height / VAESpaceStride, Width: width / VAESpaceStride}, nil
}
