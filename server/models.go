package server

import (
	"net/http"
	"strings"
	"time"
)

// openAIModel is one entry of GET /v1/models: OpenAI's fields, then
// glassbox's (clients ignore fields they do not know).
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	ModelInfo
}

type openAIModelList struct {
	Object string        `json:"object"`
	Data   []openAIModel `json:"data"`
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	models, err := s.cfg.Backend.Models(r.Context())
	if err != nil {
		writeOpenAIError(w, toError(err))
		return
	}
	out := openAIModelList{Object: "list", Data: []openAIModel{}}
	for _, m := range models {
		out.Data = append(out.Data, openAIModel{ID: m.Name, Object: "model", Created: m.Modified.Unix(),
			OwnedBy: "glassbox", ModelInfo: m})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	models, err := s.cfg.Backend.Models(r.Context())
	if err != nil {
		writeOpenAIError(w, toError(err))
		return
	}
	for _, m := range models {
		if m.Name == name {
			writeJSON(w, http.StatusOK, openAIModel{ID: m.Name, Object: "model", Created: m.Modified.Unix(),
				OwnedBy: "glassbox", ModelInfo: m})
			return
		}
	}
	writeOpenAIError(w, &Error{Status: http.StatusNotFound, Stage: "load", Code: "model_not_found", Param: "model",
		Message: "model " + quote(name) + " not found"})
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// Ollama's model descriptions.

type ollamaDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

type ollamaModel struct {
	Name       string        `json:"name"`
	Model      string        `json:"model"`
	ModifiedAt time.Time     `json:"modified_at,omitzero"`
	Size       int64         `json:"size"`
	Digest     string        `json:"digest"`
	Details    ollamaDetails `json:"details"`
	ExpiresAt  *time.Time    `json:"expires_at,omitempty"`
	SizeVRAM   *int64        `json:"size_vram,omitempty"`
	Verdict    string        `json:"verdict,omitempty"` // glassbox: the planner's verdict
	Worker     string        `json:"worker,omitempty"`  // glassbox: the cluster worker it is resident on
}

func ollamaDetailsOf(m ModelInfo) ollamaDetails {
	d := ollamaDetails{ParentModel: m.Parent, Format: "gguf", Family: m.Family, ParameterSize: m.ParameterSize,
		QuantizationLevel: m.Quantization, Families: []string{}}
	if m.Family != "" {
		d.Families = []string{m.Family}
	}
	return d
}

func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	models, err := s.cfg.Backend.Models(r.Context())
	if err != nil {
		writeOllamaError(w, toError(err))
		return
	}
	out := struct {
		Models []ollamaModel `json:"models"`
	}{Models: []ollamaModel{}}
	for _, m := range models {
		out.Models = append(out.Models, ollamaModel{Name: m.Name, Model: m.Name, ModifiedAt: m.Modified,
			Size: m.Size, Digest: m.Digest, Details: ollamaDetailsOf(m), Verdict: m.Verdict})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ollamaPS(w http.ResponseWriter, r *http.Request) {
	running, err := s.running(r.Context())
	if err != nil {
		writeOllamaError(w, toError(err))
		return
	}
	out := struct {
		Models []ollamaModel `json:"models"`
	}{Models: []ollamaModel{}}
	for _, m := range running {
		exp := time.Date(2318, 1, 1, 0, 0, 0, 0, time.UTC) // kept until evicted: Ollama's far future
		if m.ExpiresAt != nil {
			exp = *m.ExpiresAt
		}
		var vram int64
		out.Models = append(out.Models, ollamaModel{Name: m.Name, Model: m.Name, Size: m.Bytes, Digest: m.Digest,
			Details: ollamaDetailsOf(m.ModelInfo), ExpiresAt: &exp, SizeVRAM: &vram, Worker: m.Worker})
	}
	writeJSON(w, http.StatusOK, out)
}

// ollamaModelField is the model an Ollama request names: "model", or
// "name" as older clients send it.
type ollamaModelField struct {
	Model string `json:"model"`
	Name  string `json:"name"`
}

// model returns the model named, or a 400 saying what to give (want).
func (f ollamaModelField) model(want string) (string, *Error) {
	if f.Model != "" {
		return f.Model, nil
	}
	if f.Name != "" {
		return f.Name, nil
	}
	return "", badRequest("missing_model", "model", "model is required%s", want)
}

type ollamaShowRequest struct {
	ollamaModelField
	Verbose bool `json:"verbose"`
}

type ollamaShowResponse struct {
	License      string         `json:"license,omitempty"`
	Modelfile    string         `json:"modelfile"`
	Parameters   string         `json:"parameters"`
	Template     string         `json:"template"`
	System       string         `json:"system,omitempty"`
	Details      ollamaDetails  `json:"details"`
	ModelInfo    map[string]any `json:"model_info"`
	Capabilities []string       `json:"capabilities"`
	ModifiedAt   time.Time      `json:"modified_at,omitzero"`
}

func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req ollamaShowRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeOllamaError(w, e)
		return
	}
	name, e := req.model("")
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	d, err := s.cfg.Backend.Show(r.Context(), name)
	if err != nil {
		writeOllamaError(w, toError(err))
		return
	}
	caps := d.Capabilities
	if caps == nil {
		caps = []string{"completion"}
	}
	info := d.Metadata
	if info == nil {
		info = map[string]any{}
	}
	out := ollamaShowResponse{
		Modelfile:  "# glassbox serves GGUF files directly; there is no Modelfile.\nFROM " + d.Path + "\n",
		Parameters: d.Parameters, Template: d.Template, Details: ollamaDetailsOf(d.ModelInfo),
		ModelInfo: info, Capabilities: caps, ModifiedAt: d.Modified}
	if p, err := s.cfg.Backend.Profile(r.Context(), name); err == nil && p != nil {
		// A made model: the Modelfile that made it, its parameters in
		// show's PARAMETER-less form, its system message and license.
		out.Modelfile, out.System, out.License = p.Modelfile(name), p.System, p.License
		out.Parameters = strings.ReplaceAll(p.ParametersText(), "PARAMETER ", "")
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": Version})
}
