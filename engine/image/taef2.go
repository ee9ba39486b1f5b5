package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/imageio"
	"github.com/glassbox-ai/glassbox/internal/atomicfile"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/vae"
)

// The TAEF2 jobs: an image to latents (vae-encode) and latents to a PNG
// (vae-decode) through the autoencoder alone, each stage reported through
// the trace in ctx. A decode keeps its own copy of the latents in the
// job's folder before it decodes, so a decode that fails (over its memory
// budget, say) is retried from them (glassbox decode JOB).

// TAEF2EncodeRequest is a vae-encode job, as journaled.
type TAEF2EncodeRequest struct {
	Model   string `json:"model"` // encoder checkpoint (.pth), a path or a store name
	Image   string `json:"image"` // PNG or JPEG
	Out     string `json:"out"`   // raw float32 latents [32][H/8][W/8]; the JSON sidecar beside it
	Budget  int64  `json:"mem_budget,omitempty"`
	Threads int    `json:"threads"`
}

// TAEF2EncodeResult is a vae-encode job's result.
type TAEF2EncodeResult struct {
	Out   string `json:"out"`
	Shape [3]int `json:"shape"`
}

// TAEF2DecodeRequest is a vae-decode job, as journaled; the job's copy of
// the latents (SavedLatents) is what a retry (RetryOf) decodes.
type TAEF2DecodeRequest struct {
	Model        string `json:"model"`
	Latents      string `json:"latents"`
	SavedLatents string `json:"saved_latents,omitempty"`
	Shape        [3]int `json:"shape"`
	Out          string `json:"out"`
	Raw          string `json:"raw,omitempty"` // also the unclamped decoder output, raw float32 [3][8H][8W]
	TilePX       int    `json:"tile_px,omitempty"`
	OverlapPX    int    `json:"overlap_px,omitempty"`
	Budget       int64  `json:"mem_budget,omitempty"` // 0: half the available RAM
	Threads      int    `json:"threads"`
	RetryOf      string `json:"retry_of,omitempty"`
}

