package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// AUTOMATIC1111's web UI API (stable-diffusion-webui, modules/api/api.py
// and models.py), as Open WebUI and SillyTavern call it: /sdapi/v1/txt2img
// and /img2img answer {"images": [base64 PNG], "parameters": the request
// with its defaults, "info": a JSON string}; /progress, /interrupt,
// /options (GET; POST's sd_model_checkpoint switches the model),
// /sd-models, /samplers and /schedulers. Like A1111 the server has one
// current checkpoint (the first image model until options or a request's
// override_settings change it), and /progress and /interrupt concern the
// newest job this API started. Requests are as lenient as A1111's about
// fields glassbox does not use; the ones that would change the picture in
// a way glassbox cannot (enable_hr, restore_faces, tiling, an inpainting
// mask, subseed_strength) are refused with a 400 naming them.

// a1111Samplers are A1111's sampler names of glassbox's samplers, with the
// k-diffusion aliases A1111 lists.
var a1111Samplers = []struct {
	name, method string
	aliases      []string
}{
	{"Euler a", "euler_a", []string{"k_euler_a", "k_euler_ancestral"}},
	{"Euler", "euler", []string{"k_euler"}},
	{"Heun", "heun", []string{"k_heun"}},
	{"DPM2", "dpm2", []string{"k_dpm_2"}},
	{"DPM++ 2S a", "dpm++2s_a", []string{"k_dpmpp_2s_a"}},
	{"DPM++ 2M", "dpm++2m", []string{"k_dpmpp_2m"}},
	{"LCM", "lcm", []string{"k_lcm"}},
	{"DDIM", "ddim_trailing", []string{"ddim"}},
}

// a1111Schedulers are A1111's schedulers (modules/sd_schedulers.py) that
// glassbox has; "automatic" is the sampler's own.
var a1111Schedulers = []struct{ name, label, scheduler string }{
	{"automatic", "Automatic", ""},
	{"uniform", "Uniform", "discrete"},
	{"karras", "Karras", "karras"},
	{"exponential", "Exponential", "exponential"},
	{"simple", "Simple", "simple"},
}

// a1111Sampler maps an A1111 sampler name (or alias, or glassbox's own
// name; older A1111 names carry the scheduler: "DPM++ 2M Karras") to
// glassbox's sampler and scheduler.
func a1111Sampler(name string) (method, scheduler string, ok bool) {
	if name == "" {
		return "euler", "", true // the API's sampler_index default
	}
	for _, sc := range a1111Schedulers[1:] {
		if base, found := strings.CutSuffix(name, " "+sc.label); found {
			m, _, ok := a1111Sampler(base)
			return m, sc.scheduler, ok
		}
	}
	for _, s := range a1111Samplers {
		if strings.EqualFold(name, s.name) || name == s.method || slices.Contains(s.aliases, name) {
			return s.method, "", true
		}
	}
	return "", "", false
}

// a1111SamplerName is glassbox sampler m's A1111 name.
func a1111SamplerName(m string) string {
	for _, s := range a1111Samplers {
		if s.method == m {
			return s.name
		}
	}
	return m
}

// a1111Request is the body of txt2img and img2img (the fields glassbox
// reads; others are accepted and unused, as in A1111's pydantic models).
type a1111Request struct {
	Prompt            string         `json:"prompt"`
	NegativePrompt    string         `json:"negative_prompt"`
	Styles            []string       `json:"styles"`
	Seed              int64          `json:"seed"`
	SubseedStrength   float64        `json:"subseed_strength"`
	SamplerName       string         `json:"sampler_name"`
	SamplerIndex      string         `json:"sampler_index"`
	Scheduler         string         `json:"scheduler"`
	BatchSize         int            `json:"batch_size"`
	NIter             int            `json:"n_iter"`
	Steps             int            `json:"steps"`
	CFGScale          float32        `json:"cfg_scale"`
	Width             int            `json:"width"`
	Height            int            `json:"height"`
	RestoreFaces      bool           `json:"restore_faces"`
	Tiling            bool           `json:"tiling"`
	EnableHR          bool           `json:"enable_hr"`
	DenoisingStrength *float32       `json:"denoising_strength"`
	OverrideSettings  map[string]any `json:"override_settings"`
	SendImages        *bool          `json:"send_images"`
	// img2img.
	InitImages []string `json:"init_images,omitempty"`
	Mask       string   `json:"mask,omitempty"`
}

// a1111Defaults are A1111's API defaults (StableDiffusionProcessingAPI).
func a1111Defaults() a1111Request {
	return a1111Request{Seed: -1, BatchSize: 1, NIter: 1, Steps: 50, CFGScale: 7, Width: 512, Height: 512, SamplerIndex: "Euler"}
}

