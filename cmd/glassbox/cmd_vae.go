package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // vae encode reads JPEG inputs too
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/imageio"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/vae"
)

func init() {
	register(&command{name: "vae", summary: "encode an image to latents or decode latents to a PNG (TAEF2 autoencoder)", run: runVAE})
}

const vaeUsage = `encode -m taef2_encoder.pth IMAGE -o LATENTS.f32    (also writes LATENTS.json)
       glassbox vae decode -m taef2_decoder.pth LATENTS.f32 [--shape 32,H,W] -o OUT.png [--tile PX]`

func runVAE(ctx context.Context, env *cmdEnv, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "encode":
			return vaeEncodeCmd(ctx, env, args[1:])
		case "decode":
			return vaeDecodeCmd(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(env.stderr, "Usage: glassbox vae %s\n\nRun 'glassbox vae encode -h' or 'glassbox vae decode -h' for flags.\n", vaeUsage)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return nil
	}
	return errUsage
}

func jobFlags(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
	IntVar(*int, string, int, string)
}, o *imageJobOpts) {
	fs.StringVar(&o.home, "home", "", "glassbox home for the journal and job files (default $GLASSBOX_HOME or ~/.glassbox)")
	fs.BoolVar(&o.noJournal, "no-journal", false, "do not record the job in the journal")
	fs.BoolVar(&o.json, "json", false, "print the job's events as JSON lines")
	fs.BoolVar(&o.verbose, "verbose", false, "print progress and the stage timeline on stderr")
	fs.IntVar(&o.threads, "threads", 0, "compute threads (0: one per physical core)")
}

// vaeEncodeParams is the request of a vae-encode job, as journaled.
type vaeEncodeParams struct {
	Model   string `json:"model"`
	Image   string `json:"image"`
	Out     string `json:"out"`
	Budget  int64  `json:"mem_budget,omitempty"`
	Threads int    `json:"threads"`
}

func vaeEncodeCmd(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "vae encode", "-m taef2_encoder.pth IMAGE -o LATENTS.f32")
	var p vaeEncodeParams
	var o imageJobOpts
	fs.StringVar(&p.Model, "m", "", "encoder checkpoint (.pth)")
	fs.StringVar(&p.Out, "o", "", "output latents file (raw float32, [32][H/8][W/8])")
	budget := fs.String("mem-budget", "", "memory the encode may use, e.g. 2GiB (default: half the available RAM)")
	jobFlags(fs, &o)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || p.Model == "" || p.Out == "" {
		fs.Usage()
		return errUsage
	}
	if *budget != "" {
		if p.Budget, err = plan.ParseBytes(*budget); err != nil {
			return pipeline.Wrap(pipeline.StagePlan, err, "")
		}
	}
	p.Image, p.Threads = pos[0], o.threads
	res, err := runImageJob(ctx, env, &o, "vae-encode", p.Model, p, func(ctx context.Context, id, _ string) (any, error) {
		return vaeEncode(ctx, &p)
	})
	if err != nil || res == nil {
		return err
	}
	r := res.(vaeEncodeResult)
	if !o.json {
		fmt.Fprintf(env.stdout, "%s: latents [%d %d %d], described in %s\n", r.Out, r.Shape[0], r.Shape[1], r.Shape[2], vae.SidecarPath(r.Out))
	}
	return nil
}

type vaeEncodeResult struct {
	Out   string `json:"out"`
	Shape [3]int `json:"shape"`
}

