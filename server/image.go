package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// Image jobs. A backend that makes images implements ImageBackend besides
// Backend (found by type assertion); every image endpoint (the native
// {"kind": "image"} job, OpenAI's /v1/images/*, AUTOMATIC1111's /sdapi/v1/*)
// turns its request into one ImageRequest and runs it as a job of kind
// "image" through the same queue as text: one generation slot, the same
// journal, the same stages. The PNGs stay with the job (the backend keeps
// them in the job's folder of the glassbox home) and are served by
// GET /v1/jobs/{id}/images/{n}, also after a restart.

// ImageBackend makes images.
type ImageBackend interface {
	// CheckImage resolves req's model and validates its settings without
	// doing any work, so a bad request is refused before a job is made.
	CheckImage(ctx context.Context, req *ImageRequest) error
	// GenerateImage runs req as job (its id names the folder its files
	// go in), reporting its stages, each sampling step and a preview
	// through pipeline.TraceFrom(ctx). When ctx ends it stops within one
	// network call and returns ctx's error.
	GenerateImage(ctx context.Context, job string, req *ImageRequest) (*ImageResult, error)
	// ImageFile is the path of image n (0-based) of job; an error wrapping
	// ErrJobNotFound when there is none.
	ImageFile(job string, n int) (string, error)
}

// ImageRequest is one image job, whichever API it came from. Zero values
// mean the engine's defaults (stable-diffusion.cpp's: 20 steps, CFG 7,
// euler_a, 512×512).
type ImageRequest struct {
	Model     string  `json:"model"`
	Prompt    string  `json:"prompt"`
	Negative  string  `json:"negative_prompt,omitempty"`
	Width     int     `json:"width,omitempty"`
	Height    int     `json:"height,omitempty"`
	Steps     int     `json:"steps,omitempty"`
	CFGScale  float32 `json:"cfg_scale,omitempty"`
	Sampler   string  `json:"sampler,omitempty"`
	Scheduler string  `json:"scheduler,omitempty"`
	Seed      int64   `json:"seed"` // < 0: a random one (the job's params record the one used)
	N         int     `json:"n,omitempty"`
	ClipSkip  int     `json:"clip_skip,omitempty"`
	RNG       string  `json:"rng,omitempty"`
	// InitImage is img2img's picture (PNG or JPEG bytes; the journal
	// records its size, not its bytes); Strength how much of it is
	// noised away, in (0, 1].
	InitImage []byte  `json:"-"`
	InitBytes int     `json:"init_image_bytes,omitempty"`
	Strength  float32 `json:"strength,omitempty"`
	// Engine is the request as the backend's engine runs it, set by
	// CheckImage and journaled with the job, so that tools that read the
	// journal (glassbox decode JOB) can redo a stage of it.
	Engine json.RawMessage `json:"engine,omitempty"`
	// ComfyUI is the graph a ComfyUI prompt came with (comfyui.go), kept
	// for its /history and /queue.
	ComfyUI json.RawMessage `json:"comfyui,omitempty"`
}

// ImageResult is what an image job made.
type ImageResult struct {
	Images []ImageOutput `json:"images"`
	// Settings are the request's settings with every default resolved.
	Settings ImageSettings `json:"settings"`
}

// ImageOutput is one image of a job.
type ImageOutput struct {
	Index int    `json:"index"`
	Seed  int64  `json:"seed"`
	URL   string `json:"url"` // GET it for the PNG
	// Infotext is AUTOMATIC1111's "parameters" text, also in the PNG.
	Infotext string `json:"infotext"`
}

// ImageSettings are an image job's resolved settings.
type ImageSettings struct {
	Model     string  `json:"model"`
	ModelHash string  `json:"model_hash,omitempty"` // SHA-256's first 10 hex digits, as A1111's
	Prompt    string  `json:"prompt"`
	Negative  string  `json:"negative_prompt"`
	Width     int     `json:"width"`
	Height    int     `json:"height"`
	Steps     int     `json:"steps"`
	CFGScale  float32 `json:"cfg_scale"`
	Sampler   string  `json:"sampler"`
	Scheduler string  `json:"scheduler"`
	Seed      int64   `json:"seed"`
	N         int     `json:"n"`
	ClipSkip  int     `json:"clip_skip"`
	RNG       string  `json:"rng"`
	Strength  float32 `json:"strength,omitempty"`
}

