package image

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/diffusion/rng"
	"github.com/glassbox-ai/glassbox/pipeline"
	tokclip "github.com/glassbox-ai/glassbox/tokenizer/clip"
)

// Request is one image job, as `glassbox image` takes it. The zero value of
// every field but Model, Prompt, Out and Steps means sd.cpp's default (the
// Default constants; Resolve fills them).
type Request struct {
	Model    string `json:"model"`         // checkpoint path
	VAE      string `json:"vae,omitempty"` // a separate VAE file replacing the checkpoint's
	Prompt   string `json:"prompt"`        // A1111 emphasis syntax, BREAK
	Negative string `json:"negative"`      // "" = the empty prompt's embedding
	Steps    int    `json:"steps"`         // ≥ 1 (0: 20)
	// CFGScale is classifier-free guidance's scale (0: 7; 1 skips the
	// unconditional pass).
	CFGScale  float32 `json:"cfg_scale"`
	Sampler   string  `json:"sampler"`   // diffusion.Methods ("": euler_a)
	Scheduler string  `json:"scheduler"` // diffusion.Schedulers ("": the sampler's default)
	Seed      int64   `json:"seed"`      // the first image's seed; image b has Seed+b (< 0: a random one)
	Width     int     `json:"width"`     // pixels, a multiple of 8 (0: the init image's, else 512)
	Height    int     `json:"height"`
	InitImage string  `json:"init_image,omitempty"` // img2img: a PNG or JPEG of Width×Height
	Strength  float32 `json:"strength,omitempty"`   // img2img: in (0, 1] (0: 0.75)
	RNG       string  `json:"rng"`                  // "cuda" (Philox, sd.cpp's default) or "cpu"
	ClipSkip  int     `json:"clip_skip"`            // ≥ 1 (0: 1)
	Batch     int     `json:"batch_count"`          // images, seeds Seed…Seed+Batch−1 (0: 1)
	Threads   int     `json:"threads,omitempty"`    // 0: one per physical core
	// Out is the PNG to write; image b > 0 of a batch goes to Out with
	// "-<b+1>" before the extension.
	Out string `json:"out"`
	// SaveLatents, when set, also writes each final latent there (raw
	// float32 [4][H/8][W/8], named as Out for a batch) with its JSON.
	SaveLatents string `json:"save_latents,omitempty"`
	// Budget caps the job's memory (0: what the machine has available).
	Budget int64 `json:"mem_budget,omitempty"`
}

// Defaults, as sd.cpp's (README §4.4 of the golden set).
const (
	DefaultSteps    = 20
	DefaultCFG      = 7
	DefaultSize     = 512
	DefaultStrength = 0.75
	DefaultSampler  = diffusion.EulerA
	// MaxSide bounds width and height (a 4096² image's UNet attention
	// alone is hundreds of GiB).
	MaxSide = 4096
	// MaxBatch bounds --batch-count.
	MaxBatch = 1000
	// MaxSteps bounds --steps.
	MaxSteps = 10000
)

// Settings is a validated request with every default resolved.
type Settings struct {
	Request
	Method   diffusion.Method
	Schedule diffusion.Scheduler
}

// LatentH and LatentW are the latent's size.
func (s *Settings) LatentH() int { return s.Height / 8 }
func (s *Settings) LatentW() int { return s.Width / 8 }

// ErrRequest marks a request glassbox refuses before any work.
var ErrRequest = pipeline.ErrSettings

// badf is a plan-stage error about one field of the request.
func badf(field, hint, format string, args ...any) error {
	return &pipeline.Error{Stage: pipeline.StagePlan, Err: fmt.Errorf("%w: %s: %s", ErrRequest, field, fmt.Sprintf(format, args...)), Hint: hint}
}

