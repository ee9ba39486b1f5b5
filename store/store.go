// Package store is the local model store: a folder (by default
// $GLASSBOX_HOME/models) that holds GGUF files by name, each beside a small
// JSON manifest recording its size, SHA-256 and where it came from.
//
// Files are imported by hard link when possible (same file system) or by
// copy, and downloaded by Pull with resume and verification. A file only
// ever appears under its real name by an atomic rename of a complete,
// verified file: a crash leaves at most a partial file in .partial/.
//
// Imports: gguf, internal/home, standard library.
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/atomicfile"
	"github.com/glassbox-ai/glassbox/internal/home"
)

// Store is a model folder.
type Store struct {
	Dir string
}

// Entry describes one stored model.
type Entry struct {
	Name   string    `json:"name"`
	File   string    `json:"file"` // file name inside the store
	Bytes  int64     `json:"bytes"`
	SHA256 string    `json:"sha256"`
	Source string    `json:"source"`        // path or URL it came from
	Ref    string    `json:"ref,omitempty"` // the reference it was pulled by (hf.co/OWNER/REPO:Q4_K_M), also a name for it
	Added  time.Time `json:"added"`
	From   string    `json:"from,omitempty"` // the model it was made from (Create)
	Profile

	Path string `json:"-"` // absolute path of the model file
}

// Profile is what a model made from another adds to its file (Ollama's
// create, a Modelfile's SYSTEM, PARAMETER and LICENSE): a system message
// for conversations that bring none, and default options (Ollama's option
// names: temperature, num_ctx, stop, ...) that a request's own override.
type Profile struct {
	System     string         `json:"system,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"`
	License    string         `json:"license,omitempty"`
}

// Over returns p laid over base: p's system and license where it has
// them, base's parameters with p's set over them.
func (p Profile) Over(base Profile) Profile {
	out := base
	if p.System != "" {
		out.System = p.System
	}
	if p.License != "" {
		out.License = p.License
	}
	if len(p.Parameters) > 0 {
		out.Parameters = map[string]any{}
		for k, v := range base.Parameters {
			out.Parameters[k] = v
		}
		for k, v := range p.Parameters {
			out.Parameters[k] = v
		}
	}
	return out
}

// ErrNotFound reports a name the store does not hold.
var ErrNotFound = errors.New("no such model in the store")

// Default opens the store under the glassbox home.
func Default() (*Store, error) {
	return Open(filepath.Join(home.Home(), "models"))
}