func vaeEncode(ctx context.Context, p *vaeEncodeParams) (any, error) {
	st := newStageTimer(ctx)
	var enc *vae.Encoder
	var img []float32
	var h, w int
	err := st.run(pipeline.StageLoad, func() (pipeline.StageStats, error) {
		path, err := resolveModel(p.Model)
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
		return nil, err
	}
	err = st.run(pipeline.StagePlan, func() (pipeline.StageStats, error) {
		ep, err := vae.PlanEncode(h, w)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		budget := p.Budget
		if budget == 0 {
			dev, err := plan.Local()
			if err != nil {
				return pipeline.StageStats{}, err
			}
			budget = dev.RAMAvailable / 2
		}
		if ep.Total > budget {
			e := pipeline.Errorf(pipeline.StagePlan, "use a smaller image, or raise --mem-budget if the memory is there",
				"%v needs %s, more than the budget of %s", ep, plan.FormatBytes(ep.Total), plan.FormatBytes(budget))
			return pipeline.StageStats{}, e.With("need_bytes", ep.Total).With("budget_bytes", budget)
		}
		return pipeline.StageStats{Note: ep.String()}, nil
	})
	if err != nil {
		return nil, err
	}
	pool := compute.NewPool(p.Threads)
	defer pool.Close()
	var lat []float32
	var lh, lw int
	err = st.run(pipeline.StageEncode, func() (pipeline.StageStats, error) {
		var err error
		arena := new(conv.Arena)
		lat, lh, lw, err = enc.Encode(ctx, img, h, w, vae.Options{Runner: pool, Arena: arena})
		return pipeline.StageStats{Items: 1, Unit: "images", Placement: placement(pool), PeakRSS: peakRSS(),
			Note: "arena peak " + plan.FormatBytes(arena.Peak())}, err
	})
	if err != nil {
		return nil, err
	}
	err = st.run(pipeline.StageDeliver, func() (pipeline.StageStats, error) {
		n, err := writeFileAtomic(p.Out, func(w io.Writer) error { return vae.WriteF32(w, lat) })
		if err != nil {
			return pipeline.StageStats{}, err
		}
		info := vae.DescribeLatents(lat, vae.LatentChannels, lh, lw)
		info.File, info.SourceImage, info.SourceHW = filepath.Base(p.Out), filepath.Base(p.Image), []int{h, w}
		if info.SHA256, _, err = fileSHA256(p.Out); err != nil {
			return pipeline.StageStats{}, err
		}
		m, err := writeFileAtomic(vae.SidecarPath(p.Out), func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", " ")
			return enc.Encode(info)
		})
		return pipeline.StageStats{Bytes: n + m}, err
	})
	if err != nil {
		return nil, err
	}
	return vaeEncodeResult{Out: p.Out, Shape: [3]int{vae.LatentChannels, lh, lw}}, nil
}

func placement(p *compute.Pool) string {
	return fmt.Sprintf("cpu:%d threads, %s", p.Threads(), conv.Kernel())
}

// vaeDecodeParams is the request of a vae-decode job, as journaled; the
// job's copy of the latents (SavedLatents) is what glassbox decode JOB
// retries from.
type vaeDecodeParams struct {
	Model        string `json:"model"`
	Latents      string `json:"latents"`
	SavedLatents string `json:"saved_latents,omitempty"`
	Shape        [3]int `json:"shape"`
	Out          string `json:"out"`
	Raw          string `json:"raw,omitempty"`
	TilePX       int    `json:"tile_px,omitempty"`
	OverlapPX    int    `json:"overlap_px,omitempty"`
	Budget       int64  `json:"mem_budget,omitempty"`
	Threads      int    `json:"threads"`
	RetryOf      string `json:"retry_of,omitempty"`
}

