package image

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/imageio"
	"github.com/glassbox-ai/glassbox/pipeline"
)

func settings(t *testing.T, r Request) *Settings {
	t.Helper()
	if r.Model == "" {
		r.Model = "/models/sd15-rand.safetensors"
	}
	if r.Out == "" {
		r.Out = filepath.Join(t.TempDir(), "out.png")
	}
	s, err := Resolve(r, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestResolve(t *testing.T) {
	base := Request{Model: "m.safetensors", Prompt: "a cat", Out: "o.png", Steps: 20}
	with := func(f func(*Request)) Request { r := base; f(&r); return r }
	tests := []struct {
		name         string
		r            Request
		initW, initH int
		want         []string // substrings of the error; none: valid
	}{
		{"defaults", base, 0, 0, nil},
		{"width not a multiple of 8", with(func(r *Request) { r.Width, r.Height = 100, 64 }), 0, 0,
			[]string{"width: 100 pixels is not a multiple of 8", "use 64 or 128"}},
		{"width not a multiple of 64", with(func(r *Request) { r.Width, r.Height = 200, 512 }), 0, 0,
			[]string{"width: 200 pixels is not a multiple of 64", "use 192 or 256"}},
		{"height not a multiple of 64", with(func(r *Request) { r.Width, r.Height = 512, 360 }), 0, 0,
			[]string{"height: 360 pixels is not a multiple of 64 (the SD 1.x UNet halves the 1/8 latent three times)", "use 320 or 384"}},
		{"height too large", with(func(r *Request) { r.Width, r.Height = 64, 8192 }), 0, 0, []string{"height: 8192 pixels, want 8 to 4096"}},
		{"steps < 1", with(func(r *Request) { r.Steps = -1 }), 0, 0, []string{"steps: -1, want 1 to 10000"}},
		{"steps 0", with(func(r *Request) { r.Steps = 0 }), 0, 0, []string{"steps: 0, want 1 to 10000"}},
		{"strength above 1", with(func(r *Request) { r.InitImage, r.Strength = "i.png", 1.5 }), 512, 512, []string{"strength: 1.5, want a value in (0, 1]"}},
		{"strength without init image", with(func(r *Request) { r.Strength = 0.5 }), 0, 0, []string{"strength: 0.5 without an init image"}},
		{"unknown sampler", with(func(r *Request) { r.Sampler = "dpm++3m" }), 0, 0,
			[]string{`unknown sampler "dpm++3m" (known: euler, euler_a, heun, dpm2, dpm++2m, dpm++2s_a, lcm, ddim_trailing)`}},
		{"unknown scheduler", with(func(r *Request) { r.Scheduler = "beta" }), 0, 0,
			[]string{`unknown scheduler "beta" (known: discrete, karras, exponential, simple, lcm)`}},
		{"karras with 1 step", with(func(r *Request) { r.Steps, r.Scheduler = 1, "karras" }), 0, 0, []string{"karras with 1 step"}},
		{"init image of another size", with(func(r *Request) { r.InitImage, r.Width, r.Height = "i.png", 256, 256 }), 512, 384,
			[]string{"init_image: the image is 512x384, the request 256x256: glassbox does not resize it", "pass -W 512 -H 384"}},
		{"init image sets the size", with(func(r *Request) { r.InitImage = "i.png" }), 320, 192, nil},
		{"rng", with(func(r *Request) { r.RNG = "std_default" }), 0, 0, []string{`rng: "std_default", want one of cuda, cpu`}},
		{"clip skip", with(func(r *Request) { r.ClipSkip = 13 }), 0, 0, []string{"clip_skip: 13, want 1 to 12"}},
		{"batch", with(func(r *Request) { r.Batch = -2 }), 0, 0, []string{"batch_count: -2"}},
		{"cfg NaN", with(func(r *Request) { r.CFGScale = float32(math.NaN()) }), 0, 0, []string{"cfg_scale: NaN"}},
		{"two errors at once", with(func(r *Request) { r.Width, r.Steps = 12, -3 }), 0, 0, []string{"width: 12", "steps: -3"}},
		{"no model", with(func(r *Request) { r.Model = "" }), 0, 0, []string{"model: no checkpoint given"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Resolve(tc.r, tc.initW, tc.initH)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if tc.initW > 0 && (s.Width != tc.initW || s.Height != tc.initH) {
					t.Errorf("size %dx%d, want the init image's %dx%d", s.Width, s.Height, tc.initW, tc.initH)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if st, _ := pipeline.StageOf(err); st != pipeline.StagePlan {
				t.Errorf("stage %q, want plan", st)
			}
			if !errors.Is(err, pipeline.ErrSettings) {
				t.Errorf("%v is not ErrSettings", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	s, _ := Resolve(base, 0, 0)
	if s.Steps != 20 || s.CFGScale != 7 || s.Method != diffusion.EulerA || s.Schedule != diffusion.Discrete || s.Width != 512 || s.RNG != "cuda" || s.Batch != 1 || s.ClipSkip != 1 {
		t.Errorf("defaults: %+v", s)
	}
}

func TestInfotext(t *testing.T) {
	sha := "6ce0161689b3853acaa03779ec93eafe75a02f4ced659bee03f50797806fa2fa"
	tests := []struct {
		name string
		r    Request
		want string
	}{
		{"txt2img", Request{Prompt: "a lovely cat", Steps: 4, CFGScale: 7, Sampler: "euler", Seed: 42, Width: 256, Height: 256},
			"a lovely cat\nSteps: 4, Sampler: Euler, Schedule type: Uniform, CFG scale: 7, Seed: 42, Size: 256x256, Model hash: 6ce0161689, Model: sd15-rand, Version: glassbox"},
		{"negative, karras, clip skip, cpu rng", Request{Prompt: "a (lovely:1.3) cat", Negative: "blurry, low quality", Steps: 20, CFGScale: 7.5,
			Sampler: "dpm++2m", Scheduler: "karras", Seed: 7, Width: 512, Height: 768, ClipSkip: 2, RNG: "cpu"},
			"a (lovely:1.3) cat\nNegative prompt: blurry, low quality\nSteps: 20, Sampler: DPM++ 2M, Schedule type: Karras, CFG scale: 7.5, Seed: 7, Size: 512x768, Model hash: 6ce0161689, Model: sd15-rand, Clip skip: 2, RNG: CPU, Version: glassbox"},
		{"img2img, a VAE, euler a", Request{Prompt: "x", Steps: 4, CFGScale: 1, Sampler: "euler_a", Seed: 1, InitImage: "in.png", Strength: 0.6,
			VAE: "/v/vae-ft-mse.safetensors", Width: 64, Height: 64},
			"x\nSteps: 4, Sampler: Euler a, Schedule type: Uniform, CFG scale: 1, Seed: 1, Size: 64x64, Model hash: 6ce0161689, Model: sd15-rand, VAE hash: 6ce0161689, VAE: vae-ft-mse.safetensors, Denoising strength: 0.6, Version: glassbox"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.Model, tc.r.Out = "/models/sd15-rand.safetensors", "o.png"
			iw, ih := 0, 0
			if tc.r.InitImage != "" {
				iw, ih = tc.r.Width, tc.r.Height
			}
			s, err := Resolve(tc.r, iw, ih)
			if err != nil {
				t.Fatal(err)
			}
			if got := Infotext(s, s.Seed, sha, sha); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	for in, want := range map[string]string{"plain": "plain", "a, b": `"a, b"`, "k: v": `"k: v"`, "é,\"\n": `"\u00e9,\"\n"`, "😀:": `"\ud83d\ude00:"`} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestBatch runs a batch of three on the fakes: seeds 42…44, each image's
// initial noise call 0 of its own seed (an ε of 0 leaves Euler's latent
// at noise·σ_max), latents saved with their description, PNGs with the
// parameters and the job record, and the timeline's parts.
func TestBatch(t *testing.T) {
	f := &fakes{unet: &fakeUNet{}, vae: &fakeVAE{}}
	e := fakeEngine(t, f)
	dir := t.TempDir()
	s := settings(t, Request{Prompt: "a lovely cat", Negative: "blurry", Steps: 3, Sampler: "euler", Seed: 42, Width: 128, Height: 64, Batch: 3})
	f.unet.scale = 0
	f.unet.onCall = func(k int, eps []float32) error { clear(eps); return nil }
	j, res, err := runJob(t, e, s, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Images) != 3 || f.unet.calls != 3*3*2 {
		t.Fatalf("%d images, %d UNet calls; want 3 and 18", len(res.Images), f.unet.calls)
	}
	cv, _ := diffusion.NewCompVis(nil)
	sig, _ := cv.Schedule(diffusion.Discrete, 3)
	for b, im := range res.Images {
		if im.Seed != int64(42+b) {
			t.Errorf("image %d: seed %d, want %d", b, im.Seed, 42+b)
		}
		x, err := ReadLatents(im.Latents, 8, 16)
		if err != nil {
			t.Fatal(err)
		}
		noise := make([]float32, len(x))
		rng.NewPhilox(uint64(42 + b)).Randn(noise)
		for i := range x {
			if want := float32(noise[i] * sig[0]); x[i] != want {
				t.Fatalf("image %d: latent[%d] = %g, want noise·σ = %g", b, i, x[i], want)
			}
		}
		var info map[string]any
		b2, err := os.ReadFile(strings.TrimSuffix(im.Latents, ".f32") + ".json")
		if err != nil || json.Unmarshal(b2, &info) != nil {
			t.Fatalf("latents description: %v", err)
		}
		if info["seed"] != float64(42+b) || info["layout"] != "CHW" {
			t.Errorf("description %v", info)
		}
		texts := readPNGText(t, im.Path)
		if p := texts[imageio.KeyParameters]; !strings.Contains(p, "Seed: "+itoa(42+b)+", Size: 128x64") || !strings.HasPrefix(p, "a lovely cat\nNegative prompt: blurry\nSteps: 3, Sampler: Euler,") {
			t.Errorf("image %d parameters: %q", b, p)
		}
		var rec Record
		if err := json.Unmarshal([]byte(texts[imageio.KeyJob]), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Seed != int64(42+b) || rec.RNG != "cuda" || rec.ModelSHA256[:10] != "0123456789" || rec.StagesMS["generate"] <= 0 {
			t.Errorf("record %+v", rec)
		}
	}
	if res.Images[1].Path != strings.TrimSuffix(s.Out, ".png")+"-2.png" {
		t.Errorf("second image at %s", res.Images[1].Path)
	}
	var ex bytes.Buffer
	j.Explain(&ex)
	for _, want := range []string{"text encoder", "UNet", "VAE", "image 3/3 step 3/3", "save latents 3", "negative prompt", "out-3.png"} {
		if !strings.Contains(ex.String(), want) {
			t.Errorf("explain lacks %q:\n%s", want, ex.String())
		}
	}
	obs, _ := e.History.Load()
	if len(obs) != 1 || obs[0].Calls != 18 || obs[0].SecPerCall <= 0 {
		t.Errorf("history %+v", obs)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func decodeImage(r io.Reader) (image.Image, string, error) { return image.Decode(r) }

func readPNGText(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts, err := imageio.ReadText(f)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, tx := range texts {
		m[tx.Key] = tx.Value
	}
	return m
}

// TestCancel cancels the job during UNet call 3 (step 2's conditional
// pass): the job stops without another call, in stage generate, at step 2.
func TestCancel(t *testing.T) {
	f := &fakes{unet: &fakeUNet{scale: 0.1}, vae: &fakeVAE{}}
	e := fakeEngine(t, f)
	s := settings(t, Request{Prompt: "a cat", Steps: 4, Sampler: "euler", Width: 64, Height: 64})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.unet.onCall = func(k int, eps []float32) error {
		if k == 3 {
			cancel()
		}
		return nil
	}
	m := pipeline.NewManager(pipeline.Options{})
	j := m.Submit(ctx, pipeline.Params{Kind: "image"}, func(ctx context.Context) (any, error) { return e.Run(ctx, s, "job1", t.TempDir()) })
	_, err := j.Wait(context.Background())
	if err == nil {
		t.Fatal("no error")
	}
	if f.unet.calls != 3 {
		t.Errorf("%d UNet calls, want 3 (none after the cancel)", f.unet.calls)
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "in euler step 2/4") {
		t.Errorf("error %v: want cancelled in step 2", err)
	}
	evs := j.Events(0)
	var errEv *api.Event
	for i := range evs {
		if evs[i].Type == api.TypeError {
			errEv = &evs[i]
		}
	}
	if errEv == nil || errEv.Stage != "generate" || !strings.Contains(errEv.Error.Message, "step 2/4") {
		t.Errorf("error event %+v", errEv)
	}
}

// TestNaN makes UNet call 5 (step 3's conditional pass) return a NaN: step
// 3 fails by name.
func TestNaN(t *testing.T) {
	f := &fakes{unet: &fakeUNet{scale: 0.1}, vae: &fakeVAE{}}
	e := fakeEngine(t, f)
	s := settings(t, Request{Prompt: "a cat", Steps: 4, Sampler: "euler", Width: 64, Height: 64})
	f.unet.onCall = func(k int, eps []float32) error {
		if k == 5 {
			eps[17] = float32(math.NaN())
		}
		return nil
	}
	_, _, err := runJob(t, e, s, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "generate: euler step 3/4") || !strings.Contains(err.Error(), "non-finite latent: x[17] = NaN") {
		t.Fatalf("error %v", err)
	}
}

// TestDecodeRetry fails the first decode: the job fails in stage decode
// with its latents kept and a hint naming glassbox decode; Engine.Decode
// then finishes the image, pixel for pixel what an unfailed run makes.
func TestDecodeRetry(t *testing.T) {
	f := &fakes{unet: &fakeUNet{scale: 0.05}, vae: &fakeVAE{fail: 1}}
	e := fakeEngine(t, f)
	dir := t.TempDir()
	s := settings(t, Request{Prompt: "a cat", Steps: 2, Sampler: "euler_a", Seed: 5, Width: 64, Height: 128})
	_, _, err := runJob(t, e, s, dir)
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Stage != pipeline.StageDecode || !strings.Contains(pe.Hint, "glassbox decode job1") || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(s.Out); err == nil {
		t.Fatal("a PNG was written by a failed decode")
	}
	lat := LatentsPath(dir, 0)
	if _, err := os.Stat(lat); err != nil {
		t.Fatalf("latents not kept: %v", err)
	}
	res, err := e.Decode(context.Background(), s, "job2", "job1", []string{lat})
	if err != nil {
		t.Fatal(err)
	}
	retried, _ := os.ReadFile(res.Images[0].Path)
	rec := readPNGText(t, res.Images[0].Path)
	if !strings.Contains(rec[imageio.KeyParameters], "Seed: 5") {
		t.Errorf("parameters %q", rec[imageio.KeyParameters])
	}
	// The same job without the failure.
	f2 := &fakes{unet: &fakeUNet{scale: 0.05}, vae: &fakeVAE{}}
	s2 := *s
	s2.Out = filepath.Join(t.TempDir(), "direct.png")
	if _, _, err := runJob(t, fakeEngine(t, f2), &s2, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	direct, _ := os.ReadFile(s2.Out)
	if pixels(t, retried) != pixels(t, direct) {
		t.Error("the retried decode's pixels differ from an unfailed run's")
	}
}

func pixels(t *testing.T, png []byte) string {
	t.Helper()
	img, _, err := decodeImage(bytes.NewReader(png))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c0, c1, c2, _ := img.At(x, y).RGBA()
			b.WriteByte(byte(c0 >> 8))
			b.WriteByte(byte(c1 >> 8))
			b.WriteByte(byte(c2 >> 8))
		}
	}
	return b.String()
}
