package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// ComfyUI's HTTP API (comfyanonymous/ComfyUI server.py) for its core
// txt2img and img2img graphs: POST /prompt takes a graph of
// CheckpointLoaderSimple, CLIPTextEncode, EmptyLatentImage (or LoadImage,
// ImageScale and VAEEncode), KSampler or KSamplerAdvanced, VAEDecode and SaveImage (or
// PreviewImage) nodes and answers {"prompt_id", "number", "node_errors"};
// GET /history[/{id}], /view, /queue, /object_info, /system_stats and POST
// /interrupt, each also under /api/. A graph is refused at validation with
// ComfyUI's node_errors: a node glassbox lacks names its class, a wrong
// input or link (to a node that is not there, an output slot it lacks, an
// output of another type) names the node and the input. The prompt is an
// image job that belongs to the server (it outlives the request), and
// unlike ComfyUI's the queue and history are the journal's: they survive a
// restart. GET /ws is
// the progress socket (ws.go); POST /upload/image fills the input folder
// LoadImage reads (comfyui_upload.go).

// comfyNodes are the node classes glassbox runs, with their inputs, and
// comfyOutputs their output slots' types.
var (
	comfyNodes = map[string][]string{
		"CheckpointLoaderSimple": {"ckpt_name"},
		"CLIPTextEncode":         {"text", "clip"},
		"EmptyLatentImage":       {"width", "height", "batch_size"},
		"LoadImage":              {"image"},
		"VAEEncode":              {"pixels", "vae"},
		"KSampler":               {"model", "seed", "steps", "cfg", "sampler_name", "scheduler", "positive", "negative", "latent_image", "denoise"},
		"KSamplerAdvanced": {"model", "add_noise", "noise_seed", "steps", "cfg", "sampler_name", "scheduler", "positive", "negative",
			"latent_image", "start_at_step", "end_at_step", "return_with_leftover_noise"},
		"VAEDecode":    {"samples", "vae"},
		"ImageScale":   {"image", "upscale_method", "width", "height", "crop"},
		"SaveImage":    {"images", "filename_prefix"},
		"PreviewImage": {"images"},
	}
	comfyOutputs = map[string][]string{
		"CheckpointLoaderSimple": {"MODEL", "CLIP", "VAE"},
		"CLIPTextEncode":         {"CONDITIONING"},
		"EmptyLatentImage":       {"LATENT"},
		"LoadImage":              {"IMAGE", "MASK"},
		"VAEEncode":              {"LATENT"},
		"KSampler":               {"LATENT"},
		"KSamplerAdvanced":       {"LATENT"},
		"VAEDecode":              {"IMAGE"},
		"ImageScale":             {"IMAGE"},
		"SaveImage":              {},
		"PreviewImage":           {},
	}
)

// comfySamplers are ComfyUI's sampler names of glassbox's samplers, and
// comfySchedulers its schedulers' ("normal" is the model's own σ list:
// glassbox's discrete).
var (
	comfySamplers   = map[string]string{"euler": "euler", "euler_ancestral": "euler_a", "heun": "heun", "dpm_2": "dpm2", "dpmpp_2s_ancestral": "dpm++2s_a", "dpmpp_2m": "dpm++2m", "lcm": "lcm", "ddim": "ddim_trailing"}
	comfySchedulers = map[string]string{"normal": "discrete", "karras": "karras", "exponential": "exponential", "simple": "simple"}
)

type comfyNode struct {
	ClassType string                     `json:"class_type"`
	Inputs    map[string]json.RawMessage `json:"inputs"`
}

type comfyPromptRequest struct {
	Prompt    map[string]comfyNode `json:"prompt"`
	ClientID  string               `json:"client_id"`
	ExtraData json.RawMessage      `json:"extra_data"`
}

type comfyError struct {
	Type      string         `json:"type"`
	Message   string         `json:"message"`
	Details   string         `json:"details"`
	ExtraInfo map[string]any `json:"extra_info"`
}

type comfyNodeError struct {
	Errors           []comfyError `json:"errors"`
	DependentOutputs []string     `json:"dependent_outputs"`
	ClassType        string       `json:"class_type"`
}

// comfyGraph is a validated graph: the image job and the output node.
type comfyGraph struct {
	req    *ImageRequest
	output string // the SaveImage (or PreviewImage) node's id
}

// comfyRefused is a graph's validation failure, as ComfyUI answers it.
type comfyRefused struct {
	Error      comfyError                `json:"error"`
	NodeErrors map[string]comfyNodeError `json:"node_errors"`
}

// comfyMessages are ComfyUI's messages of its node_errors' types.
var comfyMessages = map[string]string{
	"value_not_valid":        "Value not valid",
	"required_input_missing": "Required input is missing",
	"bad_linked_input":       "Bad linked input, must be a length-2 list of [node_id, slot_index]",
	"return_type_mismatch":   "Return type mismatch between linked nodes",
}