// TAEF2DecodeResult is a vae-decode job's result.
type TAEF2DecodeResult struct {
	Out       string `json:"out"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Tiles     int    `json:"tiles"`
	Plan      string `json:"plan"`
	PlanBytes int64  `json:"plan_bytes"`
	PeakBytes int64  `json:"arena_peak_bytes"`
}

// taef2Record is the JSON job record a decode stores in its PNG (key
// "glassbox").
type taef2Record struct {
	Job         string             `json:"job"`
	Kind        string             `json:"kind"`
	Model       string             `json:"model"`
	ModelSHA256 string             `json:"model_sha256"`
	Latents     string             `json:"latents"`
	LatentsSHA  string             `json:"latents_sha256"`
	Shape       [3]int             `json:"latent_shape"`
	Seed        *int64             `json:"seed"` // no sampling in a pure decode
	Settings    map[string]any     `json:"settings"`
	StagesMS    map[string]float64 `json:"stages_ms"`
	Created     time.Time          `json:"created"`
}

// taef2Stages reports one stage at a time through the trace and keeps
// each one's time for the job record.
type taef2Stages struct {
	tr    *pipeline.Trace
	times map[string]float64 // stage → ms
}

func newTAEF2Stages(ctx context.Context) *taef2Stages {
	return &taef2Stages{tr: pipeline.TraceFrom(ctx), times: map[string]float64{}}
}

func (s *taef2Stages) run(st pipeline.Stage, fn func() (pipeline.StageStats, error)) error {
	s.tr.OnStageStart(st)
	t0 := time.Now()
	stats, err := fn()
	if err != nil {
		return pipeline.Wrap(st, err, "")
	}
	s.times[string(st)] = float64(time.Since(t0).Microseconds()) / 1000
	s.tr.OnStageDone(st, stats)
	return nil
}

// taef2Budget is budget, or half the RAM available now when it is 0.
func taef2Budget(budget int64) (int64, error) {
	if budget != 0 {
		return budget, nil
	}
	dev, err := plan.Local()
	if err != nil {
		return 0, err
	}
	return dev.RAMAvailable / 2, nil
}

func taef2Placement(p *compute.Pool) string {
	return fmt.Sprintf("cpu:%d threads, %s", p.Threads(), conv.Kernel())
}

// TAEF2Encode runs a vae-encode job: load (resolve turns p.Model into the
// checkpoint's path; the image is read), plan (refused over the budget),
// encode, deliver (the latents and their JSON sidecar).
func TAEF2Encode(ctx context.Context, p *TAEF2EncodeRequest, resolve func(string) (string, error)) (TAEF2EncodeResult, error) {
	st := newTAEF2Stages(ctx)
	var enc *vae.Encoder
	var img []float32
	var h, w int
	err := st.run(pipeline.StageLoad, func() (pipeline.StageStats, error) {
		path, err := resolve(p.Model)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		if enc, err = vae.OpenEncoder(path); err != nil {
			return pipeline.StageStats{}, err
		}
		f, err := os.Open(p.Image)
		if err != nil {
			return pipeline.StageStats{}, fmt.Errorf("image: %w", err)
		}
		defer f.Close()
		im, format, err := image.Decode(f)
		if err != nil {
			return pipeline.StageStats{}, fmt.Errorf("image %s: %w (PNG and JPEG are supported)", p.Image, err)
		}
		img, h, w = imageio.Planar(im)
		if h%vae.Scale != 0 || w%vae.Scale != 0 {
			pipeline.TraceFrom(ctx).OnWarning("size_not_multiple_of_8", fmt.Sprintf(
				"the image is %dx%d, not a multiple of 8: the latents cover %dx%d and decode to that size",
				w, h, (w+7)/8*8, (h+7)/8*8))
		}
		return pipeline.StageStats{Note: fmt.Sprintf("%dx%d %s image", w, h, format)}, nil
	})
	if err != nil {
		return TAEF2EncodeResult{}, err
	}
	err = st.run(pipeline.StagePlan, func() (pipeline.StageStats, error) {
		ep, err := vae.PlanEncode(h, w)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		budget, err := taef2Budget(p.Budget)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		if ep.Total > budget {
			e := pipeline.Errorf(pipeline.StagePlan, "use a smaller image, or raise --mem-budget if the memory is there",
				"%v needs %s, more than the budget of %s", ep, plan.FormatBytes(ep.Total), plan.FormatBytes(budget))
			return pipeline.StageStats{}, e.With("need_bytes", ep.Total).With("budget_bytes", budget)
		}
		return pipeline.StageStats{Note: ep.String()}, nil
	})
	if err != nil {
		return TAEF2EncodeResult{}, err
	}
	pool := compute.NewPool(p.Threads)
	defer pool.Close()
	var lat []float32
	var lh, lw int
	err = st.run(pipeline.StageEncode, func() (pipeline.StageStats, error) {
		var err error
		arena := new(conv.Arena)
		lat, lh, lw, err = enc.Encode(ctx, img, h, w, vae.Options{Runner: pool, Arena: arena})
		return pipeline.StageStats{Items: 1, Unit: "images", Placement: taef2Placement(pool), PeakRSS: peakRSS(),
			Note: "arena peak " + plan.FormatBytes(arena.Peak())}, err
	})
	if err != nil {
		return TAEF2EncodeResult{}, err
	}
	err = st.run(pipeline.StageDeliver, func() (pipeline.StageStats, error) {
		n, err := atomicfile.Write(p.Out, 0o644, func(w io.Writer) error { return vae.WriteF32(w, lat) })
		if err != nil {
			return pipeline.StageStats{}, err
		}
		info := vae.DescribeLatents(lat, vae.LatentChannels, lh, lw)
		info.File, info.SourceImage, info.SourceHW = filepath.Base(p.Out), filepath.Base(p.Image), []int{h, w}
		if info.SHA256, _, err = atomicfile.SHA256(p.Out); err != nil {
			return pipeline.StageStats{}, err
		}
		m, err := atomicfile.Write(vae.SidecarPath(p.Out), 0o644, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", " ")
			return enc.Encode(info)
		})
		return pipeline.StageStats{Bytes: n + m}, err
	})
	if err != nil {
		return TAEF2EncodeResult{}, err
	}
	return TAEF2EncodeResult{Out: p.Out, Shape: [3]int{vae.LatentChannels, lh, lw}}, nil
}

// TAEF2Decode runs a vae-decode job id with its folder dir ("": none, so
// no copy of the latents is kept): load (the decoder, the latents, their
// copy saved in dir and named in p.SavedLatents), plan (p's tiles checked
// against the budget less the weights, or the tiles chosen to fit it),
// decode, deliver (the PNG with A1111's "parameters" text and the job
// record; p.Raw's unclamped output).
func TAEF2Decode(ctx context.Context, id, dir string, p *TAEF2DecodeRequest, resolve func(string) (string, error)) (TAEF2DecodeResult, error) {
	st := newTAEF2Stages(ctx)
	c, h, w := p.Shape[0], p.Shape[1], p.Shape[2]
	var dec *vae.Decoder
	var lat []float32
	var modelSHA, latSHA string
	err := st.run(pipeline.StageLoad, func() (pipeline.StageStats, error) {
		path, err := resolve(p.Model)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		var n int64
		if modelSHA, n, err = atomicfile.SHA256(path); err != nil {
			return pipeline.StageStats{}, err
		}
		if dec, err = vae.OpenDecoder(path); err != nil {
			return pipeline.StageStats{}, err
		}
		src := p.Latents
		if p.SavedLatents != "" && p.RetryOf != "" {
			src = p.SavedLatents
		}
		if lat, err = vae.ReadF32(src, c*h*w); err != nil {
			return pipeline.StageStats{}, err
		}
		if latSHA, _, err = atomicfile.SHA256(src); err != nil {
			return pipeline.StageStats{}, err
		}
		// Keep the job's own copy of the latents before decoding, so a
		// failed decode can be retried with glassbox decode JOB.
		if dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return pipeline.StageStats{}, err
			}
			saved := filepath.Join(dir, "latents.f32")
			if _, err := atomicfile.Write(saved, 0o644, func(w io.Writer) error { return vae.WriteF32(w, lat) }); err != nil {
				return pipeline.StageStats{}, fmt.Errorf("save the job's latents: %w", err)
			}
			p.SavedLatents = saved
		}
		return pipeline.StageStats{Bytes: n + 4*int64(len(lat))}, nil
	})
	if err != nil {
		return TAEF2DecodeResult{}, err
	}

	var dp vae.DecodePlan
	err = st.run(pipeline.StagePlan, func() (pipeline.StageStats, error) {
		budget, err := taef2Budget(p.Budget)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		dp, err = vae.PlanWithin(h, w, p.TilePX/8, p.OverlapPX/8, dec.WeightBytes(), budget)
		return pipeline.StageStats{Note: dp.String()}, err
	})
	if err != nil {
		return TAEF2DecodeResult{}, err
	}

	pool := compute.NewPool(p.Threads)
	defer pool.Close()
	arena := new(conv.Arena)
	var img []float32
	err = st.run(pipeline.StageDecode, func() (pipeline.StageStats, error) {
		var err error
		img, err = dec.Decode(ctx, lat, h, w, vae.Options{Runner: pool, Arena: arena, Tile: dp.Tile, Overlap: dp.Overlap})
		return pipeline.StageStats{Items: int64(dp.Tiles), Unit: "tiles", Placement: taef2Placement(pool), PeakRSS: peakRSS(),
			Note: fmt.Sprintf("arena peak %s of %s planned", plan.FormatBytes(arena.Peak()), plan.FormatBytes(dp.Activations))}, err
	})
	if err != nil {
		return TAEF2DecodeResult{}, err
	}

	H, W := vae.Scale*h, vae.Scale*w
	err = st.run(pipeline.StageDeliver, func() (pipeline.StageStats, error) {
		rgb, err := imageio.RGB8(imageio.Quantize(img), H, W)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		rec := taef2Record{Job: id, Kind: "vae-decode", Model: p.Model, ModelSHA256: modelSHA, Latents: p.Latents,
			LatentsSHA: latSHA, Shape: p.Shape, Created: time.Now().UTC(), StagesMS: st.times,
			Settings: map[string]any{"tile_px": vae.Scale * dp.Tile, "overlap_px": vae.Scale * dp.Overlap, "tiles": dp.Tiles, "threads": pool.Threads()}}
		recJSON, err := compactJSON(rec)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		params := fmt.Sprintf("VAE decode of %s\nSteps: 0, Size: %dx%d, VAE: %s, VAE hash: %s, Tiles: %d",
			filepath.Base(p.Latents), W, H, filepath.Base(p.Model), modelSHA[:10], dp.Tiles)
		texts := []imageio.Text{{Key: imageio.KeyParameters, Value: params}, {Key: imageio.KeyJob, Value: recJSON}}
		n, err := atomicfile.Write(p.Out, 0o644, func(w io.Writer) error { return imageio.Encode(w, rgb, texts) })
		if err == nil && p.Raw != "" {
			var m int64
			m, err = atomicfile.Write(p.Raw, 0o644, func(w io.Writer) error { return vae.WriteF32(w, img) })
			n += m
		}
		return pipeline.StageStats{Bytes: n}, err
	})
	if err != nil {
		return TAEF2DecodeResult{}, err
	}
	return TAEF2DecodeResult{Out: p.Out, Width: W, Height: H, Tiles: dp.Tiles, Plan: dp.String(),
		PlanBytes: dp.Activations, PeakBytes: arena.Peak()}, nil
}

// compactJSON is v as one line of JSON, HTML characters unescaped.
func compactJSON(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", errors.New("job record: " + err.Error())
	}
	return strings.TrimSpace(b.String()), nil
}
