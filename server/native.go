package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// jobRequest is the body of POST /v1/jobs.
type jobRequest struct {
	// Kind is "pull" for a download into the store (model: what
	// glassbox pull takes); otherwise the job is a generation (text or
	// chat) or, with input, an embedding, and kind may say so or be empty.
	Kind                  string          `json:"kind"`
	Model                 string          `json:"model"`
	Prompt                string          `json:"prompt"`
	System                string          `json:"system"`
	Messages              []Message       `json:"messages"`
	Raw                   bool            `json:"raw"`
	Format                json.RawMessage `json:"format"` // "json" or a JSON schema, as Ollama's
	Options               map[string]any  `json:"options"`
	KeepAlive             json.RawMessage `json:"keep_alive"`
	ollamaLogprobsRequest                 // on the token events and in the result
	// Tools offered to a chat (OpenAI's list of {"type": "function",
	// "function": {…}}) and the choice: auto, none, required or a
	// function's name; the result's tool_calls are the calls made.
	Tools      json.RawMessage `json:"tools"`
	ToolChoice string          `json:"tool_choice"`
	// An embedding job instead: input (a string or an array of them)
	// and how its vectors are made.
	Input      json.RawMessage `json:"input"`
	Pooling    string          `json:"pooling"`   // mean, last, cls; "": the model's
	Normalize  *bool           `json:"normalize"` // default true
	Truncate   bool            `json:"truncate"`
	Dimensions int             `json:"dimensions"`
}

// jobCreated answers POST /v1/jobs.
type jobCreated struct {
	api.Job
	EventsURL string `json:"events_url"`
}

// heartbeat is how often an idle event stream gets an SSE comment, so
// proxies keep it open and a dead client is noticed.
var heartbeat = 15 * time.Second

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) {
	var req jobRequest
	body, e := s.readBody(w, r)
	if e == nil {
		e = decodeJSON(body, &req)
	}
	if e == nil && req.Kind == "image" {
		s.createImageJob(w, r, body)
		return
	}
	if e == nil && req.Kind == "video" {
		s.createVideoJob(w, r, body)
		return
	}
	if e == nil {
		e = checkJobFields(body)
	}
	if e != nil {
		writeNativeError(w, e)
		return
	}
	switch req.Kind {
	case "pull":
		s.createPullJob(w, &req)
		return
	case "":
	case "embed", "text", "chat":
		if (req.Kind == "embed") != (len(req.Input) > 0) {
			writeNativeError(w, badRequest("invalid_request", "kind", "a job of kind %s takes %s", req.Kind,
				map[bool]string{true: "input", false: "a prompt or messages, not input"}[req.Kind == "embed"]))
			return
		}
	default:
		writeNativeError(w, badRequest("invalid_request", "kind", "kind %q is not one of text, chat, embed, image, video, pull", req.Kind))
		return
	}
	if len(req.Input) > 0 {
		s.createEmbedJob(w, &req)
		return
	}
	options, prof := s.withProfile(r.Context(), req.Model, req.Options)
	opts, ka, e := optionsWith(nativeDefaults(), req.Model, req.Format, options, req.KeepAlive)
	if e == nil {
		e = req.apply(&opts)
	}
	if e == nil && req.Prompt == "" && len(req.Messages) == 0 {
		e = badRequest("missing_prompt", "prompt", "a prompt or messages are required")
	}
	for i, m := range req.Messages {
		if e != nil {
			break
		}
		e = checkRole(m.Role, i)
	}
	if e != nil {
		writeNativeError(w, e)
		return
	}
	greq := &GenerateRequest{Model: req.Model, Prompt: req.Prompt, System: req.System, Messages: req.Messages,
		Raw: req.Raw, Options: opts, KeepAlive: ka}
	if len(greq.Messages) > 0 {
		greq.Messages = systemFirst(prof, greq.Messages)
	} else if greq.System == "" && prof != nil {
		greq.System = prof.System
	}
	tools, toolsJSON, e := parseTools(req.Tools)
	if e == nil && len(tools) > 0 && len(req.Messages) == 0 {
		e = badRequest("invalid_request", "tools", "tools are offered to a chat: give messages")
	}
	if e == nil {
		e = applyTools(greq, tools, toolsJSON, req.ToolChoice)
	}
	if e != nil {
		writeNativeError(w, e)
		return
	}
	kind := "text"
	if len(req.Messages) > 0 {
		kind = "chat"
	}
	// A native job belongs to the server: it outlives this request.
	g, e := s.startGeneration(s.base, jobSpec(kind, greq), greq)
	if e != nil {
		writeNativeError(w, e)
		return
	}
	writeJobCreated(w, g)
}

