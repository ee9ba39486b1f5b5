package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Models made from models (Ollama's create and its Modelfile): the same
// weights under a new name, with a system message for conversations that
// bring none and default options that a request's own override. The
// backend stores them (Backend.Create) and reports them (Backend.Profile);
// every API applies them (withProfile).

// ModelProfile is what a model was made with.
type ModelProfile struct {
	From       string         `json:"from,omitempty"`
	System     string         `json:"system,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"` // Ollama's option names
	License    string         `json:"license,omitempty"`
}

// CreateRequest makes model Name from model From with a profile (the
// base's own laid under it by the backend), or, with Files, from an
// uploaded GGUF file: file name → blob digest (Ollama's create of a
// local file, its bytes sent first to /api/blobs).
type CreateRequest struct {
	Name  string
	Files map[string]string
	ModelProfile
}

// ollamaCreateRequest is Ollama's /api/create body: the fields of its
// current API (from, system, parameters, license, ...) or the older
// Modelfile text.
type ollamaCreateRequest struct {
	ollamaModelField
	From       string            `json:"from"`
	System     string            `json:"system"`
	Parameters map[string]any    `json:"parameters"`
	License    json.RawMessage   `json:"license"` // a string or a list of them
	Modelfile  string            `json:"modelfile"`
	Template   string            `json:"template"`
	Files      map[string]string `json:"files"`
	Adapters   json.RawMessage   `json:"adapters"`
	Messages   json.RawMessage   `json:"messages"`
	Quantize   string            `json:"quantize"`
	Stream     *bool             `json:"stream"`
}

// ollamaCreate is POST /api/create: a model from a stored one, with a
// system message and default parameters.
func (s *Server) ollamaCreate(w http.ResponseWriter, r *http.Request) {
	var body ollamaCreateRequest
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOllamaError(w, e)
		return
	}
	req, e := body.request()
	if e != nil {
		writeOllamaError(w, e)
		return
	}
	if err := s.cfg.Backend.Create(r.Context(), req); err != nil {
		writeOllamaError(w, toError(err))
		return
	}
	if body.Stream != nil && !*body.Stream {
		writeJSON(w, http.StatusOK, ollamaPullStatus{Status: "success", Model: req.Name})
		return
	}
	sw := newStreamWriter(w, "application/x-ndjson", s.cfg.WriteTimeout)
	if req.From != "" {
		sw.ndjson(ollamaPullStatus{Status: "using existing model " + req.From})
	} else {
		for name, digest := range req.Files {
			sw.ndjson(ollamaPullStatus{Status: "importing " + name, Digest: digest})
		}
	}
	sw.ndjson(ollamaPullStatus{Status: "writing manifest"})
	sw.ndjson(ollamaPullStatus{Status: "success", Model: req.Name})
}