// imageJobRequest is the body of POST /v1/jobs with kind "image".
type imageJobRequest struct {
	Kind      string  `json:"kind"`
	Model     string  `json:"model"`
	Prompt    string  `json:"prompt"`
	Negative  string  `json:"negative_prompt"`
	Width     int     `json:"width"`
	Height    int     `json:"height"`
	Steps     int     `json:"steps"`
	CFGScale  float32 `json:"cfg_scale"`
	Sampler   string  `json:"sampler"`
	Scheduler string  `json:"scheduler"`
	Seed      *int64  `json:"seed"` // absent or < 0: random
	N         int     `json:"n"`
	ClipSkip  int     `json:"clip_skip"`
	RNG       string  `json:"rng"`
	InitImage string  `json:"init_image"` // base64 PNG or JPEG (a data: URL too)
	Strength  float32 `json:"strength"`
}

var imageJobFields = jsonFields(reflect.TypeFor[imageJobRequest]())

// imageAliases are other APIs' names for an image job's fields.
var imageAliases = map[string]string{
	"negative": "negative_prompt", "batch_size": "n", "batch_count": "n", "sampler_name": "sampler",
	"sampling_method": "sampler", "cfg": "cfg_scale", "guidance_scale": "cfg_scale", "denoising_strength": "strength",
	"num_inference_steps": "steps", "image": "init_image", "init_images": "init_image",
}

// checkImageFields refuses the fields of an image job that it does not
// take, each with the nearest known name.
func checkImageFields(body []byte) *Error {
	var u unknowns
	for _, k := range objectKeys(body) {
		switch {
		case slices.Contains(imageJobFields, k):
		case imageAliases[k] != "":
			u.add(k, k, didYouMean(imageAliases[k]))
		default:
			u.add(k, k, didYouMean(nearest(k, imageJobFields)))
		}
	}
	e := u.err()
	if e != nil {
		e.Hint = "an image job takes " + strings.Join(imageJobFields, ", ") + "; see docs/API.md"
	}
	return e
}

// maxImageN bounds the images of one request (OpenAI's n is 1 to 10).
const maxImageN = 10

// images is the backend's ImageBackend, or nil.
func (s *Server) images() ImageBackend {
	ib, _ := s.cfg.Backend.(ImageBackend)
	return ib
}

var errNoImages = &Error{Status: http.StatusNotImplemented, Stage: "load", Code: "no_image_backend",
	Message: "this server's backend makes no images", Hint: "serve an SD 1.x checkpoint: glassbox serve --model FILE.safetensors"}

// createImageJob is POST /v1/jobs with kind "image".
func (s *Server) createImageJob(w http.ResponseWriter, r *http.Request, body []byte) {
	var req imageJobRequest
	e := decodeJSON(body, &req)
	if e == nil {
		e = checkImageFields(body)
	}
	if e != nil {
		writeNativeError(w, e)
		return
	}
	ir := &ImageRequest{Model: req.Model, Prompt: req.Prompt, Negative: req.Negative, Width: req.Width, Height: req.Height,
		Steps: req.Steps, CFGScale: req.CFGScale, Sampler: req.Sampler, Scheduler: req.Scheduler, Seed: -1, N: req.N,
		ClipSkip: req.ClipSkip, RNG: req.RNG, Strength: req.Strength}
	if req.Seed != nil {
		ir.Seed = *req.Seed
	}
	if req.InitImage != "" {
		if ir.InitImage, e = decodeImageData(req.InitImage, "init_image"); e != nil {
			writeNativeError(w, e)
			return
		}
	}
	// A native job belongs to the server: it outlives this request.
	g, e := s.startImage(r.Context(), s.base, ir)
	if e != nil {
		writeNativeError(w, e)
		return
	}
	writeJobCreated(w, g)
}

// decodeImageData reads a base64 picture, a data: URL's too.
func decodeImageData(s, field string) ([]byte, *Error) {
	if i := indexBase64(s); i >= 0 {
		s = s[i:]
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(s); err != nil {
			return nil, badRequest("invalid_value", field, "%s is not base64 (of a PNG or JPEG): %v", field, err)
		}
	}
	return b, nil
}

// indexBase64 is where a data: URL's base64 begins, or -1.
func indexBase64(s string) int {
	const marker = ";base64,"
	if len(s) < 5 || s[:5] != "data:" {
		return -1
	}
	for i := 5; i+len(marker) <= len(s) && i < 200; i++ {
		if s[i:i+len(marker)] == marker {
			return i + len(marker)
		}
	}
	return -1
}

