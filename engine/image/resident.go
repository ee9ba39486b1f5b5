package image

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
)

// Loaded is a checkpoint with its three networks bound once, for the Runs
// of an Engine whose Resident it is: glassbox serve keeps one per image
// model in its residency, so the jobs after the first read no weights.
// The first Run on an empty Loaded opens the checkpoint and binds the
// networks in its load stage, as a Run without one does, and keeps them;
// the later ones report the components as resident with 0 bytes read.
//
// The networks keep state between calls (the VAE's measured peak, the
// UNet's and VAE's working buffers), so Runs on one Loaded take turns:
// each holds it from its plan to its delivery, the next waits for it (or
// for its context to end).
type Loaded struct {
	path, vaePath string
	turn          chan struct{} // holds one token while a Run (or Close) uses the networks

	// Set by the first Run's load stage, read by the Runs that hold the
	// turn.
	model       *Model
	sha, vaeSHA string
	text        TextEncoder
	unet        EpsNet
	vae         VAE
	loadedAt    time.Time
	closed      bool

	weights atomic.Int64 // the bound networks' weight bytes (0 before the first load)
}

// NewLoaded returns an empty Loaded for the checkpoint at path (and the
// separate VAE file vae, "" for the checkpoint's own); nothing is read
// until a Run uses it.
func NewLoaded(path, vae string) *Loaded {
	return &Loaded{path: path, vaePath: vae, turn: make(chan struct{}, 1)}
}

// WeightBytes is what the bound networks hold (their WeightBytes summed);
// 0 while nothing is loaded.
func (l *Loaded) WeightBytes() int64 { return l.weights.Load() }

// IsLoaded reports whether the networks are bound.
func (l *Loaded) IsLoaded() bool { return l.weights.Load() > 0 }

// Close waits for the Run using l, if any, drops the networks and unmaps
// the files. A Run after Close fails in stage load.
func (l *Loaded) Close() error {
	l.turn <- struct{}{}
	defer func() { <-l.turn }()
	l.closed = true
	return l.reset()
}

// reset drops whatever is loaded (the turn held).
func (l *Loaded) reset() error {
	var err error
	if l.model != nil {
		err = l.model.Close()
	}
	l.model, l.text, l.unet, l.vae, l.sha, l.vaeSHA = nil, nil, nil, nil, "", ""
	l.weights.Store(0)
	return err
}

// take waits for l's turn for the job s.
func (l *Loaded) take(ctx context.Context, s *Settings) error {
	if s.Model != l.path || s.VAE != l.vaePath {
		return pipeline.Errorf(pipeline.StageLoad, "", "the resident model is %s (VAE %q), the job's %s (VAE %q)", l.path, l.vaePath, s.Model, s.VAE)
	}
	t0 := time.Now()
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return pipeline.Errorf(pipeline.StageQueued, "", "waited %s for another job on %s to finish: %w",
			time.Since(t0).Round(time.Millisecond), l.path, ctx.Err())
	}
	if l.closed {
		<-l.turn
		return pipeline.Errorf(pipeline.StageLoad, "", "the resident model %s was unloaded", l.path)
	}
	return nil
}

// give ends the turn.
func (l *Loaded) give() { <-l.turn }

// loadResident is the load stage of a job on a Loaded that holds the
// networks: nothing read, each component reported resident.
func (j *job) loadResident() (pipeline.StageStats, error) {
	l := j.resident
	c := j.model.Components
	j.sha, j.vaeSHA = l.sha, l.vaeSHA
	j.text, j.unet, j.vae = l.text, l.unet, l.vae
	if err := j.part(pipeline.StageLoad, "SHA-256", func() (pipeline.StageStats, error) {
		return pipeline.StageStats{Note: j.sha[:min(10, len(j.sha))] + " (kept)"}, nil
	}); err != nil {
		return pipeline.StageStats{}, err
	}
	for _, comp := range []struct {
		name, dtypes string
		bytes        int64
	}{
		{c.TextEncoder.Name, c.TextEncoder.DTypeList(), l.text.WeightBytes()},
		{c.UNet.Name, c.UNet.DTypeList(), l.unet.WeightBytes()},
		{c.VAE.Name, c.VAE.DTypeList(), l.vae.WeightBytes()},
	} {
		err := j.part(pipeline.StageLoad, comp.name, func() (pipeline.StageStats, error) {
			return pipeline.StageStats{Note: fmt.Sprintf("resident (%s of %s), 0 bytes read", plan.FormatBytes(comp.bytes), comp.dtypes)}, nil
		})
		if err != nil {
			return pipeline.StageStats{}, err
		}
	}
	return pipeline.StageStats{Note: fmt.Sprintf("model resident since %s (%s of weights), 0 bytes read",
		l.loadedAt.Format(time.TimeOnly), plan.FormatBytes(l.WeightBytes()))}, nil
}

// keepLoaded hands the networks the job just bound to its Loaded.
func (j *job) keepLoaded(total int64) {
	l := j.resident
	l.model = j.model
	l.sha, l.vaeSHA = j.sha, j.vaeSHA
	l.text, l.unet, l.vae = j.text, j.unet, j.vae
	l.loadedAt = time.Now()
	l.weights.Store(max(total, 1))
}