// comfyMaxSchedule bounds the schedule a KSampler's denoise makes
// (steps/denoise): the image engine's step limit (engine/image.MaxSteps).
const comfyMaxSchedule = 10000

// parseComfyGraph validates a graph and reads the job from it; load reads
// a LoadImage node's picture from the input folder.
//
// The graph glassbox runs is one chain: SaveImage (or PreviewImage) ←
// VAEDecode ← KSampler or KSamplerAdvanced, whose model, the text
// encoders' clip and the VAE nodes' vae come from one checkpoint loader,
// and whose latent_image is an EmptyLatentImage (txt2img) or a VAEEncode
// of a LoadImage (img2img: the picture is the job's init image, its size
// the job's), or of an ImageScale of one (comfyui_scale.go: the scaled
// picture is the init image). KSampler's denoise d < 1 over an encoded picture runs, as
// ComfyUI's does, the last steps steps of a schedule of int(steps/d): the
// job's steps are that schedule's and its strength (steps−½)/int(steps/d)
// starts the engine's img2img (diffusion.StartAt) steps before its end;
// KSamplerAdvanced's start_at_step s of steps n is the
// strength (n−s−½)/n, at which the engine's img2img (diffusion.StartAt)
// starts at step s of the n-step schedule, as ComfyUI's does.
func parseComfyGraph(g map[string]comfyNode, load func(ref string) ([]byte, *Error)) (*comfyGraph, *comfyRefused) {
	ids := slices.Sorted(maps.Keys(g))
	for _, id := range ids {
		if _, ok := comfyNodes[g[id].ClassType]; !ok {
			return nil, &comfyRefused{Error: comfyError{Type: "invalid_prompt",
				Message:   fmt.Sprintf("Cannot execute because node %s does not exist.", g[id].ClassType),
				Details:   fmt.Sprintf("Node ID '#%s': glassbox runs %s", id, strings.Join(slices.Sorted(maps.Keys(comfyNodes)), ", ")),
				ExtraInfo: map[string]any{}}, NodeErrors: map[string]comfyNodeError{}}
		}
	}
	var outputs []string
	for _, id := range ids {
		if c := g[id].ClassType; c == "SaveImage" || c == "PreviewImage" {
			outputs = append(outputs, id)
		}
	}
	if len(outputs) != 1 {
		return nil, &comfyRefused{Error: comfyError{Type: "prompt_no_outputs", Message: "Prompt has no outputs",
			Details: fmt.Sprintf("glassbox runs a graph with one SaveImage or PreviewImage node (%d here)", len(outputs)), ExtraInfo: map[string]any{}},
			NodeErrors: map[string]comfyNodeError{}}
	}
	output := outputs[0]
	c := &comfyCheck{g: g, errs: map[string]comfyNodeError{}, load: load}
	req := &ImageRequest{}
	if dec, ok := c.link(output, "images", "IMAGE", "VAEDecode"); ok {
		if ks, ok := c.link(dec, "samples", "LATENT", "KSampler", "KSamplerAdvanced"); ok {
			c.sampler(ks, req) // first: its model's loader is the prompt's checkpoint
		}
		c.checkpoint(dec, "vae", "VAE")
	}
	req.Model = c.ckptName
	if len(c.errs) > 0 {
		for id, ne := range c.errs {
			ne.DependentOutputs = []string{output}
			c.errs[id] = ne
		}
		return nil, &comfyRefused{Error: comfyError{Type: "prompt_outputs_failed_validation", Message: "Prompt outputs failed validation",
			ExtraInfo: map[string]any{}}, NodeErrors: c.errs}
	}
	// ComfyUI's noise is torch's CPU generator's.
	req.RNG = "cpu"
	return &comfyGraph{req: req, output: output}, nil
}

// comfyCheck is one graph's validation: its node_errors so far, and the
// checkpoint its loaders load.
type comfyCheck struct {
	g                  map[string]comfyNode
	errs               map[string]comfyNodeError
	load               func(ref string) ([]byte, *Error)
	ckptNode, ckptName string
}

// fail records an error of ComfyUI's type typ on node id's input.
func (c *comfyCheck) fail(typ, id, input, format string, a ...any) {
	ne := c.errs[id]
	ne.ClassType = c.g[id].ClassType
	ne.Errors = append(ne.Errors, comfyError{Type: typ, Message: comfyMessages[typ],
		Details: fmt.Sprintf("%s: %s", input, fmt.Sprintf(format, a...)), ExtraInfo: map[string]any{"input_name": input}})
	c.errs[id] = ne
}

func (c *comfyCheck) bad(id, input, format string, a ...any) {
	c.fail("value_not_valid", id, input, format, a...)
}

