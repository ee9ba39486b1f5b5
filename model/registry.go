package model

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/glassbox-ai/glassbox/gguf"
)

// Loader binds the weights of one architecture from an open file.
type Loader func(f *gguf.File) (Model, error)

var (
	regMu   sync.RWMutex
	loaders = map[string]Loader{}
)

// Register makes an architecture loadable under its general.architecture
// name. It panics on a duplicate: that is a programming error.
func Register(arch string, l Loader) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := loaders[arch]; dup {
		panic("model: architecture registered twice: " + arch)
	}
	loaders[arch] = l
}

// Supported lists the registered architectures, sorted.
func Supported() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(loaders))
	for a := range loaders {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// UnsupportedError is the error Load returns for an unknown architecture.
type UnsupportedError struct {
	Arch      string
	Supported []string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("load: architecture %q is not supported (supported: %s)",
		e.Arch, strings.Join(e.Supported, ", "))
}

// Load reads general.architecture and runs the registered loader. The
// returned model aliases f's mapping: keep f open while it is used.
func Load(f *gguf.File) (Model, error) {
	arch, err := f.Meta.String("general.architecture")
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	regMu.RLock()
	l, ok := loaders[arch]
	regMu.RUnlock()
	if !ok {
		return nil, &UnsupportedError{Arch: arch, Supported: Supported()}
	}
	return l(f)
}
