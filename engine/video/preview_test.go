package video

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
)

// TestFramePreview: a frame larger than previewSide is averaged over
// blocks (a 600×10 frame: factor 3, 200×4), a small one is itself, and a
// buffer of the wrong size is refused.
func TestFramePreview(t *testing.T) {
	w, h := 600, 10
	rgb := make([]byte, 3*w*h)
	for i := range w * h {
		rgb[3*i] = byte(i % w % 3 * 100) // 0, 100, 200 across each block of 3
		rgb[3*i+1] = 7
	}
	b, pw, ph, err := framePreview(rgb, h, w)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if pw != 200 || ph != 4 || img.Bounds().Dx() != 200 || img.Bounds().Dy() != 4 {
		t.Fatalf("preview %d×%d (png %v), want 200×4", pw, ph, img.Bounds())
	}
	if r, g, _, _ := img.At(5, 3).RGBA(); r>>8 != 100 || g>>8 != 7 {
		t.Errorf("pixel (5, 3): r %d g %d, want the block means 100, 7", r>>8, g>>8)
	}
	if _, pw, ph, err := framePreview(rgb[:3*16*16], 16, 16); err != nil || pw != 16 || ph != 16 {
		t.Errorf("16×16: %d×%d, %v", pw, ph, err)
	}
	if _, _, _, err := framePreview(rgb[:5], 16, 16); err == nil || !strings.Contains(err.Error(), "5 bytes for a 16×16") {
		t.Errorf("short buffer: %v", err)
	}
}
