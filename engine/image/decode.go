package image

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/imageio"
	"github.com/glassbox-ai/glassbox/internal/atomicfile"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
)

// decode runs the VAE decoder on every saved latent.
func (j *job) decode(ctx context.Context) (pipeline.StageStats, error) {
	h, w := j.s.LatentH(), j.s.LatentW()
	t0 := time.Now()
	for b, x := range j.latents {
		err := j.part(pipeline.StageDecode, fmt.Sprintf("image %d", b+1), func() (pipeline.StageStats, error) {
			z := make([]float32, len(x))
			for i, v := range x {
				z[i] = v / ScaleFactor
			}
			img, err := j.vae.Decode(ctx, j.pool, z, h, w, j.plan.DecodeTile, j.plan.DecodeOverlap)
			if err != nil {
				return pipeline.StageStats{}, err
			}
			if len(img) != 3*64*h*w {
				return pipeline.StageStats{}, fmt.Errorf("the VAE decoder gave %d values, want %d ([3][%d][%d])", len(img), 3*64*h*w, 8*h, 8*w)
			}
			j.images = append(j.images, img)
			st := pipeline.StageStats{}
			if j.plan.DecodeTile > 0 {
				st.Items, st.Unit = int64(j.plan.DecodeTiles), "tiles"
			}
			if pk, ok := j.vae.(interface{ LastPeak() int64 }); ok && pk.LastPeak() > 0 {
				st.Note = fmt.Sprintf("peak %s of %s planned", plan.FormatBytes(pk.LastPeak()), plan.FormatBytes(j.plan.DecodeBytes))
			}
			return st, nil
		})
		if err != nil {
			hint := "the latents are saved: glassbox decode " + j.id + " finishes the image"
			if j.dir == "" {
				hint = "run with the journal to keep the latents for glassbox decode JOB"
			}
			return pipeline.StageStats{}, pipeline.Wrap(pipeline.StageDecode, fmt.Errorf("image %d: %w", b+1, err), hint)
		}
	}
	j.decodeTime = time.Since(t0)
	note := "untiled"
	if j.plan.DecodeTile > 0 {
		note = fmt.Sprintf("%d tiles of %d px", j.plan.DecodeTiles, 8*j.plan.DecodeTile)
	}
	items, unit := int64(len(j.latents)), "images"
	if j.plan.DecodeTile > 0 {
		items, unit = items*int64(j.plan.DecodeTiles), "tiles"
	}
	return pipeline.StageStats{Items: items, Unit: unit, Placement: placement(j.pool),
		PeakRSS: peakRSS(), Note: note}, nil
}

// deliver writes the PNGs.
func (j *job) deliver(ctx context.Context) (pipeline.StageStats, error) {
	var total int64
	for b, img := range j.images {
		rgb8 := make([]uint8, len(img))
		for i, v := range img {
			rgb8[i] = toU8((v + 1) * 0.5) // sd.cpp: clamp((y+1)/2, 0, 1), then to 8 bits
		}
		nrgba, err := imageio.RGB8(rgb8, j.s.Height, j.s.Width)
		if err != nil {
			return pipeline.StageStats{}, err
		}
		rec := j.recordOf(b)
		recJSON, err := rec.json()
		if err != nil {
			return pipeline.StageStats{}, err
		}
		texts := []imageio.Text{
			{Key: imageio.KeyParameters, Value: Infotext(j.s, j.s.SeedOf(b), j.sha, j.vaeSHA)},
			{Key: imageio.KeyJob, Value: recJSON},
		}
		out := OutPath(j.s.Out, b)
		if err := j.part(pipeline.StageDeliver, filepath.Base(out), func() (pipeline.StageStats, error) {
			n, err := atomicfile.Write(out, 0o644, func(w io.Writer) error { return imageio.Encode(w, nrgba, texts) })
			total += n
			return pipeline.StageStats{Bytes: n}, err
		}); err != nil {
			return pipeline.StageStats{}, err
		}
	}
	return pipeline.StageStats{Bytes: total, Items: int64(len(j.images)), Unit: "images"}, nil
}

func (j *job) recordOf(b int) *Record {
	s := j.s
	return &Record{Job: j.id, Kind: "image", Model: s.Model, ModelSHA256: j.sha, VAE: s.VAE, VAESHA256: j.vaeSHA,
		Image: b, Seed: s.SeedOf(b), RNG: s.RNG, Sampler: string(s.Method), Scheduler: string(s.Schedule), Steps: s.Steps,
		CFGScale: s.CFGScale, Width: s.Width, Height: s.Height, ClipSkip: s.ClipSkip, InitImage: s.InitImage, Strength: s.Strength,
		Latents: j.latentsPath(b), StagesMS: j.times}
}

