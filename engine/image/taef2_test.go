package image

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/vae"
)

func asPath(p string) (string, error) { return p, nil }

// writeLatents writes n float32 latents of a smooth pattern to a file.
func writeLatents(t *testing.T, path string, n int) []float32 {
	t.Helper()
	lat := make([]float32, n)
	for i := range lat {
		lat[i] = float32(i%7)/7 - 0.5
	}
	var b bytes.Buffer
	if err := vae.WriteF32(&b, lat); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return lat
}

// TestTAEF2Decode: a decode keeps its copy of the latents in the job's
// folder before decoding, writes a PNG of 8× the latents' size, and a
// retry decodes from that copy alone; a tile over the budget is refused
// in the plan stage with its numbers, and each failure names its stage.
func TestTAEF2Decode(t *testing.T) {
	dec := shared.Path(t, "models/taef2/taef2_decoder.pth")
	dir := t.TempDir()
	lat := filepath.Join(dir, "in.f32")
	writeLatents(t, lat, 32*4*6)
	jobDir := filepath.Join(dir, "job")
	p := TAEF2DecodeRequest{Model: dec, Latents: lat, Shape: [3]int{32, 4, 6}, Out: filepath.Join(dir, "a.png"), OverlapPX: 8, Threads: 1}
	r, err := TAEF2Decode(context.Background(), "job1", jobDir, &p, asPath)
	if err != nil {
		t.Fatal(err)
	}
	if r.Width != 48 || r.Height != 32 || r.Tiles != 1 || p.SavedLatents != filepath.Join(jobDir, "latents.f32") {
		t.Fatalf("result %+v, saved %q", r, p.SavedLatents)
	}
	first, err := os.ReadFile(p.Out)
	if err != nil {
		t.Fatal(err)
	}
	im, err := png.Decode(bytes.NewReader(first))
	if err != nil || im.Bounds().Dx() != 48 || im.Bounds().Dy() != 32 {
		t.Fatalf("the PNG: %v, %v", im.Bounds(), err)
	}
	if !bytes.Contains(first, []byte("VAE decode of in.f32")) || !bytes.Contains(first, []byte(`"kind":"vae-decode"`)) {
		t.Error("the PNG lacks its parameters text or job record")
	}

	retry := p
	retry.Latents, retry.RetryOf, retry.Out = filepath.Join(dir, "gone.f32"), "job1", filepath.Join(dir, "b.png")
	if _, err := TAEF2Decode(context.Background(), "job2", "", &retry, asPath); err != nil {
		t.Fatalf("a retry from the saved latents: %v", err)
	}
	a, _ := png.Decode(bytes.NewReader(first))
	bb, _ := os.ReadFile(retry.Out)
	b, err := png.Decode(bytes.NewReader(bb))
	if err != nil || !samePixels(a, b) {
		t.Errorf("the retry's image differs from the first decode's (%v)", err)
	}

	for _, tc := range []struct {
		name  string
		edit  func(*TAEF2DecodeRequest)
		stage pipeline.Stage
		want  string
	}{
		{"tile over the budget", func(q *TAEF2DecodeRequest) { q.TilePX, q.Budget = 16, 1 }, pipeline.StagePlan, "more than the budget of"},
		{"latents too short", func(q *TAEF2DecodeRequest) { q.Shape = [3]int{32, 40, 40} }, pipeline.StageLoad, ""},
		{"no checkpoint", func(q *TAEF2DecodeRequest) { q.Model = filepath.Join(dir, "none.pth") }, pipeline.StageLoad, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := p
			q.Out = filepath.Join(dir, tc.name+".png")
			tc.edit(&q)
			_, err := TAEF2Decode(context.Background(), "x", "", &q, asPath)
			if st, _ := pipeline.StageOf(err); err == nil || st != tc.stage || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v (stage %s), want stage %s, %q", err, st, tc.stage, tc.want)
			}
			if _, err := os.Stat(q.Out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a failed decode left %s (%v)", q.Out, err)
			}
		})
	}
	refused := errors.New("load: no such model")
	if _, err := TAEF2Decode(context.Background(), "x", "", &p, func(string) (string, error) { return "", refused }); !errors.Is(err, refused) {
		t.Errorf("a model that does not resolve: %v", err)
	}
}

func samePixels(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			if color.NRGBAModel.Convert(a.At(x, y)) != color.NRGBAModel.Convert(b.At(x, y)) {
				return false
			}
		}
	}
	return true
}

// TestTAEF2Encode: an image becomes latents of an eighth of its size with
// their sidecar; an image that is not a multiple of 8 is warned about, an
// encode over its budget is refused in the plan stage, a file that is no
// image in the load stage.
func TestTAEF2Encode(t *testing.T) {
	enc := shared.Path(t, "models/taef2/taef2_encoder.pth")
	dir := t.TempDir()
	img := image.NewNRGBA(image.Rect(0, 0, 20, 16))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 13)
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	in := filepath.Join(dir, "in.png")
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var warned []string
	ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{Warning: func(code, msg string) { warned = append(warned, code) }})
	p := TAEF2EncodeRequest{Model: enc, Image: in, Out: filepath.Join(dir, "lat.f32"), Threads: 1}
	r, err := TAEF2Encode(ctx, &p, asPath)
	if err != nil {
		t.Fatal(err)
	}
	if r.Shape != [3]int{32, 2, 3} || strings.Join(warned, " ") != "size_not_multiple_of_8" {
		t.Errorf("shape %v, warnings %v: want [32 2 3] and the size warning", r.Shape, warned)
	}
	if _, err := vae.ReadF32(p.Out, 32*2*3); err != nil {
		t.Error(err)
	}
	if _, err := vae.ReadLatentInfo(p.Out); err != nil {
		t.Errorf("the sidecar: %v", err)
	}
	over := p
	over.Budget, over.Out = 1, filepath.Join(dir, "over.f32")
	if _, err := TAEF2Encode(context.Background(), &over, asPath); err == nil || !strings.HasPrefix(err.Error(), "plan: encode 20x16 px") {
		t.Errorf("over the budget: %v", err)
	}
	bad := p
	bad.Image, bad.Out = enc, filepath.Join(dir, "bad.f32")
	if _, err := TAEF2Encode(context.Background(), &bad, asPath); err == nil || !strings.Contains(err.Error(), "PNG and JPEG are supported") {
		t.Errorf("a file that is no image: %v", err)
	} else if st, _ := pipeline.StageOf(err); st != pipeline.StageLoad {
		t.Errorf("a file that is no image fails in stage %s", st)
	}
}
