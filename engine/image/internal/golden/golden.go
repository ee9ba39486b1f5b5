// Package golden runs the SD 1.5 golden cases of
// shared/golden/sd15/README.md §3 (stable-diffusion.cpp on the random-
// weight checkpoint sd15-rand) through the image job and compares what it
// makes with the README §7 tolerances: the PNG within PSNR 38 dB of the
// case's, the final latent within NMSE 3e-3 of <case>.final_latent.f32.
// A full case is four sampling steps of two UNet calls at 256²: minutes on
// a loaded 2-core machine, so the cases are spread over test packages
// (engine/image runs t2i_euler; each package below this one another), each
// test binary loading the networks once.
//
// Imports: engine/image, checkpoint, textenc/clip, diffusion/unet, vae,
// imageio, internal/sdtest, internal/shared.
package golden

import (
	"context"
	"encoding/binary"
	"image"
	_ "image/png" // the goldens are PNGs
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/diffusion/unet"
	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/plan"
	textclip "github.com/glassbox-ai/glassbox/textenc/clip"
	"github.com/glassbox-ai/glassbox/vae"
)

// Case is one golden case: the settings of its sd-cli command.
type Case struct {
	Name      string
	Prompt    string
	Negative  string
	Sampler   string
	Scheduler string
	InitImage string  // relative to shared/golden/sd15
	Strength  float32 // img2img
}

// Cases are README §3's, with the options they share: -W 256 -H 256
// --steps 4 --cfg-scale 7 -s 42, rng cuda, scheduler discrete.
var Cases = []Case{
	{Name: "t2i_euler", Prompt: "a lovely cat", Sampler: "euler"},
	{Name: "t2i_euler_a", Prompt: "a lovely cat", Sampler: "euler_a"},
	{Name: "t2i_dpmpp2m_karras", Prompt: "a lovely cat", Sampler: "dpm++2m", Scheduler: "karras"},
	{Name: "i2i_astronaut_s060", Prompt: "a lovely cat", Sampler: "euler", InitImage: "i2i_astronaut_s060.init.png", Strength: 0.6},
	{Name: "t2i_negative", Prompt: "a lovely cat", Negative: "blurry, low quality, watermark", Sampler: "euler"},
	{Name: "t2i_emphasis", Prompt: "a (lovely:1.3) cat, [blurry] ((masterpiece))", Sampler: "euler"},
}

// Find returns the case called name.
func Find(t testing.TB, name string) Case {
	for _, c := range Cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no golden case %q", name)
	return Case{}
}

// Path is a file of the golden set.
func Path(t testing.TB, name string) string { return shared.Path(t, "golden/sd15/"+name) }

// Request is the case's request, writing to out.
func (c Case) Request(t testing.TB, model, out string) engimage.Request {
	r := engimage.Request{Model: model, Prompt: c.Prompt, Negative: c.Negative, Steps: 4, CFGScale: 7, Sampler: c.Sampler,
		Scheduler: c.Scheduler, Seed: 42, Width: 256, Height: 256, Out: out, Strength: c.Strength}
	if c.InitImage != "" {
		r.InitImage = Path(t, c.InitImage)
	}
	return r
}

// ReadF32 reads a raw little-endian float32 file.
func ReadF32(t testing.TB, path string) []float32 {
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

// NMSE is Σ(got−want)² / Σwant² (README §5's definition).
func NMSE(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return num / den
}

// PSNR is 10·log10(255²/MSE) over the 8-bit RGB samples of two PNGs of
// one size, and their largest difference.
func PSNR(t testing.TB, a, b string) (psnr float64, maxAbs int) {
	t.Helper()
	ia, ib := readPNG(t, a), readPNG(t, b)
	if ia.Bounds() != ib.Bounds() {
		t.Fatalf("%s is %v, %s %v", a, ia.Bounds(), b, ib.Bounds())
	}
	var se float64
	var n int
	r := ia.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c1, c2 := rgb(ia, x, y), rgb(ib, x, y)
			for k := range 3 {
				d := int(c1[k]) - int(c2[k])
				se += float64(d * d)
				maxAbs = max(maxAbs, abs(d))
				n++
			}
		}
	}
	if se == 0 {
		return math.Inf(1), 0
	}
	return 10 * math.Log10(255*255/(se/float64(n))), maxAbs
}

func abs(d int) int {
	if d < 0 {
		return -d
	}
	return d
}

