package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/glassbox-ai/glassbox/pipeline"
)

// Video jobs, as image jobs (image.go) are made: a backend that makes
// videos implements VideoBackend besides Backend (found by type
// assertion); the native {"kind": "video"} job turns into one
// VideoRequest and runs as a job of kind "video" through the same queue
// as text and images: one generation slot, the same journal, the same
// stages. The MP4 stays with the job (the backend keeps it in the job's
// folder of the glassbox home, beside the final latent) and is served by
// GET /v1/jobs/{id}/video, Range requests included, also after a
// restart.

// VideoBackend makes videos.
type VideoBackend interface {
	// CheckVideo resolves req's models and validates its settings
	// without doing any work (its seed too, so the job's params record
	// the seed used), so a bad request is refused before a job is made.
	CheckVideo(ctx context.Context, req *VideoRequest) error
	// GenerateVideo runs req as job (its id names the folder its files
	// go in), reporting its stages and each sampling step through
	// pipeline.TraceFrom(ctx). When ctx ends it stops within one DiT
	// call and returns ctx's error.
	GenerateVideo(ctx context.Context, job string, req *VideoRequest) (*VideoResult, error)
	// VideoFile is the path of job's MP4; an error wrapping
	// ErrJobNotFound when there is none.
	VideoFile(job string) (string, error)
}

// VideoRequest is one text-to-video job (Wan 2.1). Zero values mean the
// engine's defaults (Wan's: 81 frames of 832×480, 50 steps, shift 5,
// CFG 5, unipc, 16 fps).
type VideoRequest struct {
	Model       string `json:"model"`        // the DiT
	VAE         string `json:"vae"`          // the Wan VAE
	TextEncoder string `json:"text_encoder"` // umT5 (its file's spiece_model tensor tokenizes the prompts)
	Prompt      string `json:"prompt,omitempty"`
	Negative    string `json:"negative_prompt,omitempty"` // "": Wan's default
	// PromptIDs and NegativeIDs are the prompts as umT5 token ids, used
	// as given (no EOS added), instead of the texts.
	PromptIDs   []int32 `json:"prompt_ids,omitempty"`
	NegativeIDs []int32 `json:"negative_prompt_ids,omitempty"`
	Frames      int     `json:"frames,omitempty"`       // 4n + 1
	RoundFrames bool    `json:"round_frames,omitempty"` // round another Frames to the nearest 4n + 1, with a warning
	Width       int     `json:"width,omitempty"`
	Height      int     `json:"height,omitempty"`
	Steps       int     `json:"steps,omitempty"`
	Shift       float64 `json:"shift,omitempty"`
	CFGScale    float32 `json:"cfg_scale,omitempty"`
	Sampler     string  `json:"sampler,omitempty"` // unipc or euler
	Seed        int64   `json:"seed"`              // < 0: a random one (the job's params record the one used)
	RNG         string  `json:"rng,omitempty"`     // the noise's generator: cpu (Wan's) or cuda ("": cpu)
	Heads       int     `json:"heads,omitempty"`   // the DiT's attention heads (0: Wan's 128-wide heads)
	FPS         int     `json:"fps,omitempty"`
	// Engine is the request as the backend's engine runs it, set by
	// CheckVideo and journaled with the job (glassbox decode JOB reads
	// it).
	Engine json.RawMessage `json:"engine,omitempty"`
}

// VideoResult is what a video job made.
type VideoResult struct {
	URL    string `json:"url"` // GET it for the MP4
	Frames int    `json:"frames"`
	Seed   int64  `json:"seed"`
	// Settings are the request's settings with every default resolved.
	Settings  VideoSettings `json:"settings"`
	Timesteps []int         `json:"timesteps,omitempty"`
	Warnings  []string      `json:"warnings,omitempty"`
}

// VideoSettings are a video job's resolved settings.
type VideoSettings struct {
	Model       string  `json:"model"`
	VAE         string  `json:"vae"`
	TextEncoder string  `json:"text_encoder"`
	Prompt      string  `json:"prompt"`
	Negative    string  `json:"negative_prompt"`
	Frames      int     `json:"frames"`
	Width       int     `json:"width"`
	Height      int     `json:"height"`
	Steps       int     `json:"steps"`
	Shift       float64 `json:"shift"`
	CFGScale    float32 `json:"cfg_scale"`
	Sampler     string  `json:"sampler"`
	Seed        int64   `json:"seed"`
	RNG         string  `json:"rng"`
	Heads       int     `json:"heads,omitempty"`
	FPS         int     `json:"fps"`
}