// request checks an /api/create body and turns it into a CreateRequest:
// what glassbox cannot make is refused by name, never dropped.
func (b *ollamaCreateRequest) request() (*CreateRequest, *Error) {
	name, e := b.model("")
	if e != nil {
		return nil, e
	}
	req := &CreateRequest{Name: name, ModelProfile: ModelProfile{From: b.From, System: b.System, Parameters: b.Parameters}}
	if b.Modelfile != "" {
		mf, e := ParseModelfile(b.Modelfile)
		if e != nil {
			return nil, e
		}
		if req.From == "" {
			req.From = mf.From
		}
		if req.System == "" {
			req.System = mf.System
		}
		req.License = mf.License
		if len(mf.Parameters) > 0 {
			req.Parameters = maps.Clone(mf.Parameters)
			maps.Copy(req.Parameters, b.Parameters)
		}
	}
	if lic := strings.TrimSpace(string(b.License)); lic != "" && lic != "null" {
		var one string
		var many []string
		switch {
		case json.Unmarshal(b.License, &one) == nil:
			req.License = one
		case json.Unmarshal(b.License, &many) == nil:
			req.License = strings.Join(many, "\n\n")
		default:
			return nil, badRequest("invalid_value", "license", "license must be a string or a list of strings")
		}
	}
	for _, f := range []struct {
		name string
		set  bool
		why  string
	}{
		{"files", len(b.Files) > 1 || len(b.Files) == 1 && !ggufFiles(b.Files), "one GGUF file is what glassbox imports (safetensors directories are not supported)"},
		{"adapters", len(b.Adapters) > 0 && string(b.Adapters) != "null" && string(b.Adapters) != "{}", "LoRA adapters are not supported"},
		{"messages", len(b.Messages) > 0 && string(b.Messages) != "null" && string(b.Messages) != "[]", "stored example messages are not supported; send them with each chat"},
		{"template", b.Template != "", "a TEMPLATE is a Go template; glassbox renders the model's own Jinja chat template"},
		{"quantize", b.Quantize != "", "quantize a file with 'glassbox quantize', then import it"},
	} {
		if f.set {
			return nil, badRequest("unsupported", f.name, "%s: %s", f.name, f.why)
		}
	}
	req.Files = b.Files
	switch {
	case req.From == "" && len(req.Files) == 0:
		return nil, badRequest("missing_model", "from", "from (the model to make it from) or files (an uploaded GGUF file) is required")
	case req.From != "" && len(req.Files) > 0:
		return nil, badRequest("invalid_value", "files", "from and files both name the weights: give one")
	}
	if err := CheckParameters(req.Parameters); err != nil {
		return nil, err
	}
	return req, nil
}

// ggufFiles reports whether every file named is a .gguf file.
func ggufFiles(files map[string]string) bool {
	for name := range files {
		if !strings.HasSuffix(strings.ToLower(name), ".gguf") {
			return false
		}
	}
	return true
}

// CheckParameters reports a profile parameter no request could set.
func CheckParameters(params map[string]any) *Error {
	o := ollamaDefaults()
	if e := applyOllamaOptions(&o, params); e != nil {
		e.Param = strings.Replace(e.Param, "options.", "parameters.", 1)
		e.Message = strings.ReplaceAll(e.Message, "options.", "parameters.")
		return e
	}
	return nil
}

