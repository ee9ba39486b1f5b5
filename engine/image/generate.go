package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/internal/atomicfile"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/vae"
)

// generate samples every image of the batch and saves its final latent.
func (j *job) generate(ctx context.Context) (pipeline.StageStats, error) {
	s := j.s
	h, w := s.LatentH(), s.LatentW()
	n := Channels * h * w
	cv, err := diffusion.NewCompVis(nil)
	if err != nil {
		return pipeline.StageStats{}, err
	}
	sigmas, err := cv.Schedule(s.Schedule, s.Steps)
	if err != nil {
		return pipeline.StageStats{}, err
	}
	if s.InitImage != "" {
		start, err := diffusion.StartAt(sigmas, s.Strength)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		sigmas = sigmas[start:]
	}
	steps := len(sigmas) - 1
	g, err := rng.New(s.RNG, 0)
	if err != nil {
		return pipeline.StageStats{}, err
	}
	sampler := diffusion.New(s.Method, g)
	calls := sampler.Method.Calls(sigmas, sampler.Eta)
	if diffusion.NeedsUncond(s.CFGScale) {
		calls *= 2
	}
	den := &diffusion.EpsDenoiser{CompVis: cv, CFGScale: s.CFGScale, Net: func(ctx context.Context, xIn []float32, t float32, uncond bool, eps []float32) error {
		c, nc := j.cond, j.nCond
		if uncond {
			c, nc = j.uncond, j.nUnc
		}
		j.calls++
		return j.unet.Eps(ctx, j.pool, xIn, h, w, t, c, nc, eps)
	}}
	total := int64(s.Batch * steps)
	t0 := time.Now()
	every := j.e.PreviewEvery
	if every == 0 {
		every = time.Second
	}
	var lastPreview time.Time
	for b := range s.Batch {
		seed := s.SeedOf(b)
		g.Seed(uint64(seed))
		noise := make([]float32, n)
		g.Randn(noise) // call 0 of the image's seed; the sampler's noise follows
		x := make([]float32, n)
		diffusion.NoiseScaling(x, j.init, noise, sigmas[0])
		if k := firstNonFinite(x); k >= 0 {
			return pipeline.StageStats{}, fmt.Errorf("image %d: the initial latent has a non-finite value at %d (%g)", b+1, k, x[k])
		}
		stepStart := time.Now()
		callsBefore := j.calls
		sampler.OnStep = func(st diffusion.Step) {
			now := time.Now()
			done := int64(b*steps + st.Index + 1)
			el := now.Sub(t0).Seconds()
			perCall := el / float64(max(j.calls, 1))
			remaining := float64(int64(calls*s.Batch)-int64(j.calls)) * perCall
			name := fmt.Sprintf("step %d/%d", st.Index+1, st.Steps)
			if s.Batch > 1 {
				name = fmt.Sprintf("image %d/%d %s", b+1, s.Batch, name)
			}
			d := now.Sub(stepStart)
			if c := j.calls - callsBefore; c > 0 {
				j.stepSecPerCall = append(j.stepSecPerCall, d.Seconds()/float64(c))
			}
			j.tr.OnPartDone(pipeline.StageGenerate, name, d, pipeline.StageStats{Items: int64(j.calls - callsBefore), Unit: "UNet calls",
				Note: fmt.Sprintf("σ %.4g, %.2f s/step, ETA %s", st.Sigma, el/float64(done), fmtSeconds(remaining))})
			j.tr.OnProgress(pipeline.StageGenerate, done, total)
			last := st.Index+1 == st.Steps
			if every > 0 && (last || now.Sub(lastPreview) >= every) {
				lastPreview = now
				if pv, err := Preview(st.Denoised, h, w); err == nil {
					j.tr.OnPreview(api.Preview{Image: b, Step: st.Index + 1, Steps: st.Steps, Width: w, Height: h, PNG: pv})
				}
			}
			stepStart, callsBefore = now, j.calls
		}
		if err := sampler.Run(ctx, x, sigmas, den.Denoise); err != nil {
			if s.Batch > 1 {
				err = fmt.Errorf("image %d/%d (seed %d): %w", b+1, s.Batch, seed, err)
			}
			return pipeline.StageStats{}, err
		}
		j.latents = append(j.latents, x)
		if err := j.part(pipeline.StageGenerate, fmt.Sprintf("save latents %d", b+1), func() (pipeline.StageStats, error) {
			return j.saveLatents(b, x)
		}); err != nil {
			return pipeline.StageStats{}, err
		}
	}
	j.sampleTime = time.Since(t0)
	return pipeline.StageStats{Items: total, Unit: "steps", Placement: placement(j.pool), PeakRSS: peakRSS(),
		Note: fmt.Sprintf("%d UNet calls, %.2f s/call", j.calls, j.sampleTime.Seconds()/float64(max(j.calls, 1)))}, nil
}