// record adds the job's measurements to the history.
func (j *job) record() {
	if j.calls == 0 {
		return
	}
	hist := j.e.History
	if hist == nil {
		hist = DefaultHistory()
	}
	perCall, extra := steadyRate(j.stepSecPerCall, j.sampleTime.Seconds(), j.calls)
	o := Observation{Time: time.Now().UTC(), Model: filepath.Base(j.s.Model), Width: j.s.Width, Height: j.s.Height,
		Threads: j.pool.Threads(), Calls: j.calls, SecPerCall: perCall, ExtraSeconds: extra,
		PredictedCall: j.plan.SecPerCall, PredictedSeconds: j.plan.Seconds, SampleSeconds: j.sampleTime.Seconds(),
		PredictedPeak: j.plan.RawTotal, PeakRSS: peakRSS()}
	if n := len(j.images); n > 0 {
		o.DecodeSeconds = j.decodeTime.Seconds() / float64(n)
	}
	hist.Record(o) // a history that cannot be written loses one observation, not the job
}

// steadyRate splits a sampling run of total seconds and calls UNet calls
// into its steady rate, the median over the steps of seconds per call
// (so the first step's page faults and caches filling count once, not in
// every call), and the rest: total minus calls at that rate (the first
// step's surplus, previews, saving the latents), never negative. Without
// step figures the rate is the mean.
func steadyRate(stepSecPerCall []float64, total float64, calls int) (perCall, extra float64) {
	if calls <= 0 {
		return 0, 0
	}
	if len(stepSecPerCall) == 0 {
		return total / float64(calls), 0
	}
	v := slices.Clone(stepSecPerCall)
	slices.Sort(v)
	perCall = v[len(v)/2]
	if len(v)%2 == 0 {
		perCall = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return perCall, max(0, total-perCall*float64(calls))
}

// Decode re-runs decode and deliver of a finished or failed image job from
// the latents it saved (glassbox decode JOB): s is the job's request (its
// VAE may be replaced), latents the saved files, one per image; the new
// job id is id and retryOf the job whose latents these are.
func (e *Engine) Decode(ctx context.Context, s *Settings, id, retryOf string, latents []string) (*Result, error) {
	j := &job{e: e, s: s, id: id, tr: pipeline.TraceFrom(ctx), times: map[string]float64{}, decodeOnly: true}
	defer func() {
		if j.model != nil {
			j.model.Close()
		}
	}()
	j.pool = compute.NewPool(s.Threads)
	defer j.pool.Close()
	if err := j.stage(ctx, pipeline.StagePlan, j.planStage); err != nil {
		return nil, err
	}
	err := j.stage(ctx, pipeline.StageLoad, func(ctx context.Context) (pipeline.StageStats, error) {
		if err := j.part(pipeline.StageLoad, "latents", func() (pipeline.StageStats, error) {
			for _, p := range latents {
				x, err := ReadLatents(p, s.LatentH(), s.LatentW())
				if err != nil {
					return pipeline.StageStats{}, err
				}
				if k := firstNonFinite(x); k >= 0 {
					return pipeline.StageStats{}, fmt.Errorf("%s: value %d is %g", p, k, x[k])
				}
				j.latents = append(j.latents, x)
			}
			return pipeline.StageStats{Bytes: int64(4 * Channels * s.LatentH() * s.LatentW() * len(latents))}, nil
		}); err != nil {
			return pipeline.StageStats{}, err
		}
		var err error
		if j.sha, err = j.hash(s.Model); err != nil {
			return pipeline.StageStats{}, err
		}
		if s.VAE != "" {
			if j.vaeSHA, err = j.hash(s.VAE); err != nil {
				return pipeline.StageStats{}, err
			}
		}
		c := j.model.Components.VAE
		var n int64
		err = j.part(pipeline.StageLoad, c.Name, func() (pipeline.StageStats, error) {
			v, err := e.Nets.vae(c)
			j.vae = v
			n, err = weightBytes(v, err)
			return pipeline.StageStats{Bytes: n, Note: c.DTypeList()}, err
		})
		return pipeline.StageStats{Bytes: n, PeakRSS: peakRSS()}, err
	})
	if err != nil {
		return nil, err
	}
	j.tr.OnStageSkipped(pipeline.StageEncode, "decoding the latents of job "+retryOf)
	j.tr.OnStageSkipped(pipeline.StageGenerate, "the latents were sampled by job "+retryOf)
	for _, st := range []struct {
		stage pipeline.Stage
		fn    func(context.Context) (pipeline.StageStats, error)
	}{{pipeline.StageDecode, j.decode}, {pipeline.StageDeliver, j.deliver}} {
		if err := j.stage(ctx, st.stage, st.fn); err != nil {
			return nil, err
		}
	}
	res := &Result{Plan: j.plan}
	for b := range latents {
		res.Images = append(res.Images, Output{Path: OutPath(s.Out, b), Seed: s.SeedOf(b), Latents: latents[b]})
	}
	return res, nil
}

func peakRSS() int64 { return plan.PeakRSS() }