// Resolve checks r and fills its defaults. initW and initH are the init
// image's size when there is one (0 otherwise): a request without a size
// takes it, and a request of another size is refused, not resized (a
// resize would change the image the user gave without saying so).
func Resolve(r Request, initW, initH int) (*Settings, error) {
	s := &Settings{Request: r}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if r.Model == "" {
		add(badf("model", "give -m CHECKPOINT", "no checkpoint given"))
	}
	if len(r.Prompt) > tokclip.MaxPromptBytes || len(r.Negative) > tokclip.MaxPromptBytes {
		add(badf("prompt", "", "%d and %d bytes (prompt, negative prompt): at most %d each", len(r.Prompt), len(r.Negative), tokclip.MaxPromptBytes))
	}
	if s.Steps < 1 || s.Steps > MaxSteps {
		add(badf("steps", "", "%d, want 1 to %d", r.Steps, MaxSteps))
	}
	if s.CFGScale == 0 {
		s.CFGScale = DefaultCFG
	}
	if f := float64(s.CFGScale); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 100 {
		add(badf("cfg_scale", "", "%g, want a value in [0, 100]", s.CFGScale))
	}
	if s.Sampler == "" {
		s.Sampler = string(DefaultSampler)
	}
	m, err := diffusion.ParseMethod(s.Sampler)
	if err != nil {
		add(badf("sampler", "", "%s", strings.TrimPrefix(err.Error(), "generate: ")))
	}
	s.Method = m
	if s.Scheduler == "" && err == nil {
		s.Scheduler = string(diffusion.DefaultScheduler(m))
	}
	if s.Scheduler != "" {
		sc, err := diffusion.ParseScheduler(s.Scheduler)
		if err != nil {
			add(badf("scheduler", "", "%s", strings.TrimPrefix(err.Error(), "generate: ")))
		}
		s.Schedule = sc
		if (sc == diffusion.Karras || sc == diffusion.Exponential) && s.Steps == 1 {
			add(badf("scheduler", "use 2 or more steps, or the discrete scheduler", "%s with 1 step: its σ list is 0/0 (NaN) in stable-diffusion.cpp", sc))
		}
	}
	if r.InitImage != "" {
		if s.Width == 0 && s.Height == 0 {
			s.Width, s.Height = initW, initH
		}
		if initW != s.Width || initH != s.Height {
			add(badf("init_image", fmt.Sprintf("resize %s to %dx%d, or pass -W %d -H %d", filepath.Base(r.InitImage), s.Width, s.Height, initW, initH),
				"the image is %dx%d, the request %dx%d: glassbox does not resize it", initW, initH, s.Width, s.Height))
		}
		if s.Strength == 0 {
			s.Strength = DefaultStrength
		}
		if !(s.Strength > 0 && s.Strength <= 1) {
			add(badf("strength", "", "%g, want a value in (0, 1]", r.Strength))
		}
	} else if r.Strength != 0 {
		add(badf("strength", "give --init-img, or drop --strength", "%g without an init image", r.Strength))
	}
	if s.Width == 0 {
		s.Width = DefaultSize
	}
	if s.Height == 0 {
		s.Height = DefaultSize
	}
	for _, d := range []struct {
		name string
		v    int
	}{{"width", s.Width}, {"height", s.Height}} {
		switch {
		case d.v < 8 || d.v > MaxSide:
			add(badf(d.name, "", "%d pixels, want 8 to %d", d.v, MaxSide))
		case d.v%8 != 0:
			add(badf(d.name, fmt.Sprintf("use %d or %d", d.v/64*64, d.v/64*64+64), "%d pixels is not a multiple of 8 (the latent is 1/8 of the image)", d.v))
		case d.v%64 != 0:
			add(badf(d.name, fmt.Sprintf("use %d or %d", max(d.v/64*64, 64), d.v/64*64+64), "%d pixels is not a multiple of 64 (the SD 1.x UNet halves the 1/8 latent three times)", d.v))
		}
	}
	if s.RNG == "" {
		s.RNG = "cuda"
	}
	if _, err := rng.New(s.RNG, 0); err != nil {
		add(badf("rng", "", "%q, want one of %s", r.RNG, strings.Join(rng.Names, ", ")))
	}
	if s.ClipSkip == 0 {
		s.ClipSkip = 1
	}
	if s.ClipSkip < 1 || s.ClipSkip > 12 {
		add(badf("clip_skip", "", "%d, want 1 to 12 (CLIP ViT-L/14 has 12 layers)", r.ClipSkip))
	}
	if s.Batch == 0 {
		s.Batch = 1
	}
	if s.Batch < 1 || s.Batch > MaxBatch {
		add(badf("batch_count", "", "%d, want 1 to %d", r.Batch, MaxBatch))
	}
	s.Seed = ResolveSeed(s.Seed)
	if s.Seed > math.MaxInt64-int64(s.Batch) {
		add(badf("seed", "", "%d + %d images overflows", r.Seed, s.Batch))
	}
	if s.Threads < 0 {
		add(badf("threads", "", "%d, want ≥ 0", r.Threads))
	}
	if s.Out == "" {
		add(badf("out", "give -o OUT.png", "no output file"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// OutPath is where image b of a batch goes: path itself for b = 0, else
// path with "-<b+1>" before its extension.
func OutPath(path string, b int) string {
	if b == 0 || path == "" {
		return path
	}
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), b+1, ext)
}

// SeedOf is image b's seed.
func (s *Settings) SeedOf(b int) int64 { return s.Seed + int64(b) }

// ResolveSeed returns seed, or for a negative one (sd.cpp's "random") 31
// bits from the clock, as sd.cpp's srand(time(NULL)); rand() gives at
// most. Resolve calls it; a caller that records the request before
// resolving it calls it first, so the record has the seed used.
func ResolveSeed(seed int64) int64 {
	if seed >= 0 {
		return seed
	}
	return time.Now().UnixNano() & 0x7fffffff
}