func vaeDecodeCmd(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "vae decode", "-m taef2_decoder.pth LATENTS.f32 [--shape 32,H,W] -o OUT.png [--tile PX]")
	var p vaeDecodeParams
	var o imageJobOpts
	var shape, budget string
	fs.StringVar(&p.Model, "m", "", "decoder checkpoint (.pth)")
	fs.StringVar(&shape, "shape", "", "latent shape C,H,W (C = 32; the image is 8W×8H); default: from LATENTS.json beside the file")
	fs.StringVar(&p.Out, "o", "", "output PNG")
	fs.StringVar(&p.Raw, "raw", "", "also write the unclamped decoder output here (raw float32 [3][8H][8W])")
	fs.IntVar(&p.TilePX, "tile", 0, "decode in tiles of this many pixels (a multiple of 8; 0: untiled unless the memory budget needs tiles)")
	fs.IntVar(&p.OverlapPX, "overlap", 8*vae.DefaultOverlap, "pixels adjacent tiles share (a multiple of 8)")
	fs.StringVar(&budget, "mem-budget", "", "memory the decode may use, e.g. 2GiB (default: half the available RAM)")
	jobFlags(fs, &o)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || p.Model == "" || p.Out == "" {
		fs.Usage()
		return errUsage
	}
	p.Latents, p.Threads = pos[0], o.threads
	if shape == "" {
		info, err := vae.ReadLatentInfo(p.Latents)
		if err != nil {
			return pipeline.Wrap(pipeline.StageLoad, err, "give --shape 32,H,W")
		}
		p.Shape = [3]int{info.Shape[0], info.Shape[1], info.Shape[2]}
	} else if p.Shape, err = parseShape(shape); err != nil {
		return err
	}
	if budget != "" {
		if p.Budget, err = plan.ParseBytes(budget); err != nil {
			return pipeline.Wrap(pipeline.StagePlan, err, "")
		}
	}
	return runDecodeJob(ctx, env, &o, &p)
}

func runDecodeJob(ctx context.Context, env *cmdEnv, o *imageJobOpts, p *vaeDecodeParams) error {
	if p.TilePX%8 != 0 || p.OverlapPX%8 != 0 || p.TilePX < 0 || p.OverlapPX < 0 {
		return pipeline.Errorf(pipeline.StagePlan, "use multiples of 8", "--tile %d and --overlap %d must be non-negative multiples of 8 pixels", p.TilePX, p.OverlapPX)
	}
	res, err := runImageJob(ctx, env, o, "vae-decode", p.Model, p, func(ctx context.Context, id, dir string) (any, error) {
		return vaeDecode(ctx, id, dir, p)
	})
	if err != nil || res == nil {
		return err
	}
	r := res.(vaeDecodeResult)
	if !o.json {
		fmt.Fprintf(env.stdout, "%s: %dx%d PNG (%s)\n", r.Out, r.Width, r.Height, r.Plan)
	}
	return nil
}

func parseShape(s string) ([3]int, error) {
	var sh [3]int
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return sh, pipeline.Errorf(pipeline.StagePlan, "e.g. --shape 32,64,64", "--shape %q: want C,H,W", s)
	}
	for i, f := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return sh, pipeline.Errorf(pipeline.StagePlan, "", "--shape %q: %q is not a positive integer", s, f)
		}
		sh[i] = v
	}
	if sh[0] != vae.LatentChannels {
		return sh, pipeline.Errorf(pipeline.StagePlan, "TAEF2 latents have 32 channels", "--shape %q: %d channels", s, sh[0])
	}
	if sh[1] > 1<<14 || sh[2] > 1<<14 {
		return sh, pipeline.Errorf(pipeline.StagePlan, "", "--shape %q: at most 16384 latent pixels per side", s)
	}
	return sh, nil
}