// link follows node id's input, a link [node, output] to another node's
// output of type typ, from a node of one of classes: that node's id.
func (c *comfyCheck) link(id, input, typ string, classes ...string) (string, bool) {
	want := strings.Join(classes, " or ")
	raw, ok := c.g[id].Inputs[input]
	if !ok {
		c.fail("required_input_missing", id, input, "want a link [node, output] to a %s's %s", want, typ)
		return "", false
	}
	var l []json.RawMessage
	if err := json.Unmarshal(raw, &l); err != nil || len(l) != 2 {
		c.fail("bad_linked_input", id, input, "%s is not a link [node, output] to a %s's %s", trimName(string(raw)), want, typ)
		return "", false
	}
	var to string
	var slot int
	if json.Unmarshal(l[0], &to) != nil {
		c.fail("bad_linked_input", id, input, "the link's node %s is not a string id", trimName(string(l[0])))
		return "", false
	}
	if json.Unmarshal(l[1], &slot) != nil || slot < 0 {
		c.fail("bad_linked_input", id, input, "the link's output %s is not an output slot (a whole number from 0)", trimName(string(l[1])))
		return "", false
	}
	n, ok := c.g[to]
	if !ok {
		c.fail("bad_linked_input", id, input, "node %q does not exist in the prompt", trimName(to))
		return "", false
	}
	outs := comfyOutputs[n.ClassType]
	if slot >= len(outs) {
		have := []string{}
		for i, o := range outs {
			have = append(have, fmt.Sprintf("%d %s", i, o))
		}
		c.fail("bad_linked_input", id, input, "node %q (%s) has no output %d: its outputs are [%s]", to, n.ClassType, slot, strings.Join(have, ", "))
		return "", false
	}
	if outs[slot] != typ {
		why := ""
		if outs[slot] == "MASK" {
			why = " (glassbox runs no node that takes a MASK: this output is unsupported)"
		}
		c.fail("return_type_mismatch", id, input, "node %q (%s) output %d is %s, want %s%s", to, n.ClassType, slot, outs[slot], typ, why)
		return "", false
	}
	if !slices.Contains(classes, n.ClassType) {
		c.fail("return_type_mismatch", id, input, "node %q is a %s, not a %s: glassbox runs no other here", to, n.ClassType, want)
		return "", false
	}
	return to, true
}

// str reads a required string input.
func (c *comfyCheck) str(id, input string) string {
	var s string
	if raw, ok := c.g[id].Inputs[input]; !ok {
		c.fail("required_input_missing", id, input, "want a string")
	} else if err := json.Unmarshal(raw, &s); err != nil {
		c.bad(id, input, "want a string, got %s", trimName(string(raw)))
	}
	return s
}

// num reads a number input, def when it is absent.
func (c *comfyCheck) num(id, input string, def float64) float64 {
	raw, ok := c.g[id].Inputs[input]
	if !ok {
		return def
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		c.bad(id, input, "want a number, got %s", trimName(string(raw)))
	}
	return f
}

// whole reads a whole-number input in [lo, hi], def when it is absent.
func (c *comfyCheck) whole(id, input string, def, lo, hi int) int {
	f := c.num(id, input, float64(def))
	if f != float64(int64(f)) || f < float64(lo) || f > float64(hi) {
		c.bad(id, input, "%g: want a whole number from %d to %d", f, lo, hi)
		return def
	}
	return int(f)
}

// checkpoint follows node id's input to the prompt's one checkpoint
// loader: every loader the chain reaches must load the same checkpoint.
func (c *comfyCheck) checkpoint(id, input, typ string) {
	ck, ok := c.link(id, input, typ, "CheckpointLoaderSimple")
	if !ok {
		return
	}
	name := c.str(ck, "ckpt_name")
	switch {
	case c.ckptNode == "":
		c.ckptNode, c.ckptName = ck, name
	case name != c.ckptName && c.errs[ck].ClassType == "":
		c.bad(ck, "ckpt_name", "%q: glassbox runs one checkpoint a prompt, and node %q loads %q", name, c.ckptNode, c.ckptName)
	}
}

