package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/glassbox-ai/glassbox/api"
)

// Model management in Ollama's dialect: /api/pull downloads a model into
// the store (as `glassbox pull` does: a URL or hf.co/OWNER/REPO[:QUANT],
// resumed when cut, checked against the published SHA-256), /api/delete
// removes one. A pull is a job of kind "pull" whose load stage counts the
// bytes; it takes no generation slot. The reference pulled names the
// model afterwards, as in Ollama.

type ollamaPullRequest struct {
	ollamaModelField
	Stream *bool `json:"stream"`
}

// ollamaPullStatus is one line of a pull's progress, as Ollama writes it.
type ollamaPullStatus struct {
	Status    string `json:"status"`
	Digest    string `json:"digest,omitempty"`
	Total     int64  `json:"total,omitempty"`
	Completed int64  `json:"completed,omitempty"`
	Model     string `json:"model,omitempty"` // glassbox: the name the model is stored under, on success
}

func (s *Server) ollamaPull(w http.ResponseWriter, r *http.Request) {
	var body ollamaPullRequest
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOllamaError(w, e)
		return
	}
	ref, e := body.model(": a URL or hf.co/OWNER/REPO[:QUANT]")
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	g, e := s.startPull(ctx, ref)
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	w.Header().Set("X-Glassbox-Job", g.job.ID)
	if body.Stream != nil && !*body.Stream {
		select {
		case <-g.done:
		case <-ctx.Done():
			return
		}
		if g.err != nil {
			writeOllamaError(w, pullError(g.err))
			return
		}
		writeJSON(w, http.StatusOK, ollamaPullStatus{Status: "success", Model: g.name})
		return
	}
	events, err := s.cfg.Jobs.Events(ctx, g.job.ID, 0)
	if err != nil {
		writeOllamaError(w, toError(err))
		return
	}
	sw := newStreamWriter(w, "application/x-ndjson", s.cfg.WriteTimeout)
	sw.ndjson(ollamaPullStatus{Status: "pulling manifest"})
	for ev := range events {
		if ev.Type == api.TypeProgress && ev.Stage == "load" && ev.Progress != nil {
			if sw.ndjson(ollamaPullStatus{Status: "pulling " + ref, Digest: ref, Total: ev.Progress.Total, Completed: ev.Progress.Done}) != nil {
				return // the client left: the request's context ends the pull (a later pull resumes it)
			}
		}
	}
	select {
	case <-g.done:
	case <-ctx.Done():
		return
	}
	if g.err != nil {
		sw.ndjson(pullError(g.err).ollama())
		return
	}
	sw.ndjson(ollamaPullStatus{Status: "verifying sha256 digest"})
	sw.ndjson(ollamaPullStatus{Status: "writing manifest"})
	sw.ndjson(ollamaPullStatus{Status: "success", Model: g.name})
}

// startPull starts the download of ref as a job of kind "pull" that ends
// with ctx: Ollama's pull ends with its client (a later pull resumes it),
// the jobs API's belongs to the server. Its result is {"name"}: the name
// the model is stored under.
func (s *Server) startPull(ctx context.Context, ref string) (*generation, *Error) {
	params, _ := json.Marshal(map[string]string{"model": ref}) // plain data: cannot fail
	return s.startWork(ctx, JobSpec{Kind: "pull", Model: ref, Params: params}, nil, false,
		func(ctx context.Context, g *generation) (any, error) {
			name, err := s.cfg.Backend.Pull(ctx, ref)
			g.name = name
			return map[string]string{"name": name}, err
		})
}

// pullError is a failed pull's error: a download that failed is the
// source's failure, a 502, not the server's.
func pullError(err error) *Error {
	e := toError(err)
	if e.Status == http.StatusInternalServerError && e.Stage == "load" {
		e.Status, e.Code = http.StatusBadGateway, "pull_failed"
	}
	return e
}

type ollamaCopyRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// ollamaCopy is POST /api/copy: the model under a second name.
func (s *Server) ollamaCopy(w http.ResponseWriter, r *http.Request) {
	var body ollamaCopyRequest
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOllamaError(w, e)
		return
	}
	if body.Source == "" || body.Destination == "" {
		writeOllamaError(w, badRequest("missing_model", "source", "source and destination are required"))
		return
	}
	if err := s.cfg.Backend.Copy(r.Context(), body.Source, body.Destination); err != nil {
		writeOllamaError(w, toError(err))
		return
	}
	w.WriteHeader(http.StatusOK)
}

type ollamaDeleteRequest struct{ ollamaModelField }

// ollamaDelete is DELETE /api/delete: the model leaves memory and the
// store.
func (s *Server) ollamaDelete(w http.ResponseWriter, r *http.Request) {
	var body ollamaDeleteRequest
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOllamaError(w, e)
		return
	}
	name, e := body.model("")
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	if err := s.cfg.Backend.Delete(r.Context(), name); err != nil {
		writeOllamaError(w, toError(err))
		return
	}
	w.WriteHeader(http.StatusOK)
}