// saveLatents writes image b's final latent into the job's folder (and to
// SaveLatents when asked), each with its JSON description, before any
// decode runs.
func (j *job) saveLatents(b int, x []float32) (pipeline.StageStats, error) {
	var paths []string
	if j.dir != "" {
		if err := os.MkdirAll(j.dir, 0o755); err != nil {
			return pipeline.StageStats{}, fmt.Errorf("the job's folder: %w", err)
		}
		paths = append(paths, LatentsPath(j.dir, b))
	}
	if j.s.SaveLatents != "" {
		paths = append(paths, OutPath(j.s.SaveLatents, b))
	}
	var n int64
	for _, p := range paths {
		m, err := WriteLatents(p, x, j.s.LatentH(), j.s.LatentW(), j.s.SeedOf(b))
		if err != nil {
			return pipeline.StageStats{}, fmt.Errorf("save latents: %w", err)
		}
		n += m
	}
	return pipeline.StageStats{Bytes: n}, nil
}

// WriteLatents writes a latent [4][h][w] as raw little-endian float32 at
// path and its description (vae.LatentInfo) beside it, each atomically.
func WriteLatents(path string, x []float32, h, w int, seed int64) (int64, error) {
	n, err := atomicfile.Write(path, 0o644, func(wr io.Writer) error { return vae.WriteF32(wr, x) })
	if err != nil {
		return 0, err
	}
	info := vae.DescribeLatents(x, Channels, h, w)
	info.File = filepath.Base(path)
	if info.SHA256, err = FileSHA256(path); err != nil {
		return 0, err
	}
	b, err := json.MarshalIndent(struct {
		vae.LatentInfo
		Seed  int64   `json:"seed"`
		Scale float64 `json:"scale_factor"` // the VAE decodes latent/scale_factor
	}{info, seed, ScaleFactor}, "", " ")
	if err != nil {
		return 0, err
	}
	m, err := atomicfile.Write(vae.SidecarPath(path), 0o644, func(wr io.Writer) error { _, err := wr.Write(append(b, '\n')); return err })
	return n + m, err
}

// ReadLatents reads a latent [4][h][w] written by WriteLatents.
func ReadLatents(path string, h, w int) ([]float32, error) {
	return vae.ReadF32(path, Channels*h*w)
}

// previewFactors project an SD 1.x latent's 4 channels to RGB in [-1, 1]
// (rows: latent channels, columns: R, G, B): the linear fit of the VAE's
// decoded colours to latents published by Keturn, "Decoding latents to
// RGB without upscaling" (Hugging Face forum, 2022), which A1111's "Approx
// cheap" live preview uses.
var previewFactors = [Channels][3]float32{
	{0.298, 0.207, 0.208},
	{0.187, 0.286, 0.173},
	{-0.158, 0.189, 0.264},
	{-0.184, -0.271, -0.473},
}

// Preview renders a latent [4][h][w] (diffusion space) as an h×w PNG
// through previewFactors: a look at the image at 1/8 of its size for the
// cost of 12 multiply-adds a pixel.
func Preview(x []float32, h, w int) ([]byte, error) {
	if len(x) != Channels*h*w {
		return nil, fmt.Errorf("preview: %d values for a [4][%d][%d] latent", len(x), h, w)
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	n := h * w
	for i := range n {
		var rgb [3]float32
		for c := range Channels {
			v := x[c*n+i]
			for k := range 3 {
				rgb[k] += v * previewFactors[c][k]
			}
		}
		var px [3]uint8
		for k, v := range rgb {
			px[k] = toU8((v + 1) / 2)
		}
		img.SetNRGBA(i%w, i/w, color.NRGBA{px[0], px[1], px[2], 255})
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// toU8 is sd.cpp's float → 8-bit conversion (preprocessing_float_to_u8):
// 0 at or below 0, 255 at or above 1, else v·255 + 0.5 truncated (NaN: 0).
func toU8(v float32) uint8 {
	switch {
	case !(v > 0):
		return 0
	case v >= 1:
		return 255
	}
	return uint8(v*255 + 0.5)
}