// sampler reads a KSampler or KSamplerAdvanced node and what it links to
// into req.
func (c *comfyCheck) sampler(ks string, req *ImageRequest) {
	advanced := c.g[ks].ClassType == "KSamplerAdvanced"
	c.checkpoint(ks, "model", "MODEL")
	if p, ok := c.link(ks, "positive", "CONDITIONING", "CLIPTextEncode"); ok {
		req.Prompt = c.str(p, "text")
		c.checkpoint(p, "clip", "CLIP")
	}
	if n, ok := c.link(ks, "negative", "CONDITIONING", "CLIPTextEncode"); ok {
		req.Negative = c.str(n, "text")
		c.checkpoint(n, "clip", "CLIP")
	}
	seedName := "seed"
	if advanced {
		seedName = "noise_seed"
	}
	seed := c.num(ks, seedName, 0)
	if seed < 0 || seed > 1<<53 || seed != float64(int64(seed)) {
		c.bad(ks, seedName, "%g: want a whole number from 0 to 2⁵³", seed)
	}
	req.Seed = int64(seed)
	req.Steps = c.whole(ks, "steps", 20, 1, 10000)
	req.CFGScale = float32(c.num(ks, "cfg", 8))
	sampler := c.str(ks, "sampler_name")
	if req.Sampler = comfySamplers[sampler]; req.Sampler == "" {
		c.bad(ks, "sampler_name", "%q is not one of %s", sampler, strings.Join(slices.Sorted(maps.Keys(comfySamplers)), ", "))
	}
	scheduler := c.str(ks, "scheduler")
	if req.Scheduler = comfySchedulers[scheduler]; req.Scheduler == "" {
		c.bad(ks, "scheduler", "%q is not one of %s", scheduler, strings.Join(slices.Sorted(maps.Keys(comfySchedulers)), ", "))
	}
	l, ok := c.link(ks, "latent_image", "LATENT", "EmptyLatentImage", "VAEEncode")
	encoded := ok && c.g[l].ClassType == "VAEEncode"
	switch {
	case !ok:
	case encoded:
		c.encoded(l, req)
	default:
		req.Width, req.Height = c.whole(l, "width", 512, 64, 4096), c.whole(l, "height", 512, 64, 4096)
		req.N = c.whole(l, "batch_size", 1, 1, maxImageN)
	}
	if !advanced {
		d := c.num(ks, "denoise", 1)
		switch {
		case encoded && !(d > 0 && d <= 1):
			c.bad(ks, "denoise", "%g: over an encoded picture, denoise is img2img's strength, in (0, 1]", d)
		case encoded && d < 1:
			// ComfyUI's KSampler runs the last steps steps of a schedule of
			// int(steps/denoise): that schedule is the job's, and the strength
			// (steps−½)/total starts it there (diffusion.StartAt).
			total := int(float64(req.Steps) / d)
			if total > comfyMaxSchedule {
				c.bad(ks, "denoise", "%g with %d steps: a schedule of %d steps (steps/denoise), over the %d glassbox runs", d, req.Steps, total, comfyMaxSchedule)
				return
			}
			req.Strength = (float32(req.Steps) - 0.5) / float32(total)
			req.Steps = total
		case encoded:
			req.Strength = 1
		case ok && d != 1:
			c.bad(ks, "denoise", "%g: over an EmptyLatentImage glassbox denoises all of it (1); for img2img link a VAEEncode of a LoadImage", d)
		}
		return
	}
	// KSamplerAdvanced: noise added, from start_at_step to the end.
	if v := c.str(ks, "add_noise"); v != "enable" {
		c.bad(ks, "add_noise", "%q: glassbox samples from noise it adds (\"enable\"); a latent that already holds noise comes from no node it runs", v)
	}
	switch v := c.str(ks, "return_with_leftover_noise"); v {
	case "enable", "disable": // the same when sampling runs to the end
	default:
		c.bad(ks, "return_with_leftover_noise", "%q: want \"enable\" or \"disable\"", v)
	}
	start := c.whole(ks, "start_at_step", 0, 0, 10000)
	if end := c.whole(ks, "end_at_step", 10000, 0, 10000); end < req.Steps {
		c.bad(ks, "end_at_step", "%d of %d steps: glassbox samples to the end (end_at_step ≥ steps); a latent left with noise feeds no node it runs", end, req.Steps)
	}
	switch {
	case start == 0:
		if encoded {
			req.Strength = 1
		}
	case !ok:
	case !encoded:
		c.bad(ks, "start_at_step", "%d over an EmptyLatentImage: glassbox starts a txt2img latent at step 0; for img2img link a VAEEncode of a LoadImage", start)
	case start >= req.Steps:
		c.bad(ks, "start_at_step", "%d of %d steps: want a step before the last", start, req.Steps)
	default:
		req.Strength = (float32(req.Steps) - float32(start) - 0.5) / float32(req.Steps)
	}
}

// encoded reads a VAEEncode node and its LoadImage (or an ImageScale of
// one, comfyui_scale.go) into req: the init image, one image of its size.
func (c *comfyCheck) encoded(enc string, req *ImageRequest) {
	c.checkpoint(enc, "vae", "VAE")
	li, ok := c.link(enc, "pixels", "IMAGE", "LoadImage", "ImageScale")
	if !ok {
		return
	}
	if b, ok := c.picture(li, 0); ok {
		req.InitImage, req.N = b, 1
	}
}

// comfyParams is what the journal keeps of a ComfyUI prompt, in the image
// job's params.
type comfyParams struct {
	Graph    map[string]comfyNode `json:"prompt"`
	ClientID string               `json:"client_id,omitempty"`
	Output   string               `json:"output"`
}