// ParseModelfile reads the Modelfile instructions glassbox can honour:
// FROM, SYSTEM, PARAMETER (repeated; stop accumulates), LICENSE, and
// comments. TEMPLATE, ADAPTER and MESSAGE are refused by name. Values may
// be quoted, and triple-quoted across lines. A parameter's value is a
// number or true/false when it reads as one, else text.
func ParseModelfile(text string) (*CreateRequest, *Error) {
	req := &CreateRequest{}
	bad := func(line int, format string, args ...any) *Error {
		return badRequest("invalid_modelfile", "modelfile", "Modelfile line %d: %s", line, fmt.Sprintf(format, args...))
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		start := n
		if strings.HasPrefix(rest, `"""`) {
			body := rest[3:]
			for !strings.Contains(body, `"""`) {
				if !sc.Scan() {
					return nil, bad(start, `a """ value is not closed`)
				}
				n++
				body += "\n" + sc.Text()
			}
			end := strings.Index(body, `"""`)
			if strings.TrimSpace(body[end+3:]) != "" {
				return nil, bad(n, `text after a closing """`)
			}
			rest = body[:end]
		} else if len(rest) >= 2 && rest[0] == '"' && rest[len(rest)-1] == '"' {
			rest = rest[1 : len(rest)-1]
		}
		switch strings.ToUpper(cmd) {
		case "FROM":
			req.From = rest
		case "SYSTEM":
			req.System = rest
		case "LICENSE":
			if req.License != "" {
				req.License += "\n\n"
			}
			req.License += rest
		case "PARAMETER":
			k, v, ok := strings.Cut(rest, " ")
			v = strings.TrimSpace(v)
			if !ok || v == "" {
				return nil, bad(start, "PARAMETER needs a name and a value")
			}
			if !parameterName.MatchString(k) {
				return nil, bad(start, "PARAMETER %q is not a parameter name (letters, digits and _)", k)
			}
			if !isOllamaOption(k) { // as Ollama's parser refuses it
				return nil, bad(start, "unknown parameter %q%s", k, didYouMean(nearest(k, ollamaOptionNames)))
			}
			if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			if req.Parameters == nil {
				req.Parameters = map[string]any{}
			}
			if k == "stop" {
				stops, _ := req.Parameters["stop"].([]any)
				req.Parameters["stop"] = append(stops, v)
				continue
			}
			req.Parameters[k] = parameterValue(v)
		case "TEMPLATE":
			return nil, bad(start, "TEMPLATE is a Go template; glassbox renders the model's own Jinja chat template")
		case "ADAPTER":
			return nil, bad(start, "ADAPTER (LoRA) is not supported")
		case "MESSAGE":
			return nil, bad(start, "MESSAGE is not supported; send example messages with each chat")
		default:
			return nil, bad(start, "unknown instruction %q (glassbox reads FROM, SYSTEM, PARAMETER, LICENSE)", cmd)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, badRequest("invalid_modelfile", "modelfile", "Modelfile: %v", err)
	}
	if req.From == "" {
		return nil, badRequest("invalid_modelfile", "modelfile", "Modelfile: no FROM line (the model to make it from)")
	}
	return req, nil
}

// parameterName is what a Modelfile parameter may be called (Ollama's are
// such: num_ctx, temperature, stop).
var parameterName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parameterValue reads a Modelfile value as a number or a boolean where it
// is one.
func parameterValue(v string) any {
	if i, err := strconv.ParseInt(v, 10, 64); err == nil {
		return float64(i) // as JSON decodes it
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f
	}
	if b, err := strconv.ParseBool(v); err == nil {
		return b
	}
	return v
}

// withProfile returns a request's options over model's profile parameters
// (a request's own win) and the profile (nil when the model has none).
func (s *Server) withProfile(ctx context.Context, model string, options map[string]any) (map[string]any, *ModelProfile) {
	p, err := s.cfg.Backend.Profile(ctx, model)
	if err != nil || p == nil {
		return options, nil // an unknown model fails where it is loaded, with its stage
	}
	merged := maps.Clone(p.Parameters)
	if merged == nil {
		merged = map[string]any{}
	}
	maps.Copy(merged, options)
	return merged, p
}

// systemFirst returns msgs with the profile's system message first when
// they have none of their own.
func systemFirst(p *ModelProfile, msgs []Message) []Message {
	if p == nil || p.System == "" || slices.ContainsFunc(msgs, func(m Message) bool { return m.Role == "system" || m.Role == "developer" }) {
		return msgs
	}
	return append([]Message{{Role: "system", Content: p.System}}, msgs...)
}

// Modelfile renders a profile as the Modelfile that makes it (Ollama's
// show: modelfile).
func (p *ModelProfile) Modelfile(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Modelfile of %s\nFROM %s\n", name, p.From)
	if p.System != "" {
		fmt.Fprintf(&b, "SYSTEM %s\n", modelfileValue(p.System))
	}
	b.WriteString(p.ParametersText())
	if p.License != "" {
		fmt.Fprintf(&b, "LICENSE %s\n", modelfileValue(p.License))
	}
	return b.String()
}

// modelfileValue writes v as a Modelfile value: as it is on one line,
// else triple-quoted (a value that holds """ cannot be written).
func modelfileValue(v string) string {
	if !strings.ContainsAny(v, "\r\n") && !strings.HasPrefix(v, `"`) && strings.TrimSpace(v) == v {
		return v
	}
	return `"""` + v + `"""`
}

// ParametersText is the parameters as Modelfile PARAMETER lines, sorted
// (Ollama's show: parameters, without the keyword).
func (p *ModelProfile) ParametersText() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(p.Parameters)) {
		vs, ok := p.Parameters[k].([]any)
		if !ok {
			vs = []any{p.Parameters[k]}
		}
		for _, v := range vs {
			text := fmt.Sprint(v)
			if str, ok := v.(string); ok && (str == "" || strings.TrimSpace(str) != str || strings.HasPrefix(str, `"`)) {
				text = `"` + str + `"` // read back as it is: the parser takes one pair of quotes off
			}
			fmt.Fprintf(&b, "PARAMETER %s %s\n", k, text)
		}
	}
	return b.String()
}
