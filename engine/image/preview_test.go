package image

import (
	"bytes"
	"image/png"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// TestPreview checks the projection on single-channel latents (each
// channel's colour is its row of previewFactors) and the PNG's size.
func TestPreview(t *testing.T) {
	h, w := 2, 3
	for c := range Channels {
		x := make([]float32, Channels*h*w)
		for i := range h * w {
			x[c*h*w+i] = 1
		}
		b, err := Preview(x, h, w)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if img.Bounds().Dx() != w || img.Bounds().Dy() != h {
			t.Fatalf("preview is %v, want %dx%d", img.Bounds(), w, h)
		}
		r, g, bl, _ := img.At(1, 1).RGBA()
		got := [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}
		for k := range 3 {
			if want := toU8((previewFactors[c][k] + 1) / 2); got[k] != want {
				t.Errorf("channel %d: colour %v, want component %d = %d", c, got, k, want)
			}
		}
	}
	if _, err := Preview(make([]float32, 5), 2, 3); err == nil {
		t.Error("a latent of the wrong size made a preview")
	}
}

// TestPreviewEvents checks the rate limit: with an interval longer than
// the job, an image's first and last steps have previews, the others none.
func TestPreviewEvents(t *testing.T) {
	f := &fakes{unet: &fakeUNet{scale: 0.1}, vae: &fakeVAE{}}
	e := fakeEngine(t, f)
	e.PreviewEvery = time.Hour
	s := settings(t, Request{Prompt: "a cat", Steps: 5, Sampler: "euler", Width: 64, Height: 128, Batch: 2})
	j, _, err := runJob(t, e, s, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []api.Preview
	for _, ev := range j.Events(0) {
		if ev.Type == api.TypePreview {
			if ev.Stage != "generate" || ev.Preview == nil {
				t.Fatalf("preview event %+v", ev)
			}
			got = append(got, *ev.Preview)
		}
	}
	// Image 1: step 1 (none before) and 5 (the last); image 2: step 5 only
	// (step 1 is within the hour of image 1's last preview).
	want := []struct{ image, step int }{{0, 1}, {0, 5}, {1, 5}}
	if len(got) != len(want) {
		t.Fatalf("%d previews, want %d", len(got), len(want))
	}
	for i, p := range got {
		if p.Image != want[i].image || p.Step != want[i].step || p.Steps != 5 || p.Width != 8 || p.Height != 16 || len(p.PNG) == 0 {
			t.Errorf("preview %d: image %d step %d/%d %dx%d, want image %d step %d", i, p.Image, p.Step, p.Steps, p.Width, p.Height, want[i].image, want[i].step)
		}
	}
}