func (s *Server) comfyPrompt(w http.ResponseWriter, r *http.Request) {
	var body comfyPromptRequest
	if e := s.decodeBody(w, r, &body); e != nil {
		writeNativeError(w, e)
		return
	}
	if len(body.Prompt) == 0 {
		writeJSON(w, http.StatusBadRequest, comfyRefused{Error: comfyError{Type: "no_prompt", Message: "No prompt provided",
			ExtraInfo: map[string]any{}}, NodeErrors: map[string]comfyNodeError{}})
		return
	}
	graph, refused := parseComfyGraph(body.Prompt, s.readInput)
	if refused != nil {
		writeJSON(w, http.StatusBadRequest, refused)
		return
	}
	extra, _ := json.Marshal(comfyParams{Graph: body.Prompt, ClientID: body.ClientID, Output: graph.output}) // plain data
	graph.req.ComfyUI = extra
	g, e := s.startImage(r.Context(), s.base, graph.req)
	if e != nil {
		if e.Status == http.StatusBadRequest || e.Status == http.StatusNotFound {
			writeJSON(w, http.StatusBadRequest, comfyRefused{Error: comfyError{Type: "prompt_outputs_failed_validation",
				Message: "Prompt outputs failed validation", Details: e.Error(), ExtraInfo: map[string]any{}},
				NodeErrors: map[string]comfyNodeError{}})
			return
		}
		writeNativeError(w, e)
		return
	}
	s.comfyHub.notify(body.ClientID, g.job.ID)
	writeJSON(w, http.StatusOK, map[string]any{"prompt_id": g.job.ID, "number": s.comfyNumber(g.job), "node_errors": map[string]any{}})
}

// comfyNumber is a job's place in the queue's numbering: its creation
// time in milliseconds, which orders the prompts as ComfyUI's counter does.
func (s *Server) comfyNumber(j api.Job) int64 { return j.Created.UnixMilli() }

// comfyEntry is one prompt of the history.
type comfyEntry struct {
	Prompt  []any                     `json:"prompt"`
	Outputs map[string]map[string]any `json:"outputs"`
	Status  struct {
		StatusStr string  `json:"status_str"`
		Completed bool    `json:"completed"`
		Messages  [][]any `json:"messages"`
	} `json:"status"`
}

// comfyJob reads a job's ComfyUI graph from its params (false: a job of
// another API).
func comfyJob(j api.Job) (comfyParams, bool) {
	var p struct {
		ComfyUI *comfyParams `json:"comfyui"`
	}
	if j.Kind != "image" || json.Unmarshal(j.Params, &p) != nil || p.ComfyUI == nil {
		return comfyParams{}, false
	}
	return *p.ComfyUI, true
}

func (s *Server) comfyHistoryEntry(j api.Job, p comfyParams) comfyEntry {
	e := comfyEntry{Prompt: []any{s.comfyNumber(j), j.ID, p.Graph, map[string]any{"client_id": p.ClientID}, []string{p.Output}},
		Outputs: map[string]map[string]any{}}
	e.Status.Messages = [][]any{}
	e.Status.Completed = j.State == api.StateDone
	switch j.State {
	case api.StateDone:
		e.Status.StatusStr = "success"
		var res ImageResult
		if json.Unmarshal(j.Result, &res) == nil {
			var images []map[string]string
			for _, im := range res.Images {
				images = append(images, map[string]string{"filename": comfyFilename(j.ID, im.Index), "subfolder": "", "type": "output"})
			}
			e.Outputs[p.Output] = map[string]any{"images": images}
		}
	case api.StateFailed, api.StateCancelled:
		e.Status.StatusStr = "error"
	}
	return e
}

// comfyFilename names image n of job for /view.
func comfyFilename(job string, n int) string { return fmt.Sprintf("%s_%05d_.png", job, n+1) }