// Open returns the store in dir, creating the folder if needed.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, ".partial"), 0o755); err != nil {
		return nil, fmt.Errorf("model store %s: %w", dir, err)
	}
	return &Store{Dir: dir}, nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}$`)

// CheckName reports whether name is usable as a store name: letters,
// digits and . _ : + - (no path separators), at most 128 characters.
func CheckName(name string) error {
	if !nameRE.MatchString(name) || strings.Contains(name, "..") {
		return fmt.Errorf("invalid model name %q (use letters, digits and . _ : + -)", name)
	}
	return nil
}

// NameFor derives a store name from a file path or URL: its base name
// without the .gguf extension.
func NameFor(path string) string {
	base := path
	if i := strings.LastIndexAny(base, "/\\"); i >= 0 {
		base = base[i+1:]
	}
	if i := strings.IndexAny(base, "?#"); i >= 0 {
		base = base[:i]
	}
	base = strings.TrimSuffix(base, ".gguf")
	base = regexp.MustCompile(`[^A-Za-z0-9._:+-]`).ReplaceAllString(base, "-")
	return strings.TrimLeft(base, ".-_")
}

// fileStem is name as a file name: ':' (a tag, llama3.2:1b) becomes '@',
// since Windows refuses ':' in file names. Neither '@' nor a path
// separator may be in a name, so stems name their models one to one.
func fileStem(name string) string { return strings.ReplaceAll(name, ":", "@") }

// nameOf is fileStem's inverse.
func nameOf(stem string) string { return strings.ReplaceAll(stem, "@", ":") }

// manifestPath is where name's manifest is: its stem's, or for a store
// written before stems, the name's own when only that exists.
func (s *Store) manifestPath(name string) string {
	p := filepath.Join(s.Dir, fileStem(name)+".json")
	if legacy := filepath.Join(s.Dir, name+".json"); legacy != p {
		if _, err := os.Stat(p); err != nil {
			if _, err := os.Stat(legacy); err == nil {
				return legacy
			}
		}
	}
	return p
}

func (s *Store) modelPath(name string) string { return filepath.Join(s.Dir, fileStem(name)+".gguf") }

// partPath is where a model's file is written before it is complete.
func (s *Store) partPath(name, suffix string) string {
	return filepath.Join(s.Dir, ".partial", fileStem(name)+".gguf."+suffix)
}

// Get returns the entry for name.
func (s *Store) Get(name string) (Entry, error) {
	if err := CheckName(name); err != nil {
		return Entry{}, err
	}
	b, err := os.ReadFile(s.manifestPath(name))
	if errors.Is(err, os.ErrNotExist) {
		return Entry{}, fmt.Errorf("model %q: %w (see 'glassbox list'; store: %s)", name, ErrNotFound, s.Dir)
	}
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("model %q: corrupt manifest %s: %w", name, s.manifestPath(name), err)
	}
	e.Path = filepath.Join(s.Dir, e.File)
	return e, nil
}

// Find returns the entry of a stored model by its name or by the
// reference it was pulled by (as Ollama's clients name a model they pulled
// from hf.co).
func (s *Store) Find(name string) (Entry, error) {
	e, err := s.Get(name)
	if err == nil || !IsRef(name) && !IsOllamaName(name) {
		return e, err
	}
	all, lerr := s.List()
	if lerr != nil {
		return Entry{}, lerr
	}
	for _, x := range all {
		if x.Ref == name {
			return x, nil
		}
	}
	// An Ollama name without a tag means :latest, as in Ollama.
	if !strings.Contains(name, ":") && IsOllamaName(name) {
		for _, x := range all {
			if x.Name == name+":latest" || x.Ref == name+":latest" {
				return x, nil
			}
		}
	}
	return Entry{}, fmt.Errorf("model %q: %w (see 'glassbox list'; 'glassbox pull %s' downloads it; store: %s)", name, ErrNotFound, name, s.Dir)
}

// Resolve returns the file path of a stored model, by name or by the
// reference it was pulled by.
func (s *Store) Resolve(name string) (string, error) {
	e, err := s.Find(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(e.Path); err != nil {
		return "", fmt.Errorf("model %q: its file is gone: %w", name, err)
	}
	return e.Path, nil
}

// List returns every stored model, sorted by name.
func (s *Store) List() ([]Entry, error) {
	ms, err := filepath.Glob(filepath.Join(s.Dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, m := range ms {
		e, err := s.Get(nameOf(strings.TrimSuffix(filepath.Base(m), ".json")))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Remove deletes a stored model and its manifest.
func (s *Store) Remove(name string) error {
	e, err := s.Get(name)
	if err != nil {
		return err
	}
	if err := os.Remove(s.manifestPath(name)); err != nil {
		return err
	}
	if err := os.Remove(e.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Import adds the GGUF file at src under name (derived from the file name
// when empty): a hard link when src is on the same file system, else a
// copy. The file must parse as GGUF. An existing name is an error.
func (s *Store) Import(src, name string) (Entry, error) {
	if name == "" {
		name = NameFor(src)
	}
	if err := CheckName(name); err != nil {
		return Entry{}, err
	}
	if _, err := os.Stat(s.manifestPath(name)); err == nil {
		return Entry{}, fmt.Errorf("model %q already exists (remove it first with 'glassbox rm %s')", name, name)
	}
	f, err := gguf.Open(src)
	if err != nil {
		return Entry{}, err
	}
	f.Close()
	dst := s.modelPath(name)
	tmp := s.partPath(name, "import")
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			os.Remove(tmp)
			return Entry{}, err
		}
	}
	sum, n, err := atomicfile.SHA256(tmp)
	if err != nil {
		os.Remove(tmp)
		return Entry{}, err
	}
	abs, _ := filepath.Abs(src)
	return s.commit(tmp, dst, Entry{Name: name, Bytes: n, SHA256: sum, Source: abs})
}

// Create stores the model file at path again under name (a hard link
// where the file system allows, else a copy), made from the model from
// with profile p: Ollama's create from an existing model. sum and size are
// the file's SHA-256 and size when known (a store model's manifest has
// them), else they are computed. An existing name is an error.
func (s *Store) Create(name, from, path, sum string, size int64, p Profile) (Entry, error) {
	if err := CheckName(name); err != nil {
		return Entry{}, err
	}
	if _, err := os.Stat(s.manifestPath(name)); err == nil {
		return Entry{}, fmt.Errorf("model %q already exists (remove it first with 'glassbox rm %s')", name, name)
	}
	tmp := s.partPath(name, "create")
	os.Remove(tmp)
	if err := os.Link(path, tmp); err != nil {
		if err := copyFile(path, tmp); err != nil {
			os.Remove(tmp)
			return Entry{}, err
		}
	}
	if sum == "" {
		var err error
		if sum, size, err = atomicfile.SHA256(tmp); err != nil {
			os.Remove(tmp)
			return Entry{}, err
		}
	}
	abs, _ := filepath.Abs(path)
	return s.commit(tmp, s.modelPath(name), Entry{Name: name, Bytes: size, SHA256: sum, Source: abs, From: from, Profile: p})
}

// SetProfile replaces a stored model's profile.
func (s *Store) SetProfile(name string, p Profile) (Entry, error) {
	e, err := s.Get(name)
	if err != nil {
		return Entry{}, err
	}
	e.Profile = p
	return e, s.writeManifest(e)
}

// writeManifest writes e's manifest atomically.
func (s *Store) writeManifest(e Entry) error {
	b, _ := json.MarshalIndent(e, "", "  ")
	path := s.manifestPath(e.Name)
	mt := path + ".tmp"
	if err := os.WriteFile(mt, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(mt, path)
}

// HasProfile reports whether e carries a profile (made by Create, or
// pulled from Ollama's registry with parameters or a system message).
func (e Entry) HasProfile() bool {
	return e.System != "" || len(e.Parameters) > 0 || e.License != "" || e.From != ""
}

// commit renames a complete file into place and writes its manifest.
func (s *Store) commit(tmp, dst string, e Entry) (Entry, error) {
	if err := os.Rename(tmp, dst); err != nil {
		return Entry{}, err
	}
	e.File = filepath.Base(dst)
	e.Path = dst
	e.Added = time.Now().UTC().Truncate(time.Second)
	if err := s.writeManifest(e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return diskError(err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
