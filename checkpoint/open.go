package checkpoint

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/pth"
	"github.com/glassbox-ai/glassbox/safetensors"
)

// File is an opened checkpoint file of either format.
type File struct {
	path    string
	Format  string            // "safetensors" or "pth"
	Meta    map[string]string // safetensors __metadata__ (nil for pth)
	tensors map[string]*Tensor
	names   []string
	close   func() error
	evict   func([]byte) // the mapping's page dropping, or nil
}

// Open opens a .safetensors or PyTorch (.ckpt, .pth, .pt) checkpoint,
// telling the two apart by their first bytes, not by the file's name.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	head := make([]byte, 9)
	n, _ := fh.Read(head)
	fh.Close()
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		p, err := pth.Open(path)
		if err != nil {
			return nil, err
		}
		f := &File{path: path, Format: "pth", tensors: map[string]*Tensor{}, close: p.Close}
		for i := range p.Tensors {
			t := &p.Tensors[i]
			f.add(&Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: t.Data})
		}
		f.sortNames()
		return f, nil
	case len(head) == 9 && head[8] == '{':
		s, err := safetensors.Open(path)
		if err != nil {
			return nil, err
		}
		f := &File{path: path, Format: "safetensors", Meta: s.Metadata, tensors: map[string]*Tensor{}, close: s.Close, evict: s.Evict}
		for i := range s.Tensors {
			t := &s.Tensors[i]
			f.add(&Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: t.Data})
		}
		f.sortNames()
		return f, nil
	case bytes.HasPrefix(head, []byte("GGUF")):
		return nil, &Error{Path: path, Err: fmt.Errorf("%w: %s", ErrFamily, describeGGUF(path))}
	}
	return nil, &Error{Path: path, Err: fmt.Errorf("is neither a .safetensors file nor a PyTorch zip checkpoint (first bytes %q)", head)}
}

func (f *File) add(t *Tensor) {
	f.tensors[t.Name] = t
	f.names = append(f.names, t.Name)
}

func (f *File) sortNames() { sort.Strings(f.names) }

// Tensor implements Source.
func (f *File) Tensor(name string) (*Tensor, bool) { t, ok := f.tensors[name]; return t, ok }

// Names implements Source.
func (f *File) Names() []string { return f.names }

// Path implements Source.
func (f *File) Path() string { return f.path }

// Evict implements Evicter: for a mapped .safetensors file the pages of b
// (a tensor's Data) leave the resident set (safetensors.File.Evict); for
// other files it does nothing.
func (f *File) Evict(b []byte) {
	if f.evict != nil && f.close != nil {
		f.evict(b)
	}
}

// Close releases the file's mapping; tensor data must not be used after.
func (f *File) Close() error {
	if f.close == nil {
		return nil
	}
	err := f.close()
	f.close = nil
	return err
}

// describeGGUF says what a GGUF file given as a checkpoint is.
func describeGGUF(path string) string {
	const tail = "glassbox reads SD 1.x checkpoints as .safetensors or .ckpt (GGUF diffusion models are not read yet)"
	g, err := gguf.Open(path)
	if err != nil {
		return "it is a GGUF file that does not open (" + err.Error() + "); " + tail
	}
	defer g.Close()
	arch, _ := g.Meta.Architecture()
	name, _ := g.Meta.String("general.name")
	what := "a GGUF file"
	switch {
	case g.HasTensor("token_embd.weight") && g.HasTensor("output_norm.weight"):
		what = fmt.Sprintf("a GGUF language model (%s)", arch) // run it with glassbox run
	case arch != "":
		what = fmt.Sprintf("a GGUF %s model", arch)
	}
	if name != "" {
		what += fmt.Sprintf(" named %q", name)
	}
	if strings.Contains(what, "language model") {
		return "it is " + what + ", a text model for glassbox run, not an image checkpoint"
	}
	return "it is " + what + "; " + tail
}
