package video

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/diffusion/wan"
	"github.com/glassbox-ai/glassbox/internal/atomicfile"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/vae"
)

// generate draws the noise, samples and saves the final latent.
func (j *job) generate(ctx context.Context) (pipeline.StageStats, error) {
	r, l := j.r, j.lat
	sch, err := diffusion.ShiftedFlowSchedule(r.Steps, r.Shift)
	if err != nil {
		return pipeline.StageStats{}, err
	}
	j.sched = sch
	err = j.part(pipeline.StageGenerate, "text embedding", func() (pipeline.StageStats, error) {
		var n int
		for i, c := range j.contexts {
			if c == nil {
				continue
			}
			var err error
			if j.texts[i], err = j.dit.PrepareText(ctx, j.pool, c, j.rows[i]); err != nil {
				return pipeline.StageStats{}, fmt.Errorf("%s: %w", []string{"prompt", "negative prompt"}[i], err)
			}
			j.contexts[i] = nil
			n += j.rows[i]
		}
		return pipeline.StageStats{Items: int64(n), Unit: "rows", Note: "the prompts' embeddings and cross-attention keys and values"}, nil
	})
	if err != nil {
		return pipeline.StageStats{}, err
	}
	method, err := r.method()
	if err != nil {
		return pipeline.StageStats{}, err
	}
	// Noise: torch.randn(16, T, H, W, generator=torch.Generator('cpu').manual_seed(seed)),
	// as wan/text2video.py draws it (rng cpu), or call 0 of the Philox
	// generator (rng cuda: torch's CUDA generator, as sd.cpp draws it).
	src, err := rng.New(r.RNG, uint64(r.Seed))
	if err != nil {
		return pipeline.StageStats{}, pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	j.x = make([]float32, l.Len())
	src.Randn(j.x)

	calls := 0
	perStep := 1
	if diffusion.NeedsUncond(r.CFGScale) {
		perStep = 2
	}
	g := &diffusion.FlowGuidance{CFGScale: r.CFGScale, Net: func(ctx context.Context, x []float32, t int, uncond bool, v []float32) error {
		text := j.texts[0]
		if uncond {
			text = j.texts[1]
		}
		calls++
		return j.dit.Forward(ctx, j.pool, v, x, l.Frames, l.Height, l.Width, float64(t), text)
	}}
	steps := sch.Steps()
	t0 := time.Now()
	stepStart := t0
	fs := &diffusion.FlowSampler{Method: method, OnStep: func(st diffusion.FlowStep) {
		now := time.Now()
		done := st.Index + 1
		el := now.Sub(t0).Seconds()
		perS := el / float64(done)
		j.tr.OnPartDone(pipeline.StageGenerate, fmt.Sprintf("step %d/%d", done, st.Steps), now.Sub(stepStart),
			pipeline.StageStats{Items: int64(perStep), Unit: "DiT calls",
				Note: fmt.Sprintf("t %d, σ %.4g, %.3g s/step, ETA %s", st.Timestep, st.Sigma, perS, fmtSeconds(perS*float64(steps-done)))})
		j.tr.OnProgress(pipeline.StageGenerate, int64(done), int64(steps))
		stepStart = now
	}}
	if err := fs.Run(ctx, j.x, sch, g.Velocity); err != nil {
		return pipeline.StageStats{}, err
	}
	sample := time.Since(t0)
	// The DiT is not needed again: its mapping goes before the decode.
	j.drop(j.ditf)
	j.dit, j.ditf, j.texts = nil, nil, [2]*wan.Text{}
	if err := j.part(pipeline.StageGenerate, "save latents", j.saveLatents); err != nil {
		return pipeline.StageStats{}, err
	}
	return pipeline.StageStats{Items: int64(steps), Unit: "steps", Placement: placement(j.pool), PeakRSS: plan.PeakRSS(),
		Note: fmt.Sprintf("%s, %d DiT calls of %d tokens, %.3g s/step", method, calls, l.Tokens(), sample.Seconds()/float64(steps))}, nil
}

// latentsDir is where the final latent is kept: the job's folder, else
// beside the output.
func (j *job) latentsDir() string {
	switch {
	case j.dir != "":
		return j.dir
	case j.r.Out != "":
		return filepath.Dir(j.r.Out)
	}
	return j.r.FramesDir
}

// saveLatents writes the final latent before anything is decoded.
func (j *job) saveLatents() (pipeline.StageStats, error) {
	dir := j.latentsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return pipeline.StageStats{}, fmt.Errorf("save latents: %w", err)
	}
	path := LatentsPath(dir)
	if j.dir == "" && j.r.Out != "" {
		path = j.r.Out + ".latents.f32"
	}
	n, err := WriteLatents(path, j.x, j.lat, j.r)
	if err != nil {
		return pipeline.StageStats{}, fmt.Errorf("save latents: %w", err)
	}
	j.latents = path
	return pipeline.StageStats{Bytes: n, Note: path}, nil
}

// LatentInfo describes a saved latent (the JSON beside it).
type LatentInfo struct {
	File    string  `json:"file"`
	DType   string  `json:"dtype"`
	Shape   [4]int  `json:"shape"` // [16, T, H/8, W/8]
	Layout  string  `json:"layout"`
	SHA256  string  `json:"sha256"`
	Min     float32 `json:"min"`
	Max     float32 `json:"max"`
	Frames  int     `json:"video_frames"`
	Width   int     `json:"width"`
	Height  int     `json:"height"`
	Request Request `json:"request"`
}

// WriteLatents writes the latent x as raw little-endian float32 at path
// and its description beside it (path + ".json"), each atomically.
func WriteLatents(path string, x []float32, l wan.Latent, r *Request) (int64, error) {
	n, err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return vae.WriteF32(w, x) })
	if err != nil {
		return 0, err
	}
	info := LatentInfo{File: filepath.Base(path), DType: "float32", Shape: [4]int{wan.LatentChannels, l.Frames, l.Height, l.Width},
		Layout: "C,T,H,W row-major little-endian, normalised (the DiT's space)", Frames: r.Frames, Width: r.Width, Height: r.Height, Request: *r}
	info.Min, info.Max = x[0], x[0]
	for _, v := range x {
		info.Min, info.Max = min(info.Min, v), max(info.Max, v)
	}
	if info.SHA256, _, err = atomicfile.SHA256(path); err != nil {
		return 0, err
	}
	b, err := json.MarshalIndent(info, "", " ")
	if err != nil {
		return 0, err
	}
	m, err := atomicfile.Write(vae.SidecarPath(path), 0o644, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err })
	return n + m, err
}