// createPullJob starts a download into the store that, like every native
// job, runs on when its client leaves; the Models page follows its events.
func (s *Server) createPullJob(w http.ResponseWriter, req *jobRequest) {
	if req.Model == "" {
		writeNativeError(w, badRequest("missing_model", "model", "model is required: a URL, hf.co/OWNER/REPO[:QUANT] or a name of Ollama's registry"))
		return
	}
	g, e := s.startPull(s.base, req.Model)
	if e != nil {
		writeNativeError(w, e)
		return
	}
	writeJobCreated(w, g)
}

// createEmbedJob starts an embedding job (a request with input): its
// result event carries the vectors.
func (s *Server) createEmbedJob(w http.ResponseWriter, req *jobRequest) {
	ereq := &EmbedRequest{Model: req.Model, Pooling: req.Pooling, Normalize: req.Normalize == nil || *req.Normalize,
		Truncate: req.Truncate, Dimensions: req.Dimensions}
	var e *Error
	switch {
	case req.Prompt != "" || len(req.Messages) > 0:
		e = badRequest("invalid_request", "input", "give input (an embedding job) or a prompt or messages (a generation), not both")
	case req.Pooling != "" && req.Pooling != "mean" && req.Pooling != "last" && req.Pooling != "cls":
		e = badRequest("invalid_value", "pooling", `pooling must be "mean", "last" or "cls", not %q`, req.Pooling)
	default:
		e = checkDimensions(req.Dimensions)
	}
	if e == nil {
		ereq.Input, _, e = textInputs(req.Input, "input", false)
	}
	if e == nil {
		e = s.embedSettings(s.base, ereq, req.Options, req.KeepAlive)
	}
	if e != nil {
		writeNativeError(w, e)
		return
	}
	g, e := s.startEmbedding(s.base, embedSpec(ereq), ereq)
	if e != nil {
		writeNativeError(w, e)
		return
	}
	writeJobCreated(w, g)
}

// writeJobCreated answers a POST /v1/jobs that started job g.
func writeJobCreated(w http.ResponseWriter, g *generation) {
	w.Header().Set("Location", "/v1/jobs/"+g.job.ID)
	writeJSON(w, http.StatusAccepted, jobCreated{Job: g.job, EventsURL: "/v1/jobs/" + g.job.ID + "/events"})
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	job, err := s.cfg.Jobs.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	writeJSON(w, http.StatusOK, job)
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.cfg.Jobs.Cancel(r.Context(), id); err != nil {
		writeNativeError(w, toError(err))
		return
	}
	job, err := s.cfg.Jobs.Get(r.Context(), id)
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	writeJSON(w, http.StatusAccepted, job)
}

type jobList struct {
	Jobs []api.Job `json:"jobs"`
	// Next is the "before" value for the next (older) page; empty at the end.
	Next string `json:"next,omitempty"`
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeNativeError(w, badRequest("invalid_value", "limit", "limit %q must be a whole number in 1..1000", v))
			return
		}
		limit = n
	}
	jobs, err := s.cfg.Jobs.List(r.Context(), r.URL.Query().Get("before"), limit+1)
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	out := jobList{Jobs: jobs}
	if len(jobs) > limit {
		out.Jobs = jobs[:limit]
		out.Next = jobs[limit-1].ID
	}
	if out.Jobs == nil {
		out.Jobs = []api.Job{}
	}
	writeJSON(w, http.StatusOK, out)
}

// jobEvents streams a job's events as SSE: "id:" is the event's sequence
// number, "event:" its type, "data:" the api.Event as JSON. A client that
// reconnects with Last-Event-ID (or ?after=N) gets every event after that
// one exactly once. When the job has ended and its last event is sent, the
// stream sends "event: end" (no id) and closes, so an EventSource knows
// not to reconnect.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after := int64(0)
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("after")
	}
	if last != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(last), 10, 64)
		if err != nil || n < 0 {
			writeNativeError(w, badRequest("invalid_value", "Last-Event-ID",
				"Last-Event-ID %q must be an event sequence number (a whole number ≥ 0)", last))
			return
		}
		after = n
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st, err := s.addStream(cancel)
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	defer s.removeStream(st)
	events, err := s.cfg.Jobs.Events(ctx, id, after)
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	sw := newStreamWriter(w, "text/event-stream", s.cfg.WriteTimeout)
	w.Header().Set("X-Glassbox-Job", id)
	w.WriteHeader(http.StatusOK)
	if sw.write([]byte(": glassbox job "+id+"\n\n")) != nil {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	var previews previewLimiter
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() == nil {
					sw.sse("", "end", []byte(`{"job":"`+id+`"}`))
				}
				return
			}
			if previews.skip(&ev, time.Now()) {
				continue
			}
			b, err := json.Marshal(ev)
			if err != nil {
				return
			}
			if sw.sse(strconv.FormatInt(ev.Seq, 10), ev.Type, b) != nil {
				return // the client is gone; the job runs on
			}
		case <-tick.C:
			if sw.write([]byte(": ping\n\n")) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func (s *Server) plan(w http.ResponseWriter, r *http.Request) {
	var req PlanRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeNativeError(w, e)
		return
	}
	if req.Model == "" {
		writeNativeError(w, badRequest("missing_model", "model", "model is required"))
		return
	}
	if req.Ctx < 0 || req.Ctx > maxCtx || req.Batch < 0 || req.Batch > maxBatch || req.Parallel < 0 || req.Parallel > 1024 {
		writeNativeError(w, badRequest("invalid_value", "", "ctx (0..%d), batch (0..%d) and parallel (0..1024) are out of range: %d, %d, %d",
			maxCtx, maxBatch, req.Ctx, req.Batch, req.Parallel))
		return
	}
	p, err := s.cfg.Backend.Plan(r.Context(), &req)
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(append(p, '\n'))
}