func (s *Server) comfyHistory(w http.ResponseWriter, r *http.Request) {
	out := map[string]comfyEntry{}
	if id := r.PathValue("id"); id != "" {
		if j, err := s.cfg.Jobs.Get(r.Context(), id); err == nil && api.Terminal(j.State) {
			if p, ok := comfyJob(j); ok {
				out[id] = s.comfyHistoryEntry(j, p)
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	max := 200
	if v, err := strconv.Atoi(r.URL.Query().Get("max_items")); err == nil && v > 0 && v < max {
		max = v
	}
	jobs, err := s.cfg.Jobs.List(r.Context(), "", 1000)
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	for _, j := range jobs {
		if p, ok := comfyJob(j); ok && api.Terminal(j.State) && len(out) < max {
			out[j.ID] = s.comfyHistoryEntry(j, p)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// comfyView is GET /view?filename=…&type=output: a prompt's image (with
// type=input: an uploaded picture, comfyui_upload.go).
func (s *Server) comfyView(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("type") == "input" {
		s.comfyViewInput(w, r)
		return
	}
	name := r.URL.Query().Get("filename")
	job, num, ok := strings.Cut(strings.TrimSuffix(name, "_.png"), "_")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || r.URL.Query().Get("subfolder") != "" {
		http.Error(w, "404: no such image", http.StatusNotFound)
		return
	}
	r.SetPathValue("id", job)
	r.SetPathValue("n", strconv.Itoa(n-1))
	s.jobImage(w, r)
}

// comfyQueue is GET /queue: the running and waiting prompts.
func (s *Server) comfyQueue(w http.ResponseWriter, r *http.Request) {
	jobs, err := s.cfg.Jobs.List(r.Context(), "", 1000)
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	running, pending := [][]any{}, [][]any{}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].ID < jobs[b].ID })
	for _, j := range jobs {
		p, ok := comfyJob(j)
		if !ok || api.Terminal(j.State) {
			continue
		}
		item := []any{s.comfyNumber(j), j.ID, p.Graph, map[string]any{"client_id": p.ClientID}, []string{p.Output}}
		if j.State == api.StateRunning && j.Stage != "queued" {
			running = append(running, item)
		} else {
			pending = append(pending, item)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue_running": running, "queue_pending": pending})
}

// comfyQueueInfo is ComfyUI's queue info: the prompts not yet ended.
func (s *Server) comfyQueueInfo(ctx context.Context) map[string]any {
	q := 0
	if jobs, err := s.cfg.Jobs.List(ctx, "", 1000); err == nil {
		for _, j := range jobs {
			if _, ok := comfyJob(j); ok && !api.Terminal(j.State) {
				q++
			}
		}
	}
	return map[string]any{"exec_info": map[string]int{"queue_remaining": q}}
}

// comfyPromptInfo is GET /prompt: the queue info, which clients poll (and
// ping the server with).
func (s *Server) comfyPromptInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.comfyQueueInfo(r.Context()))
}

// comfyInterrupt is POST /interrupt: the running prompts stop.
func (s *Server) comfyInterrupt(w http.ResponseWriter, r *http.Request) {
	jobs, err := s.cfg.Jobs.List(r.Context(), "", 1000)
	if err == nil {
		for _, j := range jobs {
			if _, ok := comfyJob(j); ok && !api.Terminal(j.State) && j.Stage != "queued" {
				s.cfg.Jobs.Cancel(context.WithoutCancel(r.Context()), j.ID)
			}
		}
	}
	w.WriteHeader(http.StatusOK)
}

// comfyObjectInfo is GET /object_info: the nodes glassbox runs, with
// their inputs' types and choices as ComfyUI describes them.
func (s *Server) comfyObjectInfo(w http.ResponseWriter, r *http.Request) {
	var ckpts []string
	if models, err := s.cfg.Backend.Models(r.Context()); err == nil {
		for _, m := range models {
			if IsImageFamily(m.Family) {
				ckpts = append(ckpts, m.Name)
			}
		}
	}
	if ckpts == nil {
		ckpts = []string{}
	}
	node := func(cat string, required map[string]any, outTypes []string, output bool) map[string]any {
		return map[string]any{"input": map[string]any{"required": required}, "output": outTypes, "output_is_list": make([]bool, len(outTypes)),
			"output_name": outTypes, "name": "", "display_name": "", "description": "", "category": cat, "output_node": output}
	}
	intIn := func(def, lo, hi int) []any { return []any{"INT", map[string]int{"default": def, "min": lo, "max": hi}} }
	info := map[string]map[string]any{
		"CheckpointLoaderSimple": node("loaders", map[string]any{"ckpt_name": []any{ckpts}}, []string{"MODEL", "CLIP", "VAE"}, false),
		"CLIPTextEncode":         node("conditioning", map[string]any{"text": []any{"STRING", map[string]bool{"multiline": true}}, "clip": []any{"CLIP"}}, []string{"CONDITIONING"}, false),
		"EmptyLatentImage": node("latent", map[string]any{"width": intIn(512, 64, 4096), "height": intIn(512, 64, 4096),
			"batch_size": intIn(1, 1, maxImageN)}, []string{"LATENT"}, false),
		"KSampler": node("sampling", map[string]any{"model": []any{"MODEL"}, "seed": intIn(0, 0, 1<<53), "steps": intIn(20, 1, 10000),
			"cfg":          []any{"FLOAT", map[string]float64{"default": 8, "min": 0, "max": 100}},
			"sampler_name": []any{slices.Sorted(maps.Keys(comfySamplers))}, "scheduler": []any{slices.Sorted(maps.Keys(comfySchedulers))},
			"positive": []any{"CONDITIONING"}, "negative": []any{"CONDITIONING"}, "latent_image": []any{"LATENT"},
			"denoise": []any{"FLOAT", map[string]float64{"default": 1, "min": 0.01, "max": 1, "step": 0.01}}}, []string{"LATENT"}, false),
		"KSamplerAdvanced": node("sampling", map[string]any{"model": []any{"MODEL"}, "add_noise": []any{[]string{"enable"}},
			"noise_seed": intIn(0, 0, 1<<53), "steps": intIn(20, 1, 10000),
			"cfg":          []any{"FLOAT", map[string]float64{"default": 8, "min": 0, "max": 100}},
			"sampler_name": []any{slices.Sorted(maps.Keys(comfySamplers))}, "scheduler": []any{slices.Sorted(maps.Keys(comfySchedulers))},
			"positive": []any{"CONDITIONING"}, "negative": []any{"CONDITIONING"}, "latent_image": []any{"LATENT"},
			"start_at_step": intIn(0, 0, 10000), "end_at_step": intIn(10000, 0, 10000),
			"return_with_leftover_noise": []any{[]string{"disable", "enable"}}}, []string{"LATENT"}, false),
		"LoadImage": node("image", map[string]any{"image": []any{s.inputFiles(), map[string]bool{"image_upload": true}}},
			[]string{"IMAGE", "MASK"}, false),
		"VAEEncode": node("latent", map[string]any{"pixels": []any{"IMAGE"}, "vae": []any{"VAE"}}, []string{"LATENT"}, false),
		"VAEDecode": node("latent", map[string]any{"samples": []any{"LATENT"}, "vae": []any{"VAE"}}, []string{"IMAGE"}, false),
		"ImageScale": node("image/upscaling", map[string]any{"image": []any{"IMAGE"}, "upscale_method": []any{comfyScaleMethods},
			"width": intIn(512, 0, comfyMaxScaleSide), "height": intIn(512, 0, comfyMaxScaleSide),
			"crop": []any{[]string{"disabled", "center"}}}, []string{"IMAGE"}, false),
		"SaveImage":    node("image", map[string]any{"images": []any{"IMAGE"}, "filename_prefix": []any{"STRING", map[string]string{"default": "ComfyUI"}}}, []string{}, true),
		"PreviewImage": node("image", map[string]any{"images": []any{"IMAGE"}}, []string{}, true),
	}
	for name, n := range info {
		n["name"], n["display_name"] = name, name
	}
	if c := r.PathValue("class"); c != "" {
		if n, ok := info[c]; ok {
			writeJSON(w, http.StatusOK, map[string]any{c: n})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{})
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// comfySystemStats is GET /system_stats.
func (s *Server) comfySystemStats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"system": map[string]any{"os": runtime.GOOS, "python_version": "", "embedded_python": false,
			"comfyui_version": "glassbox " + Version, "pytorch_version": "", "argv": os.Args[:1], "ram_total": 0, "ram_free": 0},
		"devices": []map[string]any{{"name": "cpu", "type": "cpu", "index": 0, "vram_total": 0, "vram_free": 0,
			"torch_vram_total": 0, "torch_vram_free": 0}},
	})
}

// comfyHub hands each ComfyUI prompt to the /ws connections of its
// client_id.
type comfyHub struct {
	mu   sync.Mutex
	subs map[string][]chan string
}

func (h *comfyHub) subscribe(client string) (chan string, func()) {
	ch := make(chan string, 64)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string][]chan string{}
	}
	h.subs[client] = append(h.subs[client], ch)
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		h.subs[client] = slices.DeleteFunc(h.subs[client], func(c chan string) bool { return c == ch })
		if len(h.subs[client]) == 0 {
			delete(h.subs, client)
		}
		h.mu.Unlock()
	}
}