type vaeDecodeResult struct {
	Out       string `json:"out"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Tiles     int    `json:"tiles"`
	Plan      string `json:"plan"`
	PlanBytes int64  `json:"plan_bytes"`
	PeakBytes int64  `json:"arena_peak_bytes"`
}

// decodeRecord is the JSON job record stored in the PNG (key "glassbox").
type decodeRecord struct {
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

func vaeDecode(ctx context.Context, id, dir string, p *vaeDecodeParams) (any, error) {
	st := newStageTimer(ctx)
	c, h, w := p.Shape[0], p.Shape[1], p.Shape[2]
	var dec *vae.Decoder
	var lat []float32
	var modelSHA, latSHA string
	err := st.run(pipeline.StageLoad, func() (pipeline.StageStats, error) {
		path, err := resolveModel(p.Model)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		var n int64
		if modelSHA, n, err = fileSHA256(path); err != nil {
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
		if latSHA, _, err = fileSHA256(src); err != nil {
			return pipeline.StageStats{}, err
		}
		// Keep the job's own copy of the latents before decoding, so a
		// failed decode can be retried with glassbox decode JOB.
		if dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return pipeline.StageStats{}, err
			}
			saved := filepath.Join(dir, "latents.f32")
			if _, err := writeFileAtomic(saved, func(w io.Writer) error { return vae.WriteF32(w, lat) }); err != nil {
				return pipeline.StageStats{}, fmt.Errorf("save the job's latents: %w", err)
			}
			p.SavedLatents = saved
		}
		return pipeline.StageStats{Bytes: n + 4*int64(len(lat))}, nil
	})
	if err != nil {
		return nil, err
	}

	var dp vae.DecodePlan
	err = st.run(pipeline.StagePlan, func() (pipeline.StageStats, error) {
		budget := p.Budget
		if budget == 0 {
			dev, err := plan.Local()
			if err != nil {
				return pipeline.StageStats{}, err
			}
			budget = dev.RAMAvailable / 2
		}
		var err error
		dp, err = vae.PlanWithin(h, w, p.TilePX/8, p.OverlapPX/8, dec.WeightBytes(), budget)
		return pipeline.StageStats{Note: dp.String()}, err
	})
	if err != nil {
		return nil, err
	}

	pool := compute.NewPool(p.Threads)
	defer pool.Close()
	arena := new(conv.Arena)
	var img []float32
	err = st.run(pipeline.StageDecode, func() (pipeline.StageStats, error) {
		var err error
		img, err = dec.Decode(ctx, lat, h, w, vae.Options{Runner: pool, Arena: arena, Tile: dp.Tile, Overlap: dp.Overlap})
		return pipeline.StageStats{Items: int64(dp.Tiles), Unit: "tiles", Placement: placement(pool), PeakRSS: peakRSS(),
			Note: fmt.Sprintf("arena peak %s of %s planned", plan.FormatBytes(arena.Peak()), plan.FormatBytes(dp.Activations))}, err
	})
	if err != nil {
		return nil, err
	}

	H, W := vae.Scale*h, vae.Scale*w
	err = st.run(pipeline.StageDeliver, func() (pipeline.StageStats, error) {
		rgb, err := imageio.RGB8(imageio.Quantize(img), H, W)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		rec := decodeRecord{Job: id, Kind: "vae-decode", Model: p.Model, ModelSHA256: modelSHA, Latents: p.Latents,
			LatentsSHA: latSHA, Shape: p.Shape, Created: time.Now().UTC(), StagesMS: st.times,
			Settings: map[string]any{"tile_px": vae.Scale * dp.Tile, "overlap_px": vae.Scale * dp.Overlap, "tiles": dp.Tiles, "threads": pool.Threads()}}
		recJSON, err := jsonString(rec)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		params := fmt.Sprintf("VAE decode of %s\nSteps: 0, Size: %dx%d, VAE: %s, VAE hash: %s, Tiles: %d",
			filepath.Base(p.Latents), W, H, filepath.Base(p.Model), modelSHA[:10], dp.Tiles)
		texts := []imageio.Text{{Key: imageio.KeyParameters, Value: params}, {Key: imageio.KeyJob, Value: recJSON}}
		n, err := writeFileAtomic(p.Out, func(w io.Writer) error { return imageio.Encode(w, rgb, texts) })
		if err == nil && p.Raw != "" {
			var m int64
			m, err = writeFileAtomic(p.Raw, func(w io.Writer) error { return vae.WriteF32(w, img) })
			n += m
		}
		return pipeline.StageStats{Bytes: n}, err
	})
	if err != nil {
		return nil, err
	}
	return vaeDecodeResult{Out: p.Out, Width: W, Height: H, Tiles: dp.Tiles, Plan: dp.String(),
		PlanBytes: dp.Activations, PeakBytes: arena.Peak()}, nil
}

func jsonString(v any) (string, error) {
	var b strings.Builder
	if err := jsonEncodeCompact(&b, v); err != nil {
		return "", errors.New("job record: " + err.Error())
	}
	return strings.TrimSpace(b.String()), nil
}
