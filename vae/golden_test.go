package vae

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/imageio"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

type manifest struct {
	Tolerances struct {
		LatentMaxAbs     float64 `json:"latent_max_abs"`
		ReconRawMaxAbs   float64 `json:"recon_raw_max_abs"`
		PNGMaxAbsLSB     int     `json:"png_max_abs_lsb"`
		PNGMaxFracDiffer float64 `json:"png_max_frac_differing"`
		PSNRMinDeltaDB   float64 `json:"psnr_png_min_delta_db"`
	} `json:"tolerances"`
	Cases map[string]struct {
		Input       string  `json:"input"`
		Latent      string  `json:"latent"`
		LatentShape []int   `json:"latent_shape"`
		ReconPNG    string  `json:"recon_png"`
		ReconF32    string  `json:"recon_f32"`
		PSNR        float64 `json:"psnr_png_db"`
	} `json:"cases"`
}

var (
	modelsOnce sync.Once
	testEnc    *Encoder
	testDec    *Decoder
	modelsErr  error
	testPool   = compute.NewPool(2)
)

func models(t testing.TB) (*Encoder, *Decoder) {
	t.Helper()
	ep := shared.Path(t, "models/taef2/taef2_encoder.pth")
	dp := shared.Path(t, "models/taef2/taef2_decoder.pth")
	modelsOnce.Do(func() {
		testEnc, testDec, modelsErr = Load(ep, dp)
	})
	if modelsErr != nil {
		t.Fatal(modelsErr)
	}
	return testEnc, testDec
}

// Load binds both halves.
func Load(encPath, decPath string) (*Encoder, *Decoder, error) {
	e, err := OpenEncoder(encPath)
	if err != nil {
		return nil, nil, err
	}
	d, err := OpenDecoder(decPath)
	return e, d, err
}

func readF32(t testing.TB, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func readPNG(t testing.TB, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// rgb8 returns an image's samples as [3][h][w] bytes.
func rgb8(img image.Image) ([]uint8, int, int) {
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	out := make([]uint8, 3*h*w)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			out[y*w+x] = uint8(r >> 8)
			out[h*w+y*w+x] = uint8(g >> 8)
			out[2*h*w+y*w+x] = uint8(bl >> 8)
		}
	}
	return out, h, w
}

func maxAbs(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

func psnr(a, b []uint8) float64 {
	var se float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		se += d * d
	}
	return 10 * math.Log10(255*255/(se/float64(len(a))))
}

func TestGoldenTAEF2(t *testing.T) {
	enc, dec := models(t)
	dir := filepath.Dir(shared.Path(t, "golden/taef2/manifest.json"))
	var man manifest
	mb, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err := json.Unmarshal(mb, &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Cases) == 0 {
		t.Fatal("manifest lists no cases")
	}
	ctx := context.Background()
	for name, c := range man.Cases {
		if conv.Kernel() == "generic" && name != "astronaut" {
			continue // the plain-Go kernels take ~13 s per image; one image checks them
		}
		t.Run(name, func(t *testing.T) {
			in8, h, w := rgb8(readPNG(t, filepath.Join(dir, c.Input)))
			img := make([]float32, len(in8))
			for i, v := range in8 {
				img[i] = float32(v) / 255
			}
			arena := new(conv.Arena)
			lat, lh, lw, err := enc.Encode(ctx, img, h, w, Options{Runner: testPool, Arena: arena})
			if err != nil {
				t.Fatal(err)
			}
			if ep, _ := PlanEncode(h, w); arena.Peak() != ep.Activations {
				t.Errorf("encode arena peak %d bytes, plan %d", arena.Peak(), ep.Activations)
			}
			if lh != c.LatentShape[1] || lw != c.LatentShape[2] {
				t.Fatalf("latent %dx%d, want %v", lh, lw, c.LatentShape)
			}
			wantLat := readF32(t, filepath.Join(dir, c.Latent))
			if d := maxAbs(lat, wantLat); d > man.Tolerances.LatentMaxAbs {
				t.Errorf("latents differ by %g > %g", d, man.Tolerances.LatentMaxAbs)
			} else {
				t.Logf("latents max abs diff %.3g", d)
			}

			rec, err := dec.Decode(ctx, wantLat, lh, lw, Options{Runner: testPool})
			if err != nil {
				t.Fatal(err)
			}
			wantRec := readF32(t, filepath.Join(dir, c.ReconF32))
			if d := maxAbs(rec, wantRec); d > man.Tolerances.ReconRawMaxAbs {
				t.Errorf("raw recon differs by %g > %g", d, man.Tolerances.ReconRawMaxAbs)
			} else {
				t.Logf("raw recon max abs diff %.3g", d)
			}

			got8 := imageio.Quantize(rec)
			want8, _, _ := rgb8(readPNG(t, filepath.Join(dir, c.ReconPNG)))
			differ := 0
			for i := range got8 {
				d := int(got8[i]) - int(want8[i])
				if d < -man.Tolerances.PNGMaxAbsLSB || d > man.Tolerances.PNGMaxAbsLSB {
					t.Fatalf("sample %d: %d, want %d", i, got8[i], want8[i])
				}
				if d != 0 {
					differ++
				}
			}
			if frac := float64(differ) / float64(len(got8)); frac > man.Tolerances.PNGMaxFracDiffer {
				t.Errorf("%d of %d PNG samples differ (%.4f%%)", differ, len(got8), 100*frac)
			}
			p := psnr(got8, in8)
			if math.Abs(p-c.PSNR) > man.Tolerances.PSNRMinDeltaDB {
				t.Errorf("PSNR %.4f dB, want %.4f", p, c.PSNR)
			}
			t.Logf("%d PNG samples differ; PSNR %.4f dB (reference %.4f)", differ, p, c.PSNR)
		})
	}
}