func (h *comfyHub) notify(client, prompt string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range h.subs[client] {
		select {
		case ch <- prompt:
		default: // a connection 64 prompts behind misses one: never block a POST
		}
	}
}

// comfyWS is GET /ws?clientId=…: ComfyUI's progress socket. It sends
// status on connect, then for each prompt of that client execution_start,
// executing (per node, as the job's stages map to them), progress (the
// sampling steps), with ?previews=true the step previews as binary frames
// (type 1, format 2: PNG, at most one per 250 ms; off by default, as
// ComfyUI's --preview-method is, since clients take binary frames for
// SendImageWebsocket's images), executed with the images, execution_success
// and executing with node null — or execution_error / execution_interrupted.
func (s *Server) comfyWS(w http.ResponseWriter, r *http.Request) {
	client := r.URL.Query().Get("clientId")
	previews := r.URL.Query().Get("previews") == "true"
	// Subscribed before the handshake's answer: a client may post its
	// prompt the moment it has the 101, and that prompt must reach it.
	prompts, unsub := s.comfyHub.subscribe(client)
	defer unsub()
	ws, err := wsUpgrade(w, r, s.cfg.WriteTimeout)
	if err != nil {
		writeNativeError(w, badRequest("bad_handshake", "", "%v", err))
		return
	}
	defer ws.Close()
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	st, err := s.addStream(cancel)
	if err != nil {
		return
	}
	defer s.removeStream(st)
	msg := func(typ string, data any) error {
		b, _ := json.Marshal(map[string]any{"type": typ, "data": data}) // plain data
		return ws.send(wsText, b)
	}
	status := func() error {
		return msg("status", map[string]any{"status": s.comfyQueueInfo(ctx), "sid": client})
	}
	if status() != nil {
		return
	}
	for {
		select {
		case <-ws.closed:
			return
		case <-ctx.Done():
			return
		case id := <-prompts:
			if s.comfyFollow(ctx, ws, id, previews, msg) != nil {
				return
			}
			if status() != nil {
				return
			}
		}
	}
}

