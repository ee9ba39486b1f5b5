package checkpoint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/glassbox-ai/glassbox/tensor"
)

// Stage is the pipeline stage errors of this package belong to.
const Stage = "load"

// Tensor is one named tensor. Data holds its elements little-endian and
// row-major in Shape's order (outermost first, as PyTorch's size()).
type Tensor struct {
	Name  string
	DType tensor.DType
	Shape []int
	Data  []byte
}

// Numel returns the number of elements.
func (t *Tensor) Numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Source is a set of named tensors.
type Source interface {
	// Tensor returns the tensor called name, or false.
	Tensor(name string) (*Tensor, bool)
	// Names lists every tensor name, sorted.
	Names() []string
	// Path names where the tensors come from, for error messages.
	Path() string
}

// Evicter is a Source whose tensor data are mapped from a file: Evict(b)
// tells the operating system the process no longer needs the pages of b,
// a tensor's Data that a loader has copied into its own layout (b stays
// readable). A loader finds it by type assertion; sources without it keep
// their pages.
type Evicter interface {
	Evict(b []byte)
}

// Map is an in-memory Source (tests, synthesized weights).
type Map struct {
	Label   string // what Path returns
	Tensors map[string]*Tensor
}

// Tensor implements Source.
func (m *Map) Tensor(name string) (*Tensor, bool) { t, ok := m.Tensors[name]; return t, ok }

// Names implements Source.
func (m *Map) Names() []string {
	names := make([]string, 0, len(m.Tensors))
	for n := range m.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Path implements Source.
func (m *Map) Path() string { return m.Label }

// Sub is the view of src's tensors whose names start with prefix, with the
// prefix removed: Sub(f, "first_stage_model.") is a checkpoint's VAE as a
// separate VAE file names it.
func Sub(src Source, prefix string) Source { return &sub{src: src, prefix: prefix} }

type sub struct {
	src    Source
	prefix string
}

func (s *sub) Tensor(name string) (*Tensor, bool) { return s.src.Tensor(s.prefix + name) }

func (s *sub) Names() []string {
	var out []string
	for _, n := range s.src.Names() {
		if rest, ok := strings.CutPrefix(n, s.prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

func (s *sub) Path() string { return s.src.Path() + " [" + s.prefix + "*]" }

// Evict implements Evicter when the underlying source does.
func (s *sub) Evict(b []byte) {
	if e, ok := s.src.(Evicter); ok {
		e.Evict(b)
	}
}

// Error is a load-stage error about one tensor of a source.
type Error struct {
	Path   string
	Tensor string // "" when the error is about the whole source
	Err    error
}

func (e *Error) Error() string {
	if e.Tensor == "" {
		return fmt.Sprintf("load: %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("load: %s: tensor %q: %v", e.Path, e.Tensor, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Stage reports the pipeline stage the error belongs to.
func (e *Error) Stage() string { return Stage }