// startImage checks req (in the request's context rctx) and starts it as
// a job of kind "image" whose context is ctx, through the queue.
func (s *Server) startImage(rctx, ctx context.Context, req *ImageRequest) (*generation, *Error) {
	ib := s.images()
	if ib == nil {
		return nil, errNoImages
	}
	if req.N == 0 {
		req.N = 1
	}
	if req.N < 1 || req.N > maxImageN {
		return nil, badRequest("invalid_value", "n", "n is %d: 1 to %d images a request", req.N, maxImageN)
	}
	if req.Prompt == "" {
		return nil, badRequest("missing_prompt", "prompt", "a prompt is required")
	}
	if req.Model == "" {
		req.Model = s.defaultImageModel(rctx)
		if req.Model == "" {
			return nil, badRequest("missing_model", "model", "model is required (GET /v1/models lists the models, family sd1 makes images)")
		}
	}
	req.InitBytes = len(req.InitImage)
	if err := ib.CheckImage(rctx, req); err != nil {
		return nil, toError(err)
	}
	params, _ := json.Marshal(req) // plain data: cannot fail
	ids := make(chan string, 1)
	g, e := s.startWork(ctx, JobSpec{Kind: "image", Model: req.Model, Params: params}, nil, true,
		func(ctx context.Context, g *generation) (any, error) {
			res, err := ib.GenerateImage(ctx, <-ids, req)
			g.img = res
			return res, err
		})
	if e != nil {
		return nil, e
	}
	ids <- g.job.ID
	return g, nil
}

// defaultImageModel is the first image model the backend lists, or "".
func (s *Server) defaultImageModel(ctx context.Context) string {
	models, err := s.cfg.Backend.Models(ctx)
	if err != nil {
		return ""
	}
	for _, m := range models {
		if IsImageFamily(m.Family) {
			return m.Name
		}
	}
	return ""
}

// IsImageFamily reports whether a model family (ModelInfo.Family) makes
// images.
func IsImageFamily(f string) bool { return f == "sd1" }

// jobImage is GET /v1/jobs/{id}/images/{n}: the PNG.
func (s *Server) jobImage(w http.ResponseWriter, r *http.Request) {
	ib := s.images()
	if ib == nil {
		writeNativeError(w, errNoImages)
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n >= 1000 {
		writeNativeError(w, badRequest("invalid_value", "n", "image %q: a whole number from 0", r.PathValue("n")))
		return
	}
	path, err := ib.ImageFile(r.PathValue("id"), n)
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	f, err := os.Open(path)
	if err != nil {
		writeNativeError(w, toError(fmt.Errorf("job %s has no image %d: %w", r.PathValue("id"), n, ErrJobNotFound)))
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable") // a job's image never changes
	if st, err := f.Stat(); err == nil {
		w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	}
	io.Copy(w, f)
}

// readImages reads a finished job's PNGs.
func (s *Server) readImages(g *generation) ([][]byte, *Error) {
	ib := s.images()
	var out [][]byte
	for _, im := range g.img.Images {
		path, err := ib.ImageFile(g.job.ID, im.Index)
		if err != nil {
			return nil, toError(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, toError(fmt.Errorf("deliver: image %d of job %s: %w", im.Index, g.job.ID, err))
		}
		out = append(out, b)
	}
	return out, nil
}

// previewGap is the least time between two previews one event stream
// sends: a preview that comes sooner is left out of that stream (the
// journal and other streams keep it), except the last step's (a video's
// last frame's), so a slow
// client never holds the job and a page gets a steady picture.
var previewGap = 250 * time.Millisecond

// previewLimiter drops a stream's previews that come too soon.
type previewLimiter struct{ last time.Time }

// skip reports whether ev is a preview to leave out of this stream.
func (p *previewLimiter) skip(ev *api.Event, now time.Time) bool {
	if ev.Type != api.TypePreview || ev.Preview == nil {
		return false
	}
	last := ev.Preview.Step >= ev.Preview.Steps
	if ev.Preview.Frames > 0 { // a video's decoded frames: the last frame's
		last = ev.Preview.Frame >= ev.Preview.Frames
	}
	if !last && !p.last.IsZero() && now.Sub(p.last) < previewGap {
		return true
	}
	p.last = now
	return false
}

// waitImage waits for an image job's end and returns its result.
func waitImage(ctx context.Context, g *generation) (*ImageResult, *Error) {
	select {
	case <-g.done:
	case <-ctx.Done():
		<-g.done // the job's context is ctx's: it ends within a network call
	}
	if g.err != nil {
		return nil, toError(g.err)
	}
	if g.img == nil || len(g.img.Images) == 0 {
		return nil, toError(errors.New("deliver: the image job made no images"))
	}
	return g.img, nil
}
