package image

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	textclip "github.com/glassbox-ai/glassbox/textenc/clip"
)

// Fake networks: small deterministic functions with the real ones'
// shapes, so the job's plumbing is tested without a checkpoint.

type fakeText struct{}

func (fakeText) Encode(ctx context.Context, p *compute.Pool, ids []int32, weights []float32, o textclip.Options) ([]float32, error) {
	out := make([]float32, len(ids)*768)
	for i, id := range ids {
		for k := range 768 {
			out[i*768+k] = float32(math.Sin(float64(id)*0.001 + float64(k)*0.01))
		}
	}
	return out, nil
}
func (fakeText) WeightBytes() int64 { return 1000 }

// fakeUNet predicts ε = scale·x + the context's mean; onCall, when set,
// runs before call k (1-based) and may fail it.
type fakeUNet struct {
	mu     sync.Mutex
	scale  float32
	calls  int
	onCall func(k int, eps []float32) error
}

func (u *fakeUNet) Eps(ctx context.Context, p *compute.Pool, x []float32, h, w int, t float32, cond []float32, nctx int, eps []float32) error {
	u.mu.Lock()
	u.calls++
	k := u.calls
	u.mu.Unlock()
	if len(x) != Channels*h*w || len(cond) != nctx*768 || len(eps) != len(x) {
		return errors.New("fake unet: bad shapes")
	}
	var m float32
	for _, v := range cond {
		m += v
	}
	m /= float32(len(cond))
	for i, v := range x {
		eps[i] = u.scale*v + m
	}
	if u.onCall != nil {
		return u.onCall(k, eps)
	}
	return nil
}
func (u *fakeUNet) WeightBytes() int64 { return 2000 }

// fakeVAE decodes by nearest upsampling of channels 0..2 through tanh; it
// fails its first fail decodes.
type fakeVAE struct {
	mu   sync.Mutex
	fail int
}

func (v *fakeVAE) Decode(ctx context.Context, p *compute.Pool, z []float32, h, w, tile, overlap int) ([]float32, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.fail > 0 {
		v.fail--
		return nil, errors.New("fake vae: out of memory")
	}
	H, W := 8*h, 8*w
	out := make([]float32, 3*H*W)
	for c := range 3 {
		for y := range H {
			for x := range W {
				out[(c*H+y)*W+x] = float32(math.Tanh(float64(z[(c*h+y/8)*w+x/8]) * 0.1))
			}
		}
	}
	return out, nil
}

func (v *fakeVAE) Encode(ctx context.Context, p *compute.Pool, rgb []float32, H, W int) (mean, logvar []float32, err error) {
	h, w := H/8, W/8
	mean, logvar = make([]float32, Channels*h*w), make([]float32, Channels*h*w)
	for c := range Channels {
		for i := range h * w {
			mean[c*h*w+i] = rgb[(c%3)*H*W+(i/w)*8*W+(i%w)*8]
			logvar[c*h*w+i] = -2
		}
	}
	return mean, logvar, nil
}
func (v *fakeVAE) WeightBytes() int64 { return 3000 }

type fakes struct {
	unet *fakeUNet
	vae  *fakeVAE
}

// fakeEngine is an Engine over the fakes, with a history in a temporary
// folder and a 16 GiB machine.
func fakeEngine(t *testing.T, f *fakes) *Engine {
	comp := func(name string, bytes int64) checkpoint.Component {
		return checkpoint.Component{Name: name, Path: "fake.safetensors", Source: &checkpoint.Map{Label: name}, Stats: checkpoint.Stats{Bytes: bytes}}
	}
	return &Engine{
		Nets: Nets{
			Text: func(checkpoint.Component) (TextEncoder, error) { return fakeText{}, nil },
			UNet: func(checkpoint.Component) (EpsNet, error) { return f.unet, nil },
			VAE:  func(checkpoint.Component) (VAE, error) { return f.vae, nil },
		},
		Open: func(path, vae string) (*Model, error) {
			return &Model{Path: path, Components: &checkpoint.Components{
				TextEncoder: comp("text encoder", 1000), UNet: comp("UNet", 2000), VAE: comp("VAE", 3000)}}, nil
		},
		Hash: func(string) (string, error) {
			return "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", nil
		},
		Device:       &plan.Device{Name: "test", RAMAvailable: 16 << 30, PeakF32: 1e11},
		History:      &History{Path: filepath.Join(t.TempDir(), "image-history.jsonl")},
		PreviewEvery: -1,
	}
}

// runJob runs s on e as a pipeline job and returns the job and its result.
func runJob(t *testing.T, e *Engine, s *Settings, dir string) (*pipeline.Job, *Result, error) {
	t.Helper()
	m := pipeline.NewManager(pipeline.Options{})
	var res *Result
	j := m.Submit(context.Background(), pipeline.Params{Kind: "image", Model: s.Model}, func(ctx context.Context) (any, error) {
		r, err := e.Run(ctx, s, "job1", dir)
		res = r
		return r, err
	})
	_, err := j.Wait(context.Background())
	return j, res, err
}