// comfyFollow sends one prompt's execution over ws.
func (s *Server) comfyFollow(ctx context.Context, ws *wsConn, id string, withPreviews bool, msg func(string, any) error) error {
	j, err := s.cfg.Jobs.Get(ctx, id)
	if err != nil {
		return nil
	}
	p, ok := comfyJob(j)
	if !ok {
		return nil
	}
	nodeOf := map[string]string{}
	for nid, n := range p.Graph {
		stage := map[string]string{"CheckpointLoaderSimple": "load", "CLIPTextEncode": "encode", "KSampler": "generate", "KSamplerAdvanced": "generate", "VAEDecode": "decode"}[n.ClassType]
		if stage != "" && (nodeOf[stage] == "" || nid < nodeOf[stage]) {
			nodeOf[stage] = nid
		}
	}
	nodeOf["deliver"] = p.Output
	events, err := s.cfg.Jobs.Events(ctx, id, 0)
	if err != nil {
		return nil
	}
	var previews previewLimiter
	started := false
	now := func() int64 { return time.Now().UnixMilli() }
	for ev := range events {
		var err error
		switch ev.Type {
		case api.TypeStageStart:
			if !started && ev.Stage != "queued" {
				started = true
				if err = msg("execution_start", map[string]any{"prompt_id": id, "timestamp": now()}); err == nil {
					err = msg("execution_cached", map[string]any{"nodes": []string{}, "prompt_id": id, "timestamp": now()})
				}
			}
			if n := nodeOf[ev.Stage]; n != "" && err == nil {
				err = msg("executing", map[string]any{"node": n, "display_node": n, "prompt_id": id})
			}
		case api.TypeProgress:
			if ev.Stage == "generate" && ev.Progress != nil {
				err = msg("progress", map[string]any{"value": ev.Progress.Done, "max": ev.Progress.Total, "prompt_id": id, "node": nodeOf["generate"]})
			}
		case api.TypePreview:
			if withPreviews && ev.Preview != nil && !previews.skip(&ev, time.Now()) {
				frame := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), 2) // PREVIEW_IMAGE, PNG
				err = ws.send(wsBinary, append(frame, ev.Preview.PNG...))
			}
		case api.TypeResult:
			var res ImageResult
			json.Unmarshal(ev.Result, &res)
			var images []map[string]string
			for _, im := range res.Images {
				images = append(images, map[string]string{"filename": comfyFilename(id, im.Index), "subfolder": "", "type": "output"})
			}
			if err = msg("executed", map[string]any{"node": p.Output, "display_node": p.Output, "output": map[string]any{"images": images}, "prompt_id": id}); err == nil {
				if err = msg("execution_success", map[string]any{"prompt_id": id, "timestamp": now()}); err == nil {
					err = msg("executing", map[string]any{"node": nil, "prompt_id": id})
				}
			}
		case api.TypeError:
			node := nodeOf[ev.Stage]
			if ev.Error != nil && nodeOf[ev.Error.Stage] != "" {
				node = nodeOf[ev.Error.Stage]
			}
			if node == "" {
				node = nodeOf["load"]
			}
			class := p.Graph[node].ClassType
			if ev.Error != nil && strings.Contains(ev.Error.Message, "cancel") {
				err = msg("execution_interrupted", map[string]any{"prompt_id": id, "node_id": node, "node_type": class, "executed": []string{}, "timestamp": now()})
			} else {
				m := "failed"
				if ev.Error != nil {
					m = ev.Error.Message
				}
				err = msg("execution_error", map[string]any{"prompt_id": id, "node_id": node, "node_type": class, "executed": []string{},
					"exception_message": m, "exception_type": "glassbox." + ev.Stage, "traceback": []string{}, "current_inputs": map[string]any{},
					"current_outputs": map[string]any{}, "timestamp": now()})
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