// a1111Info is the "info" JSON string (modules/processing.py's js()).
type a1111Info struct {
	Prompt             string   `json:"prompt"`
	AllPrompts         []string `json:"all_prompts"`
	NegativePrompt     string   `json:"negative_prompt"`
	AllNegativePrompts []string `json:"all_negative_prompts"`
	Seed               int64    `json:"seed"`
	AllSeeds           []int64  `json:"all_seeds"`
	Subseed            int64    `json:"subseed"`
	AllSubseeds        []int64  `json:"all_subseeds"`
	SubseedStrength    float64  `json:"subseed_strength"`
	Width              int      `json:"width"`
	Height             int      `json:"height"`
	SamplerName        string   `json:"sampler_name"`
	CFGScale           float32  `json:"cfg_scale"`
	Steps              int      `json:"steps"`
	BatchSize          int      `json:"batch_size"`
	RestoreFaces       bool     `json:"restore_faces"`
	SDModelName        string   `json:"sd_model_name"`
	SDModelHash        string   `json:"sd_model_hash"`
	SDVAEName          *string  `json:"sd_vae_name"`
	SDVAEHash          *string  `json:"sd_vae_hash"`
	DenoisingStrength  *float32 `json:"denoising_strength"`
	ExtraParams        struct {
		ScheduleType string `json:"Schedule type,omitempty"`
	} `json:"extra_generation_params"`
	IndexOfFirstImage int      `json:"index_of_first_image"`
	Infotexts         []string `json:"infotexts"`
	Styles            []string `json:"styles"`
	JobTimestamp      string   `json:"job_timestamp"`
	ClipSkip          int      `json:"clip_skip"`
	Version           string   `json:"version"`
}

type a1111Response struct {
	Images     []string     `json:"images"`
	Parameters a1111Request `json:"parameters"`
	Info       string       `json:"info"`
}

// a1111State is the API's one current checkpoint and its newest job.
type a1111State struct {
	mu        sync.Mutex
	model     string // "" until set: the first image model
	job       string
	started   time.Time
	step      int // steps done over the whole batch
	steps     int // of the whole batch
	image     int // the image being sampled (0-based), of n
	n         int
	imStep    int // its step and steps
	imSteps   int
	preview   []byte
	done      bool
	interrupt bool
}

// writeA1111Error is FastAPI's error body as A1111 answers it.
func writeA1111Error(w http.ResponseWriter, e *Error) {
	setRetryAfter(w, e)
	detail := e.Error()
	if e.Hint != "" {
		detail += " (" + e.Hint + ")"
	}
	writeJSON(w, e.Status, map[string]string{"error": e.Code, "detail": detail, "errors": e.Message})
}

// a1111Model is the current checkpoint's name.
func (s *Server) a1111Model(ctx context.Context) string {
	s.a1111.mu.Lock()
	m := s.a1111.model
	s.a1111.mu.Unlock()
	if m == "" {
		m = s.defaultImageModel(ctx)
	}
	return m
}

// a1111Checkpoint resolves an sd_model_checkpoint value (a title "name
// [hash]", a name, or a file name without its extension) to a model.
func (s *Server) a1111Checkpoint(ctx context.Context, v any) (string, *Error) {
	name, ok := v.(string)
	if !ok {
		return "", badRequest("invalid_value", "sd_model_checkpoint", "sd_model_checkpoint is %T, want a string", v)
	}
	if i := strings.LastIndex(name, " ["); i > 0 && strings.HasSuffix(name, "]") {
		name = name[:i]
	}
	models, _ := s.cfg.Backend.Models(ctx)
	var known []string
	for _, m := range models {
		if !IsImageFamily(m.Family) {
			continue
		}
		if m.Name == name || strings.TrimSuffix(m.Name, filepath.Ext(m.Name)) == name {
			return m.Name, nil
		}
		known = append(known, m.Name)
	}
	return "", &Error{Status: http.StatusNotFound, Stage: "load", Code: "model_not_found", Param: "sd_model_checkpoint",
		Message: fmt.Sprintf("checkpoint %q not found", name), Hint: "GET /sdapi/v1/sd-models lists " + strings.Join(known, ", ")}
}

func (s *Server) a1111Txt2Img(w http.ResponseWriter, r *http.Request) { s.a1111Generate(w, r, false) }
func (s *Server) a1111Img2Img(w http.ResponseWriter, r *http.Request) { s.a1111Generate(w, r, true) }