type queueInfo struct {
	Running  int `json:"running"`
	Waiting  int `json:"waiting"`
	Parallel int `json:"parallel"`
	MaxQueue int `json:"max_queue"`
}

func (s *Server) queueInfo() queueInfo {
	run, wait, par, max := s.queue.stats()
	return queueInfo{Running: run, Waiting: wait, Parallel: par, MaxQueue: max}
}

type psResponse struct {
	Models []workerRunning `json:"models"` // the front's own, then its cluster workers'
	Queue  queueInfo       `json:"queue"`
}

// defaultsResponse is GET /v1/defaults: the sampling options a native job
// runs with when its request leaves them out (nativeDefaults), so a client
// such as the web UI shows the values that are really used.
type defaultsResponse struct {
	Options struct {
		NumPredict    int     `json:"num_predict"`
		Temperature   float32 `json:"temperature"`
		TopK          int     `json:"top_k"`
		TopP          float32 `json:"top_p"`
		MinP          float32 `json:"min_p"`
		RepeatPenalty float32 `json:"repeat_penalty"`
		RepeatLastN   int     `json:"repeat_last_n"`
	} `json:"options"`
}

func (s *Server) defaults(w http.ResponseWriter, r *http.Request) {
	d := nativeDefaults()
	var out defaultsResponse
	o := &out.Options
	o.NumPredict, o.Temperature, o.TopK, o.TopP = d.NumPredict, d.Temperature, d.TopK, d.TopP
	o.MinP, o.RepeatPenalty, o.RepeatLastN = d.MinP, d.RepeatPenalty, d.RepeatLastN
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ps(w http.ResponseWriter, r *http.Request) {
	models, err := s.running(r.Context())
	if err != nil {
		writeNativeError(w, toError(err))
		return
	}
	writeJSON(w, http.StatusOK, psResponse{Models: models, Queue: s.queueInfo()})
}

type health struct {
	Status  string    `json:"status"`
	Version string    `json:"version"`
	UptimeS float64   `json:"uptime_s"`
	Queue   queueInfo `json:"queue"`
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	h := health{Status: "ok", Version: Version, UptimeS: time.Since(s.started).Seconds(), Queue: s.queueInfo()}
	status := http.StatusOK
	if closing {
		h.Status, status = "shutting_down", http.StatusServiceUnavailable
	}
	writeJSON(w, status, h)
}

// residentReply answers POST /v1/ps/{model}/load and /unload.
type residentReply struct {
	Model  string `json:"model"`
	Action string `json:"action"` // "loaded" or "unloaded"
}

// loadModel makes a model resident: {"keep_alive": "10m"} optional.
func (s *Server) loadModel(w http.ResponseWriter, r *http.Request) {
	var req struct {
		KeepAlive json.RawMessage `json:"keep_alive"`
	}
	body, e := s.readBody(w, r)
	if e == nil && len(strings.TrimSpace(string(body))) > 0 {
		e = decodeJSON(body, &req)
	}
	var ka *time.Duration
	if e == nil {
		ka, e = parseKeepAlive(req.KeepAlive)
	}
	if e != nil {
		writeNativeError(w, e)
		return
	}
	name := r.PathValue("model")
	if err := s.cfg.Backend.Load(r.Context(), name, ka); err != nil {
		writeNativeError(w, toError(err))
		return
	}
	writeJSON(w, http.StatusOK, residentReply{Model: name, Action: "loaded"})
}

// unloadModel drops a model now, or when its running generations end.
func (s *Server) unloadModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	if err := s.cfg.Backend.Unload(r.Context(), name); err != nil {
		writeNativeError(w, toError(err))
		return
	}
	writeJSON(w, http.StatusOK, residentReply{Model: name, Action: "unloaded"})
}
