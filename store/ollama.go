package store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
)

// Models from Ollama's registry, by the names Ollama's users type:
// llama3.2, llama3.2:1b, USER/MODEL:TAG, HOST/NAMESPACE/MODEL:TAG. The
// registry speaks the Docker registry v2 protocol (an OCI distribution
// registry): a manifest per tag lists layers by media type and SHA-256
// digest — the GGUF file (application/vnd.ollama.image.model), the
// parameters (…params, JSON), the system message (…system), the license
// (…license) and a Go chat template (…template). Blobs are fetched by
// digest, so every file is verified against the hash that names it.

// DefaultOllamaRegistry is where names without a host resolve;
// GLASSBOX_OLLAMA_REGISTRY (or PullOptions.OllamaRegistry) overrides it.
const DefaultOllamaRegistry = "https://registry.ollama.ai"

// ollamaName is NAME[:TAG], NAMESPACE/NAME[:TAG] or HOST/NAMESPACE/NAME[:TAG].
var ollamaName = regexp.MustCompile(`^(?:([a-z0-9.-]+(?::[0-9]+)?)/)??(?:([a-z0-9._-]+)/)?([a-z0-9][a-z0-9._-]*)(?::([a-zA-Z0-9][a-zA-Z0-9._-]{0,127}))?$`)

// IsOllamaName reports whether ref names a model of Ollama's registry
// (and not a URL or an hf.co reference).
func IsOllamaName(ref string) bool {
	return !IsRef(ref) && ollamaName.MatchString(ref)
}

// OllamaStoreName is the name a pull of ref, a name of Ollama's
// registry, stores the model under.
func OllamaStoreName(ref string) (string, error) {
	r, err := parseOllamaName(ref, "")
	if err != nil {
		return "", err
	}
	return r.storeName(), nil
}

// OllamaRegistryOf is the registry a pull of ref would ask: the host the
// name gives, GLASSBOX_OLLAMA_REGISTRY, or Ollama's.
func OllamaRegistryOf(ref string) string {
	r, err := parseOllamaName(ref, registryFromEnv(""))
	if err != nil {
		return ""
	}
	return r.base
}

// ollamaRef is a parsed registry name.
type ollamaRef struct {
	base, namespace, model, tag string
}

func parseOllamaName(ref, registry string) (ollamaRef, error) {
	m := ollamaName.FindStringSubmatch(ref)
	if m == nil {
		return ollamaRef{}, fmt.Errorf("pull: %q is not a model name of Ollama's registry (NAME[:TAG], USER/NAME[:TAG])", ref)
	}
	r := ollamaRef{base: strings.TrimRight(registry, "/"), namespace: m[2], model: m[3], tag: m[4]}
	if m[1] != "" {
		r.base = "https://" + m[1]
	}
	if r.namespace == "" {
		r.namespace = "library"
	}
	if r.tag == "" {
		r.tag = "latest"
	}
	return r, nil
}

// storeName is the name the model is stored under: MODEL:TAG, with the
// namespace in front (NAMESPACE-MODEL:TAG) when it is not the library.
func (r ollamaRef) storeName() string {
	if r.namespace == "library" {
		return r.model + ":" + r.tag
	}
	return r.namespace + "-" + r.model + ":" + r.tag
}

func (r ollamaRef) url(kind, ref string) string {
	return fmt.Sprintf("%s/v2/%s/%s/%s/%s", r.base, r.namespace, r.model, kind, ref)
}

// ollamaLayer is one layer of a registry manifest.
type ollamaLayer struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// Media types of the layers glassbox reads.
const (
	layerModel     = "application/vnd.ollama.image.model"
	layerParams    = "application/vnd.ollama.image.params"
	layerSystem    = "application/vnd.ollama.image.system"
	layerLicense   = "application/vnd.ollama.image.license"
	layerTemplate  = "application/vnd.ollama.image.template"
	layerProjector = "application/vnd.ollama.image.projector"
	layerAdapter   = "application/vnd.ollama.image.adapter"
)

// maxSmallLayer bounds a parameters, system or license layer.
const maxSmallLayer = 1 << 20