// videoJobRequest is the body of POST /v1/jobs with kind "video".
type videoJobRequest struct {
	Kind        string  `json:"kind"`
	Model       string  `json:"model"`
	VAE         string  `json:"vae"`
	TextEncoder string  `json:"text_encoder"`
	Prompt      string  `json:"prompt"`
	Negative    string  `json:"negative_prompt"`
	PromptIDs   []int32 `json:"prompt_ids"`
	NegativeIDs []int32 `json:"negative_prompt_ids"`
	Frames      int     `json:"frames"`
	RoundFrames bool    `json:"round_frames"`
	Width       int     `json:"width"`
	Height      int     `json:"height"`
	Steps       int     `json:"steps"`
	Shift       float64 `json:"shift"`
	CFGScale    float32 `json:"cfg_scale"`
	Sampler     string  `json:"sampler"`
	Seed        *int64  `json:"seed"` // absent or < 0: random
	RNG         string  `json:"rng"`
	Heads       int     `json:"heads"`
	FPS         int     `json:"fps"`
}

var videoJobFields = jsonFields(reflect.TypeFor[videoJobRequest]())

// videoAliases are other tools' names for a video job's fields (glassbox
// video's flags, Wan's generate.py, diffusers).
var videoAliases = map[string]string{
	"dit": "model", "t5": "text_encoder", "umt5": "text_encoder", "negative": "negative_prompt",
	"num_frames": "frames", "frame_num": "frames", "cfg": "cfg_scale", "guidance_scale": "cfg_scale",
	"sample_guide_scale": "cfg_scale", "sampler_name": "sampler", "sample_solver": "sampler",
	"num_inference_steps": "steps", "sample_steps": "steps", "sample_shift": "shift", "base_seed": "seed",
	"generator": "rng", "randn_source": "rng",
}

// checkVideoFields refuses the fields of a video job that it does not
// take, each with the nearest known name.
func checkVideoFields(body []byte) *Error {
	var u unknowns
	for _, k := range objectKeys(body) {
		switch {
		case slices.Contains(videoJobFields, k):
		case videoAliases[k] != "":
			u.add(k, k, didYouMean(videoAliases[k]))
		default:
			u.add(k, k, didYouMean(nearest(k, videoJobFields)))
		}
	}
	e := u.err()
	if e != nil {
		e.Hint = "a video job takes " + strings.Join(videoJobFields, ", ") + "; see docs/API.md"
	}
	return e
}

// videos is the backend's VideoBackend, or nil.
func (s *Server) videos() VideoBackend {
	vb, _ := s.cfg.Backend.(VideoBackend)
	return vb
}

var errNoVideos = &Error{Status: http.StatusNotImplemented, Stage: "load", Code: "no_video_backend",
	Message: "this server's backend makes no videos", Hint: "glassbox serve makes Wan 2.1 videos (POST /v1/jobs with kind video); see docs/API.md"}

// createVideoJob is POST /v1/jobs with kind "video".
func (s *Server) createVideoJob(w http.ResponseWriter, r *http.Request, body []byte) {
	var req videoJobRequest
	e := decodeJSON(body, &req)
	if e == nil {
		e = checkVideoFields(body)
	}
	if e != nil {
		writeNativeError(w, e)
		return
	}
	vr := &VideoRequest{Model: req.Model, VAE: req.VAE, TextEncoder: req.TextEncoder, Prompt: req.Prompt,
		Negative: req.Negative, PromptIDs: req.PromptIDs, NegativeIDs: req.NegativeIDs, Frames: req.Frames,
		RoundFrames: req.RoundFrames, Width: req.Width, Height: req.Height, Steps: req.Steps, Shift: req.Shift, CFGScale: req.CFGScale,
		Sampler: req.Sampler, Seed: -1, RNG: req.RNG, Heads: req.Heads, FPS: req.FPS}
	if req.Seed != nil {
		vr.Seed = *req.Seed
	}
	// A native job belongs to the server: it outlives this request.
	g, e := s.startVideo(r.Context(), s.base, vr)
	if e != nil {
		writeNativeError(w, e)
		return
	}
	writeJobCreated(w, g)
}

