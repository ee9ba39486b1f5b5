package image

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// loadTrace records a run's load stage: its stats and its parts' notes.
type loadTrace struct {
	mu    sync.Mutex
	stats pipeline.StageStats
	parts map[string]pipeline.StageStats
}

func (lt *loadTrace) ctx() context.Context {
	lt.parts = map[string]pipeline.StageStats{}
	return pipeline.WithTrace(context.Background(), &pipeline.Trace{
		StageDone: func(s pipeline.Stage, st pipeline.StageStats) {
			if s == pipeline.StageLoad {
				lt.mu.Lock()
				lt.stats = st
				lt.mu.Unlock()
			}
		},
		PartDone: func(s pipeline.Stage, part string, _ time.Duration, st pipeline.StageStats) {
			if s == pipeline.StageLoad {
				lt.mu.Lock()
				lt.parts[part] = st
				lt.mu.Unlock()
			}
		},
	})
}

// TestResident runs three jobs on one Loaded: the first opens and binds
// the networks (6000 bytes), the others read nothing and report the
// components resident; every image and latent is the same as a fresh
// engine's with the same seed.
func TestResident(t *testing.T) {
	fresh := fakeEngine(t, &fakes{unet: &fakeUNet{scale: 0.1}, vae: &fakeVAE{}})
	req := Request{Prompt: "a lighthouse", Negative: "fog", Steps: 3, Sampler: "euler_a", Seed: 7, Width: 64, Height: 64}
	want, err := fresh.Run(context.Background(), settings(t, req), "fresh", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wantPNG, _ := os.ReadFile(want.Images[0].Path)
	wantLat, _ := os.ReadFile(want.Images[0].Latents)

	e := fakeEngine(t, &fakes{unet: &fakeUNet{scale: 0.1}, vae: &fakeVAE{}})
	var opens, binds int
	open, bindUNet := e.Open, e.Nets.UNet
	e.Open = func(p, v string) (*Model, error) { opens++; return open(p, v) }
	e.Nets.UNet = func(c checkpoint.Component) (EpsNet, error) { binds++; return bindUNet(c) }
	s := settings(t, req)
	e.Resident = NewLoaded(s.Model, "")
	defer e.Resident.Close()
	for run := range 3 {
		var lt loadTrace
		s := settings(t, req)
		res, err := e.Run(lt.ctx(), s, "job", t.TempDir())
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		wantBytes, note := int64(6000), ""
		if run > 0 {
			wantBytes, note = 0, "resident"
		}
		if lt.stats.Bytes != wantBytes || !strings.Contains(lt.stats.Note, note) {
			t.Errorf("run %d: load stage %+v, want %d bytes, note %q", run, lt.stats, wantBytes, note)
		}
		for _, c := range []string{"text encoder", "UNet", "VAE"} {
			if p := lt.parts[c]; run > 0 && (p.Bytes != 0 || !strings.Contains(p.Note, "resident")) || run == 0 && p.Bytes == 0 {
				t.Errorf("run %d: load part %s: %+v", run, c, p)
			}
		}
		png, _ := os.ReadFile(res.Images[0].Path)
		lat, _ := os.ReadFile(res.Images[0].Latents)
		if !bytes.Equal(lat, wantLat) || !bytes.Equal(stripJob(t, png), stripJob(t, wantPNG)) {
			t.Errorf("run %d: the image differs from a fresh engine's", run)
		}
	}
	if opens != 1 || binds != 1 || e.Resident.WeightBytes() != 6000 {
		t.Errorf("%d opens, %d UNet binds, %d bytes resident; want 1, 1, 6000", opens, binds, e.Resident.WeightBytes())
	}
}

// stripJob is a PNG's pixels, decoded, so the job record (times, paths)
// does not enter the comparison.
func stripJob(t *testing.T, b []byte) []byte {
	t.Helper()
	im, _, err := decodeImage(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	r := im.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c0, c1, c2, c3 := im.At(x, y).RGBA()
			out = append(out, byte(c0>>8), byte(c1>>8), byte(c2>>8), byte(c3>>8))
		}
	}
	return out
}

// TestResidentTurns: a Run on a Loaded another Run holds waits for it; a
// waiter whose context ends fails in stage queued without touching the
// networks, a job for another checkpoint fails in stage load, and a Run
// after Close fails in stage load.
func TestResidentTurns(t *testing.T) {
	f := &fakes{unet: &fakeUNet{scale: 0.1}, vae: &fakeVAE{}}
	e := fakeEngine(t, f)
	req := Request{Prompt: "x", Steps: 2, Sampler: "euler", Seed: 1, Width: 64, Height: 64, CFGScale: 1}
	s := settings(t, req)
	e.Resident = NewLoaded(s.Model, "")
	started, release := make(chan struct{}), make(chan struct{})
	f.unet.onCall = func(k int, eps []float32) error {
		if k == 1 {
			close(started)
			<-release
		}
		return nil
	}
	done := make(chan error)
	go func() {
		_, err := e.Run(context.Background(), s, "first", t.TempDir())
		done <- err
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Run(ctx, settings(t, req), "second", t.TempDir())
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Stage != pipeline.StageQueued || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled waiter: %v, want stage queued", err)
	}
	other := req
	other.Model = "/models/other.safetensors"
	if _, err := e.Run(context.Background(), settings(t, other), "other", t.TempDir()); !errors.As(err, &pe) || pe.Stage != pipeline.StageLoad {
		t.Errorf("another checkpoint's job: %v, want stage load", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.unet.calls != 2 {
		t.Errorf("%d UNet calls, want the first job's 2", f.unet.calls)
	}
	if _, err := e.Run(context.Background(), settings(t, req), "third", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	e.Resident.Close()
	if _, err := e.Run(context.Background(), settings(t, req), "after", t.TempDir()); !errors.As(err, &pe) || pe.Stage != pipeline.StageLoad {
		t.Errorf("a run after Close: %v, want stage load", err)
	}
}