func rgb(im image.Image, x, y int) [3]uint8 {
	r, g, b, _ := im.At(x, y).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

func readPNG(t testing.TB, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	im, _, err := image.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return im
}

// nets are the networks of sd15-rand (F16), each bound once per test
// binary on first use and shared by every case.
var nets struct {
	mu   sync.Mutex
	path string
	m    *engimage.Model
	text *textclip.Encoder
	unet *unet.UNet
	vae  engimage.VAE
	load time.Duration // binding them
}

// MemoryNeeded is what a full case holds, with room: 4.5–5.4 GiB measured
// (the mapped file, the packed convolutions, the activations).
const MemoryNeeded = 6 << 30

// SHA256 is sd15-rand.safetensors' SHA-256 (README §2). sdtest checks a
// file against the spec before handing it out, so the engine is given
// this instead of hashing 2 GB in every test binary.
const SHA256 = "3573612e54ef4891b7df7a4cbcf938ce6d55f3491fcd9f3ac51652f35cbaebab"

// Engine returns an image engine over sd15-rand's networks; withUNet
// false binds only the text encoder and the VAE and uses eps as the UNet
// (a fake, for the checks of everything around it). History goes to a
// temporary file. It skips t when the checkpoint cannot be made or the
// memory is short.
func Engine(t testing.TB, withUNet bool, eps engimage.EpsNet) (*engimage.Engine, string) {
	t.Helper()
	need := int64(1 << 30)
	if withUNet {
		need = MemoryNeeded
		sdtest.SkipGeneric(t, "an SD 1.5 job with the UNet")
	}
	sdtest.NeedMemory(t, need)
	path := sdtest.SD15(t, "f16")
	nets.mu.Lock()
	defer nets.mu.Unlock()
	t0 := time.Now()
	var err error
	if nets.m == nil {
		nets.path = path
		if nets.m, err = engimage.OpenModel(path, ""); err != nil {
			t.Fatal(err)
		}
	}
	c := nets.m.Components
	if nets.text == nil {
		if nets.text, err = textclip.New(c.TextEncoder.Source); err != nil {
			t.Fatal(err)
		}
	}
	if nets.vae == nil {
		k, err := vae.NewKL(c.VAE.Source)
		if err != nil {
			t.Fatal(err)
		}
		nets.vae = klAdapter{k}
	}
	if withUNet && nets.unet == nil {
		if nets.unet, err = unet.New(c.UNet.Source); err != nil {
			t.Fatal(err)
		}
	}
	nets.load += time.Since(t0)
	if withUNet {
		eps = nets.unet
	}
	return &engimage.Engine{
		Open: func(string, string) (*engimage.Model, error) {
			return &engimage.Model{Path: nets.path, Components: nets.m.Components}, nil // shared: not closed by the job
		},
		Nets: engimage.Nets{
			Text: func(checkpoint.Component) (engimage.TextEncoder, error) { return nets.text, nil },
			UNet: func(checkpoint.Component) (engimage.EpsNet, error) { return eps, nil },
			VAE:  func(checkpoint.Component) (engimage.VAE, error) { return nets.vae, nil },
		},
		Hash:         func(string) (string, error) { return SHA256, nil },
		History:      &engimage.History{Path: filepath.Join(t.TempDir(), "image-history.jsonl")},
		PreviewEvery: -1,
	}, path
}

// LoadTime is how long binding the networks took so far.
func LoadTime() time.Duration { return nets.load }

type klAdapter struct{ *vae.KL }

func (k klAdapter) Decode(ctx context.Context, p *compute.Pool, z []float32, h, w, tile, overlap int) ([]float32, error) {
	return k.KL.Decode(ctx, p, z, h, w, vae.KLDecodeOptions{Tile: tile, Overlap: overlap})
}

// Settings resolves c's request on model, writing to out.
func (c Case) Settings(t testing.TB, model, out string) *engimage.Settings {
	t.Helper()
	r := c.Request(t, model, out)
	iw, ih := 0, 0
	if r.InitImage != "" {
		var err error
		if iw, ih, err = engimage.ImageSize(r.InitImage); err != nil {
			t.Fatal(err)
		}
	}
	s, err := engimage.Resolve(r, iw, ih)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Check runs case c end to end and compares the PNG (PSNR ≥ 38 dB against
// <case>.png) and the final latent (NMSE ≤ 3e-3 against
// <case>.final_latent.f32), logging the numbers and the time.
func Check(t *testing.T, c Case) {
	t.Helper()
	e, model := Engine(t, true, nil)
	dir := t.TempDir()
	out := filepath.Join(dir, c.Name+".png")
	s := c.Settings(t, model, out)
	t0 := time.Now()
	res, err := e.Run(context.Background(), s, c.Name, dir)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	psnr, maxAbs := PSNR(t, out, Path(t, c.Name+".png"))
	lat := ReadF32(t, res.Images[0].Latents)
	nmse := NMSE(lat, ReadF32(t, Path(t, c.Name+".final_latent.f32")))
	t.Logf("%s: PSNR %.2f dB (max %d levels), final latent NMSE %.3g; %s for the job (networks bound once in %s; %s)",
		c.Name, psnr, maxAbs, nmse, took.Round(time.Second), LoadTime().Round(time.Second), plan.FormatBytes(plan.PeakRSS()))
	if psnr < 38 {
		t.Errorf("%s: PSNR %.2f dB, want ≥ 38", c.Name, psnr)
	}
	if nmse > 3e-3 {
		t.Errorf("%s: final latent NMSE %.3g, want ≤ 3e-3", c.Name, nmse)
	}
}