func (s *Server) a1111Generate(w http.ResponseWriter, r *http.Request, img2img bool) {
	body := a1111Defaults()
	if e := s.decodeBody(w, r, &body); e != nil {
		writeA1111Error(w, e)
		return
	}
	req, e := s.a1111ImageRequest(r.Context(), &body, img2img)
	if e != nil {
		writeA1111Error(w, e)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	g, e := s.startImage(ctx, ctx, req)
	if e != nil {
		writeA1111Error(w, e)
		return
	}
	w.Header().Set("X-Glassbox-Job", g.job.ID)
	s.a1111Follow(ctx, g, req.N)
	res, e := waitImage(ctx, g)
	var pngs [][]byte
	if e == nil {
		pngs, e = s.readImages(g)
	}
	if e != nil {
		writeA1111Error(w, e)
		return
	}
	out := a1111Response{Parameters: body, Images: []string{}}
	if body.SendImages == nil || *body.SendImages {
		for _, b := range pngs {
			out.Images = append(out.Images, base64.StdEncoding.EncodeToString(b))
		}
	}
	out.Parameters.InitImages = nil                                   // A1111 leaves the uploads out of parameters
	info, _ := json.Marshal(a1111InfoOf(res, body, img2img, g.start)) // plain data: cannot fail
	out.Info = string(info)
	writeJSON(w, http.StatusOK, out)
}

// a1111ImageRequest checks an A1111 request and turns it into an image job.
func (s *Server) a1111ImageRequest(ctx context.Context, b *a1111Request, img2img bool) (*ImageRequest, *Error) {
	for _, bad := range []struct {
		on   bool
		name string
	}{{b.EnableHR, "enable_hr"}, {b.RestoreFaces, "restore_faces"}, {b.Tiling, "tiling"}, {b.Mask != "", "mask"},
		{b.SubseedStrength != 0, "subseed_strength"}, {len(b.Styles) > 0, "styles"}} {
		if bad.on {
			return nil, badRequest("unsupported", bad.name, "%s is not supported by glassbox (it would change the image in a way it cannot)", bad.name)
		}
	}
	name := b.SamplerName
	if name == "" {
		name = b.SamplerIndex
	}
	method, sched, ok := a1111Sampler(name)
	if !ok {
		var names []string
		for _, s := range a1111Samplers {
			names = append(names, s.name)
		}
		return nil, badRequest("invalid_value", "sampler_name", "sampler %q is not one of %s", name, strings.Join(names, ", "))
	}
	if b.Scheduler != "" {
		i := slices.IndexFunc(a1111Schedulers, func(x struct{ name, label, scheduler string }) bool {
			return strings.EqualFold(x.name, b.Scheduler) || strings.EqualFold(x.label, b.Scheduler)
		})
		if i < 0 {
			return nil, badRequest("invalid_value", "scheduler", "scheduler %q is not one of automatic, uniform, karras, exponential, simple", b.Scheduler)
		}
		sched = a1111Schedulers[i].scheduler
	}
	if b.BatchSize < 1 || b.NIter < 1 || b.BatchSize*b.NIter > maxImageN {
		return nil, badRequest("invalid_value", "batch_size", "batch_size %d × n_iter %d: 1 to %d images a request", b.BatchSize, b.NIter, maxImageN)
	}
	model := ""
	clipSkip := 0
	for k, v := range b.OverrideSettings {
		switch k {
		case "sd_model_checkpoint":
			m, e := s.a1111Checkpoint(ctx, v)
			if e != nil {
				return nil, e
			}
			model = m
		case "CLIP_stop_at_last_layers":
			f, ok := v.(float64)
			if !ok || f != float64(int(f)) {
				return nil, badRequest("invalid_value", "override_settings.CLIP_stop_at_last_layers", "want a whole number, got %v", v)
			}
			clipSkip = int(f)
		}
	}
	if model == "" {
		model = s.a1111Model(ctx)
	}
	req := &ImageRequest{Model: model, Prompt: b.Prompt, Negative: b.NegativePrompt, Width: b.Width, Height: b.Height, Steps: b.Steps,
		CFGScale: b.CFGScale, Sampler: method, Scheduler: sched, Seed: b.Seed, N: b.BatchSize * b.NIter, ClipSkip: clipSkip}
	if b.CFGScale == 0 {
		req.CFGScale = 1 // A1111's 0 is no guidance; the engine's 0 is its default
	}
	if img2img {
		if len(b.InitImages) != 1 {
			return nil, badRequest("invalid_request", "init_images", "img2img takes one init image, got %d", len(b.InitImages))
		}
		init, e := decodeImageData(b.InitImages[0], "init_images")
		if e != nil {
			return nil, e
		}
		req.InitImage = init
		req.Strength = 0.75
		if b.DenoisingStrength != nil {
			req.Strength = *b.DenoisingStrength
		}
		req.Width, req.Height = 0, 0 // the image's own: glassbox does not resize
		if b.Width != 512 || b.Height != 512 {
			req.Width, req.Height = b.Width, b.Height
		}
	} else if len(b.InitImages) > 0 {
		return nil, badRequest("invalid_request", "init_images", "init_images are for /sdapi/v1/img2img")
	}
	if req.Prompt == "" {
		req.Prompt = " " // A1111 draws from the empty prompt; the job API asks for one
	}
	return req, nil
}

// a1111InfoOf is the info of a finished job.
func a1111InfoOf(res *ImageResult, b a1111Request, img2img bool, start time.Time) a1111Info {
	st := res.Settings
	in := a1111Info{Prompt: st.Prompt, NegativePrompt: st.Negative, Seed: st.Seed, Subseed: -1, Width: st.Width, Height: st.Height,
		SamplerName: a1111SamplerName(st.Sampler), CFGScale: st.CFGScale, Steps: st.Steps, BatchSize: b.BatchSize,
		SDModelName: strings.TrimSuffix(st.Model, filepath.Ext(st.Model)), SDModelHash: st.ModelHash, Styles: []string{},
		JobTimestamp: start.Format("20060102150405"), ClipSkip: max(st.ClipSkip, 1), Version: "glassbox " + Version}
	if img2img {
		ds := st.Strength
		in.DenoisingStrength = &ds
	}
	for _, sc := range a1111Schedulers {
		if sc.scheduler == st.Scheduler && sc.scheduler != "" {
			in.ExtraParams.ScheduleType = sc.label
		}
	}
	for _, im := range res.Images {
		in.AllPrompts = append(in.AllPrompts, st.Prompt)
		in.AllNegativePrompts = append(in.AllNegativePrompts, st.Negative)
		in.AllSeeds = append(in.AllSeeds, im.Seed)
		in.AllSubseeds = append(in.AllSubseeds, -1)
		in.Infotexts = append(in.Infotexts, im.Infotext)
	}
	return in
}

// a1111Follow makes g (of n images) the API's newest job and follows its
// steps and previews for /progress.
func (s *Server) a1111Follow(ctx context.Context, g *generation, n int) {
	st := &s.a1111
	st.mu.Lock()
	st.job, st.started, st.step, st.steps, st.preview, st.done, st.interrupt = g.job.ID, time.Now(), 0, 0, nil, false, false
	st.image, st.n, st.imStep, st.imSteps = 0, n, 0, 0
	st.mu.Unlock()
	events, err := s.cfg.Jobs.Events(ctx, g.job.ID, 0)
	if err != nil {
		return
	}
	go func() {
		for ev := range events {
			if ev.Type != api.TypePreview || ev.Preview == nil {
				continue
			}
			p := ev.Preview
			st.mu.Lock()
			if st.job == g.job.ID {
				st.steps = p.Steps * n
				st.step = p.Image*p.Steps + p.Step
				st.image, st.imStep, st.imSteps = p.Image, p.Step, p.Steps
				st.preview = p.PNG
			}
			st.mu.Unlock()
		}
		st.mu.Lock()
		if st.job == g.job.ID {
			st.done = true
		}
		st.mu.Unlock()
	}()
}

// a1111Progress is GET /sdapi/v1/progress.
type a1111Progress struct {
	Progress     float64       `json:"progress"`
	ETARelative  float64       `json:"eta_relative"`
	State        a1111JobState `json:"state"`
	CurrentImage *string       `json:"current_image"`
	TextInfo     *string       `json:"textinfo"`
	CurrentTask  *string       `json:"current_task"`
}

type a1111JobState struct {
	Skipped       bool   `json:"skipped"`
	Interrupted   bool   `json:"interrupted"`
	Stopping      bool   `json:"stopping_generation"`
	Job           string `json:"job"`
	JobCount      int    `json:"job_count"`
	JobTimestamp  string `json:"job_timestamp"`
	JobNo         int    `json:"job_no"`
	SamplingStep  int    `json:"sampling_step"`
	SamplingSteps int    `json:"sampling_steps"`
}

func (s *Server) a1111Progress(w http.ResponseWriter, r *http.Request) {
	st := &s.a1111
	st.mu.Lock()
	defer st.mu.Unlock()
	out := a1111Progress{State: a1111JobState{Interrupted: st.interrupt, JobTimestamp: "0"}}
	if st.job != "" && !st.done {
		out.State.Job, out.State.JobCount, out.State.JobTimestamp = "glassbox "+st.job, st.n, st.started.Format("20060102150405")
		out.State.JobNo, out.State.SamplingStep, out.State.SamplingSteps = st.image, st.imStep, st.imSteps
		if st.steps > 0 {
			out.Progress = float64(st.step) / float64(st.steps)
		}
		if out.Progress > 0 {
			elapsed := time.Since(st.started).Seconds()
			out.ETARelative = elapsed/out.Progress - elapsed
		}
		if len(st.preview) > 0 && r.URL.Query().Get("skip_current_image") != "true" {
			b64 := base64.StdEncoding.EncodeToString(st.preview)
			out.CurrentImage = &b64
		}
		task := st.job
		out.CurrentTask = &task
	}
	writeJSON(w, http.StatusOK, out)
}

// a1111Interrupt is POST /sdapi/v1/interrupt: the newest job stops.
func (s *Server) a1111Interrupt(w http.ResponseWriter, r *http.Request) {
	st := &s.a1111
	st.mu.Lock()
	job, done := st.job, st.done
	if job != "" && !done {
		st.interrupt = true
	}
	st.mu.Unlock()
	if job != "" && !done {
		if err := s.cfg.Jobs.Cancel(r.Context(), job); err != nil {
			writeA1111Error(w, toError(err))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// a1111Options is GET /sdapi/v1/options: the settings a client reads
// (the checkpoint, the output format), as A1111 names them.
func (s *Server) a1111Options(w http.ResponseWriter, r *http.Request) {
	model := s.a1111Model(r.Context())
	writeJSON(w, http.StatusOK, map[string]any{
		"sd_model_checkpoint": model, "sd_checkpoint_hash": nil, "sd_vae": "Automatic",
		"samples_format": "png", "CLIP_stop_at_last_layers": 1, "enable_pnginfo": true,
		"samples_save": true, "outdir_samples": "", "sd_checkpoints_limit": 1, "live_previews_enable": true,
		"show_progress_every_n_steps": 1, "live_previews_image_format": "png",
	})
}

// a1111SetOptions is POST /sdapi/v1/options: sd_model_checkpoint switches
// the current checkpoint; the other options (a client posts back all it
// read) are accepted and change nothing.
func (s *Server) a1111SetOptions(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if e := s.decodeBody(w, r, &body); e != nil {
		writeA1111Error(w, e)
		return
	}
	if v, ok := body["sd_model_checkpoint"]; ok && v != nil {
		m, e := s.a1111Checkpoint(r.Context(), v)
		if e != nil {
			writeA1111Error(w, e)
			return
		}
		s.a1111.mu.Lock()
		s.a1111.model = m
		s.a1111.mu.Unlock()
	}
	writeJSON(w, http.StatusOK, nil)
}

type a1111Model struct {
	Title     string  `json:"title"`
	ModelName string  `json:"model_name"`
	Hash      *string `json:"hash"`
	SHA256    *string `json:"sha256"`
	Filename  string  `json:"filename"`
	Config    *string `json:"config"`
}

func (s *Server) a1111SDModels(w http.ResponseWriter, r *http.Request) {
	models, err := s.cfg.Backend.Models(r.Context())
	if err != nil {
		writeA1111Error(w, toError(err))
		return
	}
	out := []a1111Model{}
	for _, m := range models {
		if IsImageFamily(m.Family) {
			out = append(out, a1111Model{Title: m.Name, ModelName: strings.TrimSuffix(m.Name, filepath.Ext(m.Name)), Filename: m.Path})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) a1111SamplerList(w http.ResponseWriter, r *http.Request) {
	type sampler struct {
		Name    string            `json:"name"`
		Aliases []string          `json:"aliases"`
		Options map[string]string `json:"options"`
	}
	out := []sampler{}
	for _, x := range a1111Samplers {
		out = append(out, sampler{Name: x.name, Aliases: x.aliases, Options: map[string]string{}})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) a1111SchedulerList(w http.ResponseWriter, r *http.Request) {
	type scheduler struct {
		Name           string   `json:"name"`
		Label          string   `json:"label"`
		Aliases        []string `json:"aliases"`
		DefaultRho     float64  `json:"default_rho"`
		NeedInnerModel bool     `json:"need_inner_model"`
	}
	out := []scheduler{}
	for _, x := range a1111Schedulers {
		rho := -1.0
		if x.name == "karras" {
			rho = 7 // Karras et al. 2022's ρ, as the engine uses
		}
		out = append(out, scheduler{Name: x.name, Label: x.label, DefaultRho: rho})
	}
	writeJSON(w, http.StatusOK, out)
}