// pullOllama downloads a model of Ollama's registry: its GGUF layer into
// the store (resumed when cut, verified against its digest), its
// parameters, system message and license into the model's profile.
func (s *Store) pullOllama(ctx context.Context, ref string, o *PullOptions) (Entry, error) {
	r, err := parseOllamaName(ref, o.OllamaRegistry)
	if err != nil {
		return Entry{}, err
	}
	name := o.Name
	if name == "" {
		name = r.storeName()
	}
	if err := CheckName(name); err != nil {
		return Entry{}, err
	}
	if _, err := os.Stat(s.manifestPath(name)); err == nil {
		return Entry{}, fmt.Errorf("model %q already exists (remove it first with 'glassbox rm %s')", name, name)
	}
	mu := r.url("manifests", r.tag)
	resp, err := o.get(ctx, mu, http.Header{"Accept": {"application/vnd.docker.distribution.manifest.v2+json"}})
	if e, ok := err.(*PullError); ok && e.Status == http.StatusNotFound {
		e.Err = fmt.Errorf("no model %s:%s in the registry %s", r.namespace+"/"+r.model, r.tag, r.base)
	}
	if err != nil {
		return Entry{}, err
	}
	var man struct {
		Layers []ollamaLayer `json:"layers"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&man)
	resp.Body.Close()
	if err != nil {
		return Entry{}, &PullError{URL: mu, Err: fmt.Errorf("bad manifest: %w", err)}
	}
	var model *ollamaLayer
	var p Profile
	for i := range man.Layers {
		l := &man.Layers[i]
		switch l.MediaType {
		case layerModel:
			if model != nil {
				return Entry{}, &PullError{URL: mu, Err: fmt.Errorf("the manifest has two model layers")}
			}
			model = l
		case layerParams, layerSystem, layerLicense:
			b, err := s.smallLayer(ctx, r, l, o)
			if err != nil {
				return Entry{}, err
			}
			switch l.MediaType {
			case layerParams:
				if err := json.Unmarshal(b, &p.Parameters); err != nil {
					return Entry{}, &PullError{URL: r.url("blobs", l.Digest), Err: fmt.Errorf("bad parameters layer: %w", err)}
				}
			case layerSystem:
				p.System = string(b)
			default:
				if p.License != "" {
					p.License += "\n\n"
				}
				p.License += string(b)
			}
		case layerTemplate:
			o.Logf("the registry's chat template is a Go template glassbox does not render; the GGUF file's own (Jinja) template is used")
		case layerProjector, layerAdapter:
			o.Logf("the registry's %s layer is not used (glassbox runs the text model)", strings.TrimPrefix(l.MediaType, "application/vnd.ollama.image."))
		}
	}
	if model == nil {
		return Entry{}, &PullError{URL: mu, Err: fmt.Errorf("the manifest has no model layer (%s)", layerModel)}
	}
	want, ok := strings.CutPrefix(model.Digest, "sha256:")
	if !ok || !sha256RE.MatchString(want) {
		return Entry{}, &PullError{URL: mu, Err: fmt.Errorf("model layer digest %q is not a SHA-256", model.Digest)}
	}
	src := r.url("blobs", model.Digest)
	part := s.partPath(name, "part")
	if err := s.download(ctx, src, part, model.Size, o); err != nil {
		return Entry{}, err
	}
	return s.finish(part, want, "the manifest says", Entry{Name: name, Source: src, Ref: ref, Profile: p})
}

// smallLayer fetches a parameters, system or license layer and checks it
// against its digest.
func (s *Store) smallLayer(ctx context.Context, r ollamaRef, l *ollamaLayer, o *PullOptions) ([]byte, error) {
	u := r.url("blobs", l.Digest)
	if l.Size > maxSmallLayer {
		return nil, &PullError{URL: u, Err: fmt.Errorf("a %s layer of %d bytes is more than the %d allowed", l.MediaType, l.Size, maxSmallLayer)}
	}
	resp, err := o.get(ctx, u, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSmallLayer+1))
	if err != nil {
		return nil, &PullError{URL: u, Err: err}
	}
	if got := "sha256:" + HashString(b); got != l.Digest {
		return nil, &PullError{URL: u, Err: fmt.Errorf("SHA-256 mismatch: got %s, the manifest says %s", got, l.Digest)}
	}
	return b, nil
}