// startVideo checks req (in the request's context rctx) and starts it as
// a job of kind "video" whose context is ctx, through the queue.
func (s *Server) startVideo(rctx, ctx context.Context, req *VideoRequest) (*generation, *Error) {
	vb := s.videos()
	if vb == nil {
		return nil, errNoVideos
	}
	s.defaultVideoModels(rctx, req)
	switch {
	case req.Prompt == "" && len(req.PromptIDs) == 0:
		return nil, badRequest("missing_prompt", "prompt", "a prompt (or prompt_ids) is required")
	case req.Model == "":
		return nil, badRequest("missing_model", "model", "model is required: the Wan 2.1 DiT (GET /v1/models lists it as family wan)")
	case req.VAE == "":
		return nil, badRequest("missing_model", "vae", "vae is required: the Wan 2.1 VAE (GET /v1/models lists it as family wan-vae)")
	case req.TextEncoder == "":
		return nil, badRequest("missing_model", "text_encoder", "text_encoder is required: the umT5 encoder (GET /v1/models lists it as family text-encoder)")
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"frames", req.Frames}, {"width", req.Width}, {"height", req.Height}, {"steps", req.Steps}, {"heads", req.Heads}, {"fps", req.FPS}} {
		if n.v < 0 {
			return nil, badRequest("invalid_value", n.name, "%s is %d: a positive number (0: the default)", n.name, n.v)
		}
	}
	if err := vb.CheckVideo(rctx, req); err != nil {
		return nil, toError(err)
	}
	params, _ := json.Marshal(req) // plain data: cannot fail
	ids := make(chan string, 1)
	g, e := s.startWork(ctx, JobSpec{Kind: "video", Model: req.Model, Params: params}, nil, true,
		func(ctx context.Context, g *generation) (any, error) {
			return vb.GenerateVideo(ctx, <-ids, req)
		})
	if e != nil {
		return nil, e
	}
	ids <- g.job.ID
	return g, nil
}

// Video model families (ModelInfo.Family): the DiT, the VAE, a text
// encoder alone (Wan's umT5, or another).
const (
	FamilyWan         = "wan"
	FamilyWanVAE      = "wan-vae"
	FamilyTextEncoder = "text-encoder"
)

// IsVideoFamily reports whether a model family (ModelInfo.Family) makes
// videos (a Wan DiT: its VAE and text encoder are families wan-vae and
// text-encoder).
func IsVideoFamily(f string) bool { return f == FamilyWan }

// defaultVideoModels fills req's empty model, vae and text_encoder with
// the first model the backend lists of each one's family.
func (s *Server) defaultVideoModels(ctx context.Context, req *VideoRequest) {
	if req.Model != "" && req.VAE != "" && req.TextEncoder != "" {
		return
	}
	models, err := s.cfg.Backend.Models(ctx)
	if err != nil {
		return
	}
	for _, f := range []struct {
		family string
		name   *string
	}{{FamilyWan, &req.Model}, {FamilyWanVAE, &req.VAE}, {FamilyTextEncoder, &req.TextEncoder}} {
		for _, m := range models {
			if *f.name == "" && m.Family == f.family {
				*f.name = m.Name
			}
		}
	}
}

// jobVideo is GET /v1/jobs/{id}/video: the MP4, with Range requests
// (a video element seeks with them).
func (s *Server) jobVideo(w http.ResponseWriter, r *http.Request) {
	vb := s.videos()
	if vb == nil {
		writeNativeError(w, errNoVideos)
		return
	}
	id := r.PathValue("id")
	path, err := vb.VideoFile(id)
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	f, err := os.Open(path)
	if err != nil {
		writeNativeError(w, toError(fmt.Errorf("job %s has no video: %w", id, ErrJobNotFound)))
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		writeNativeError(w, toError(pipeline.Wrap(pipeline.StageDeliver, fmt.Errorf("job %s's video: %w", id, err), "")))
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable") // a job's video never changes
	http.ServeContent(w, r, "", st.ModTime(), f)
}
